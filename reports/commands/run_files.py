"""The files a `dpaudit run` command writes: one name per variant, and no silent overwrite.

Every variant that changes what is computed has its own file name (``pne_dp-fed-pne_garland_classic`` and
``..._analytic``, ``fedzero_dp-fedzero_l2_worker-scalar`` and ``..._record-scalar``, ``fkm_dp-fkm_linear_event``
and ``..._dataset``, ``duets_dp-duets_<objective>_agent`` and ``..._reward``). Before any work the command
checks its files: if one exists (an earlier run of the same variant, perhaps with other options) it stops
with exit 2 and writes nothing, unless ``--force`` says to overwrite.
"""

from __future__ import annotations

from pathlib import Path

from accounting.errors import ConfigurationError

FORCE_HELP = (
    "overwrite the result files of an earlier run of the same variant in --out (without --force an "
    "existing file is refused with exit 2 before any work; each variant has its own file names)"
)


def add_force_argument(parser) -> None:
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def variant_stem(*parts) -> str:
    """``fkm_dp-fkm_linear_event`` from its parts; empty parts (a variant that does not apply) are left out."""
    return "_".join(str(p) for p in parts if p not in (None, ""))


def claim_outputs(out, names: list[str], force: bool) -> list[Path]:
    """The paths of ``names`` in ``out``, after checking (before any work) that ``out`` can be written
    and that none of them exists unless ``force``: ConfigurationError (exit 2) otherwise."""
    from reports.commands.common import check_output_dir

    out = check_output_dir("out", out)
    paths = [out / name for name in names]
    existing = [p for p in paths if p.exists() or p.is_symlink()]
    if existing and not force:
        raise ConfigurationError(
            "out",
            f"{existing[0]} exists (an earlier run of this variant); pass --force to overwrite it, or choose "
            "another --out",
        )
    return paths


def stderr_cell(value: float, runs: int, digits: int = 2) -> str:
    """A standard error for a table: n/a with one run (a standard error needs at least two)."""
    from reports.commands.common import format_number

    return "n/a" if runs < 2 else format_number(value, digits)
