"""The one exit-code table of ``dpaudit``: ``ExitCode`` and ``EXIT_CODE_MEANINGS`` (``--help`` shows it, and the
generated reference page ``docs/reference/exit-codes.md`` is built from it)."""

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


#: what each code means, for ``--help`` and the generated reference (docs/reference/exit-codes.md)
EXIT_CODE_MEANINGS = {
    ExitCode.PASS: "PASS: the claim holds (proved, or consistent with every probe); other commands: done",
    ExitCode.VIOLATION: "VIOLATION: the claim is broken (refuted analytically, or by a rigorous lower bound)",
    ExitCode.BAD_INPUT: "bad input, refused before any work: one line on stderr naming the field (no file written)",
    ExitCode.INCONCLUSIVE: "INCONCLUSIVE: neither proved nor refuted, or a probe failed",
    ExitCode.INTERNAL_ERROR: "internal error (a bug in dpaudit, or the system failed, e.g. a full disk): one line on "
                             "stderr; the traceback in dpaudit-error.log in the output directory (or a temporary file "
                             "the message names), or on stderr with `dpaudit --debug COMMAND ...`",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C or SIGTERM); finished work is saved",
    ExitCode.BROKEN_PIPE: "standard output was closed by its reader (`dpaudit plan ... | head`); nothing more printed",
}

EXIT_CODE_HELP = (
    "exit codes: 0 PASS, 1 VIOLATION, 2 bad input (nothing run), 3 INCONCLUSIVE or a probe failed, "
    "4 internal error (traceback in dpaudit-error.log or with --debug), 130 interrupted"
)


def exit_code_for_status(status: str) -> ExitCode:
    """The exit code of an overall verdict string (PASS, VIOLATION, INCONCLUSIVE)."""
    return {"PASS": ExitCode.PASS, "VIOLATION": ExitCode.VIOLATION}.get(status.upper(), ExitCode.INCONCLUSIVE)
