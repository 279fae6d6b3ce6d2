"""The ``dpaudit`` command line. Each sub-command lives in ``reports/commands/<name>.py`` and exposes
``add_parser(subparsers)`` (which sets ``func``) ; errors a user can cause become one line and exit 2."""

from __future__ import annotations

import argparse
import importlib
import sys

from accounting.errors import ConfigurationError

# Sub-command modules, in the order ``dpaudit --help`` lists them.
COMMAND_MODULES = ["account", "calibrate", "run", "attack", "plan", "audit", "report"]

EXIT_BAD_INPUT = 2


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="dpaudit", description="Differential-privacy audit toolkit.")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a one-line usage error (2)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed, for provenance
    try:
        return int(args.func(args) or 0)
    except ConfigurationError as exc:
        print(f"dpaudit {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"dpaudit {args.command}: interrupted; finished work is saved", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
