"""The one exit-code table of ``dpaudit`` (README and ``--help`` show it).

========  ================  =====================================================================
code      name              meaning
========  ================  =====================================================================
0         PASS              the claim holds (proved, or consistent with every probe)
1         VIOLATION         the claim is broken (refuted analytically or by a rigorous lower bound)
2         BAD_INPUT         the input was rejected before any work (one line on stderr)
3         INCONCLUSIVE      neither proved nor refuted, or a probe failed
4         INTERNAL_ERROR    a bug in dpaudit: one line on stderr, the traceback in a log file
130       INTERRUPTED       Ctrl-C or SIGTERM; finished work is saved
141       BROKEN_PIPE       the reader of standard output went away (``| head``); nothing else printed
========  ================  =====================================================================
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    PASS = 0
    VIOLATION = 1
    BAD_INPUT = 2
    INCONCLUSIVE = 3
    INTERNAL_ERROR = 4
    INTERRUPTED = 130
    BROKEN_PIPE = 141


EXIT_CODE_HELP = (
    "exit codes: 0 PASS, 1 VIOLATION, 2 bad input (nothing run), 3 INCONCLUSIVE or a probe failed, "
    "4 internal error (traceback in dpaudit-error.log or with --debug), 130 interrupted"
)


def exit_code_for_status(status: str) -> ExitCode:
    """The exit code of an overall verdict string (PASS, VIOLATION, INCONCLUSIVE)."""
    return {"PASS": ExitCode.PASS, "VIOLATION": ExitCode.VIOLATION}.get(status.upper(), ExitCode.INCONCLUSIVE)
