"""The one vocabulary of every ``dpaudit`` command: verdict words, the label of a bound that is not rigorous, and
the old spellings of options and keys that are still read (each warns once, in one line on stderr).

Verdicts: PASS, VIOLATION, INCONCLUSIVE (exit codes 0, 1, 3; ``reports.exit_codes``) in ``audit``, ``attack``,
``estimate``, ``flower``, ``opacus-check`` and ``report``. Until schema 2.2 the empirical (probe) verdicts were
CONSISTENT and UNTESTABLE; a saved report in those words is read with them translated (``OLD_VERDICT_WORDS``).

Options (``tests/test_cli_options.py`` walks every parser for these): ``--claim-epsilon`` is the claimed epsilon in
every command, whether tested (attack, estimate, plan, flower, opacus-check) or the one the noise is calibrated to
(calibrate, run dp-fed-pne, run dp-fkm); its key is ``claim_epsilon`` (attack's TOML, an opacus set-up dict), and an
audit configuration's ``[target.claim] epsilon`` is the same figure as a field of the claim. ``--workers`` counts
worker processes (a run's federated clients are ``--clients``), ``--executor`` defaults to auto, ``--false-alarm``
is the noise test's level, ``--assumptions`` names Flower's accounting assumptions, ``--unit`` is a choice, every
command takes ``--no-progress``, ``--out DIR`` is always an output directory (the commands that wrote one file,
``flower``, ``opacus-check`` and ``report``, write ``DIR/report.json`` or ``DIR/report.FORMAT`` in it), and no
option may be abbreviated. Old spellings are hidden aliases that warn once
(``reports.commands.common.add_old_spelling``); the old form ``--out FILE.json`` (``.md``, ``.html``) of those three
still writes that file and warns once (``reports.commands.common.report_path``).
"""

from __future__ import annotations

import sys

PASS, VIOLATION, INCONCLUSIVE = "PASS", "VIOLATION", "INCONCLUSIVE"
VERDICTS = (PASS, VIOLATION, INCONCLUSIVE)
#: the probes' words before schema 2.2, read in old reports as the words of today
OLD_VERDICT_WORDS = {"CONSISTENT": PASS, "UNTESTABLE": INCONCLUSIVE}

#: the one label, in every command and report, of a bound that is not rigorous (model-based or Bayesian: valid
#: only under its model's assumptions, so it never decides a verdict)
NOT_RIGOROUS = "model-based (not rigorous)"


def bound_kind(rigorous: bool) -> str:
    """"rigorous", or ``NOT_RIGOROUS``: how every command labels a lower bound."""
    return "rigorous" if rigorous else NOT_RIGOROUS


_warned: set[str] = set()
_pending: list[tuple[str, str]] = []  # (key, warning) pairs, shown once the command has run


def _warn_once(key: str, warning: str) -> None:
    """``dpaudit: warning: WARNING`` on stderr, once per process and ``key``."""
    if key in _warned:
        return
    _warned.add(key)
    print(f"dpaudit: warning: {warning}", file=sys.stderr)


def warn_old_spelling(old: str, new: str) -> None:
    """One line on stderr, once per process and spelling: ``old`` still works but is now spelled ``new``."""
    _warn_once(old, f"{old} is deprecated; use {new} (it works the same)")


def defer_old_spelling(old: str, new: str) -> None:
    """``warn_old_spelling`` once the command line has parsed (``flush_old_spellings``): a usage error stays the
    only line on stderr."""
    _pending.append((old, f"{old} is deprecated; use {new} (it works the same)"))


def defer_old_form(form: str, warning: str) -> None:
    """The sibling of ``defer_old_spelling`` for an old form of a value (``--out FILE``, where ``--out`` names a
    directory now): ``warning``, once per process and ``form``, shown once the command has run."""
    _pending.append((form, warning))


def flush_old_spellings(show: bool = True) -> None:
    """Print (or, ``show`` false, drop) the warnings ``defer_old_spelling`` and ``defer_old_form`` collected."""
    pending = list(_pending)
    _pending.clear()
    for key, warning in pending if show else ():
        _warn_once(key, warning)
