"""``dpaudit report RESULT.json --format html|md|json [--out DIR]``: re-render a saved audit report.

The report is checked first: against its schema, then for consistency (overall status, exit code,
each target's verdict against the verdict table, curve lengths); a problem is one line naming its path. The exit
code is the saved verdict's: 0 PASS, 1 VIOLATION, 3 INCONCLUSIVE."""

from __future__ import annotations

import sys

from accounting.errors import ConfigurationError
from reports.commands.common import report_path, write_report
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
    # an empty --out is refused, not read as stdout
    target = None if args.out is None else report_path("out", args.out, f"report.{args.format}")
    report = load_report(args.result)
    text = render(report, args.format)
    if target is not None:
        write_report(target, text)
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
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="output directory: DIR/report.md, .html or .json as --format says, written atomically, "
                        "instead of stdout (made if missing)")
    parser.set_defaults(func=run)
