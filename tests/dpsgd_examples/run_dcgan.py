"""opacus's ``examples/dcgan.py`` (beside this file) is a script: it trains at import. ``main`` runs it as
``python dcgan.py ARGV`` does (``sys.argv`` as given), so that ``train = "run_dcgan.py:main"`` observes it."""

import runpy
from pathlib import Path


def main():
    runpy.run_path(str(Path(__file__).with_name("dcgan.py")), run_name="__main__")
