"""``dpaudit report RESULT.json --format html|md [--out FILE]``: re-render a saved audit report.

The report is checked first: against its schema, then for consistency (overall status, exit code,
each target's verdict against the verdict table, curve lengths); a problem is one line naming its path. The exit
code is the saved verdict's: 0 PASS, 1 VIOLATION, 3 INCONCLUSIVE."""

from __future__ import annotations

import sys
from pathlib import Path

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_text
from reports.commands.common import check_output_file
from reports.commands.run_progress import NO_PROGRESS_ACCEPTED, add_progress_argument
from reports.exit_codes import exit_code_for_status
from reports.model import load_report


def render(report: dict, fmt: str) -> str:
    """The report as text in ``fmt`` ('html', 'md' or 'json')."""
    if fmt == "html":
        from reports.render_html import render_html

        return render_html(report)
    if fmt == "md":
        from reports.render_markdown import render_markdown

        return render_markdown(report)
    if fmt == "json":
        from reports.model import dumps_report

        return dumps_report(report)
    raise ConfigurationError("format", f"unknown format {fmt!r}; choose html, md or json")


def run(args) -> int:
    if args.out:
        check_output_file("out", args.out)
    report = load_report(args.result)
    text = render(report, args.format)
    if args.out:
        atomic_write_text(Path(args.out), text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return int(exit_code_for_status(report["status"]))  # the saved verdict's code, as --help lists


def add_parser(subparsers) -> None:
    from reports.exit_codes import EXIT_CODE_HELP

    parser = subparsers.add_parser(
        "report",
        help="re-render a saved audit result (report.json)",
        description=__doc__.split("\n\n")[1],
        epilog=EXIT_CODE_HELP,
    )
    parser.add_argument("result", help="a report.json written by `dpaudit audit`")
    parser.add_argument("--format", choices=["html", "md", "json"], default="md", help="output format")
    add_progress_argument(parser, help=NO_PROGRESS_ACCEPTED)
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="output file (written atomically) instead of stdout")
    parser.set_defaults(func=run)
