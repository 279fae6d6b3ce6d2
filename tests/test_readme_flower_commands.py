"""The README's Flower commands, run like every other README command (``tests/test_readme_commands.py``)
but from their own module, so that pytest-xdist can run them beside the others on the second worker."""

from __future__ import annotations

import pytest

from tests.test_readme_commands import run_readme_jobs


@pytest.mark.slow
def test_every_readme_flower_command_runs(tmp_path):
    run_readme_jobs(tmp_path, flower=True)
