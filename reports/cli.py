"""The ``dpaudit`` command line. Each sub-command lives in ``reports/commands/<name>.py`` and exposes
``add_parser(subparsers)`` (which sets ``func``).

Every outcome maps to one exit code (``reports/exit_codes.py``): errors a user can cause are one line
and exit 2; anything else is a bug, reported in one line with exit 4 while its traceback goes to a log
file (or to stderr with ``--debug``), so a crash can never read as a verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from accounting.errors import ConfigurationError
from reports.exit_codes import EXIT_CODE_HELP, ExitCode

# Sub-command modules, in the order ``dpaudit --help`` lists them.
COMMAND_MODULES = ["account", "calibrate", "run", "attack", "estimate", "plan", "audit", "report", "flower",
                   "opacus_check"]

EXIT_BAD_INPUT = int(ExitCode.BAD_INPUT)
LOG_NAME = "dpaudit-error.log"


class _GivenOnce:
    """Mixin for argparse's store actions: an option given twice is a usage error, not "the last one wins"."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(parser, "options_seen", None)
        if seen is not None:
            given = option_string or self.dest
            if self.dest in seen:
                earlier = "" if seen[self.dest] == given else f" (as {seen[self.dest]} too)"
                parser.error(f"{given} given more than once{earlier}; give it once")
            seen[self.dest] = given
        super().__call__(parser, namespace, values, option_string)


class _StoreOnce(_GivenOnce, argparse._StoreAction):
    pass


class _StoreConstOnce(_GivenOnce, argparse._StoreConstAction):
    pass


class _StoreTrueOnce(_GivenOnce, argparse._StoreTrueAction):
    pass


class _StoreFalseOnce(_GivenOnce, argparse._StoreFalseAction):
    pass


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2, and which refuses an option
    given twice (argparse would silently keep the last value). Repeatable options use ``action="append"``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # `--claim 1` is not `--claim-epsilon 1`: every option in full
        super().__init__(*args, **kwargs)
        for name, action in ((None, _StoreOnce), ("store", _StoreOnce), ("store_const", _StoreConstOnce),
                             ("store_true", _StoreTrueOnce), ("store_false", _StoreFalseOnce)):
            self.register("action", name, action)
        self.options_seen = None

    def parse_known_args(self, args=None, namespace=None):
        self.options_seen = {}
        try:
            return super().parse_known_args(args, namespace)
        finally:
            self.options_seen = None

    def error(self, message):
        if message.startswith("one of the arguments ") and " " not in message[21:].removesuffix(" is required"):
            # a required option with a hidden second spelling (a mutually exclusive group of one shown name)
            message = f"the following arguments are required: {message[21:].removesuffix(' is required')}"
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpfed-audit")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown (not installed)"


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    """The sub-commands as typed (``opacus-check``, not its module's name), in ``--help``'s order."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [name for sub in subs for name in sub.choices]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="dpaudit",
        description="Differential-privacy audit toolkit.",
        epilog=EXIT_CODE_HELP,
    )
    parser.add_argument("--debug", action="store_true", help="on an internal error, print the traceback")
    parser.add_argument("--version", action="version", version=f"dpaudit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"reports.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"reports.commands.{name}":
                continue  # command not built yet
            raise
        module.add_parser(sub)
    return parser


def _log_path(args) -> Path:
    """Where a traceback goes: the command's output directory if it has one that exists, else a temp file."""
    out = getattr(args, "out", None)
    if out and args.command in ("run", "audit") and Path(out).is_dir():
        return Path(out) / LOG_NAME
    return Path(tempfile.gettempdir()) / f"dpaudit-error-{os.getpid()}.log"


def report_internal_error(args, exc: BaseException) -> int:
    """One line on stderr for an unexpected error; the traceback to a log file, or stderr with --debug."""
    detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    text = "".join(traceback.format_exception(exc))
    kind = "error" if isinstance(exc, OSError) else "internal error (a bug in dpaudit)"
    if getattr(args, "debug", False):
        sys.stderr.write(text)
        print(f"dpaudit {args.command}: {kind}: {detail}", file=sys.stderr)
        return int(ExitCode.INTERNAL_ERROR)
    try:
        path = _log_path(args)
        path.write_text(text, encoding="utf-8")
        where = f"traceback in {path}"
    except OSError:
        where = "rerun with --debug for the traceback"
    print(f"dpaudit {args.command}: {kind}: {detail} ({where})", file=sys.stderr)
    return int(ExitCode.INTERNAL_ERROR)


def _terminated(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (``timeout``, a batch scheduler) stops a run as Ctrl-C does


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While a command runs, SIGTERM raises KeyboardInterrupt: worker processes are shut down, temporary
    files removed and the exit code is 130, as for Ctrl-C (killed outright, the workers of ``--executor
    processes`` were left running without a parent)."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: leave the handler alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@functools.cache
def _shared_parser() -> argparse.ArgumentParser:
    """``build_parser()``, built once per process (it takes tens of milliseconds; a caller running many
    commands in one process, as the tests do, reuses it: parsing does not change a parser)."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    from accounting.vocabulary import flush_old_spellings

    parser = _shared_parser()
    flush_old_spellings(show=False)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a one-line usage error (2)
        flush_old_spellings(show=False)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        print(f"dpaudit: error: choose a command ({', '.join(command_names(parser))}; see dpaudit --help)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed, for provenance
    code = _run(args)
    # an old spelling: one warning line each once the command has run (after a refusal the error stays the one line)
    flush_old_spellings(show=code != EXIT_BAD_INPUT)
    return code


def _run(args) -> int:
    """The command ``args`` names; every outcome an exit code (module docstring)."""
    try:
        with _sigterm_as_interrupt():
            return int(args.func(args) or 0)
    except ConfigurationError as exc:
        print(f"dpaudit {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"dpaudit {args.command}: interrupted; finished work is saved", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # the reader of stdout went away (``dpaudit plan ... | head``): nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.BROKEN_PIPE)  # the shell's code for a process ended by SIGPIPE
    except SystemExit as exc:
        if exc.code == EXIT_BAD_INPUT:  # a usage error raised by a sub-command's parser
            return EXIT_BAD_INPUT
        error = RuntimeError(f"unexpected exit request (status {exc.code!r})")
        error.__cause__ = exc  # the log shows where it came from
        return report_internal_error(args, error)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never exit 1 (VIOLATION) on a bug
        return report_internal_error(args, exc)


if __name__ == "__main__":
    sys.exit(main())
