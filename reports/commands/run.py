"""``dpaudit run ALGORITHM ...``: run a federated algorithm and report utility and privacy.

Each algorithm family registers its own sub-commands from a module listed in ``FAMILY_MODULES``;
each such module exposes ``add_algorithms(subparsers)`` which adds one parser per algorithm and sets
``func`` on it.
"""

from __future__ import annotations

import importlib

FAMILY_MODULES = [
    "reports.commands.run_fts",
    "reports.commands.run_pne",
    "reports.commands.run_duets",
    "reports.commands.run_fedzero",
    "reports.commands.run_fkm",
]


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run a federated algorithm: utility and privacy spent")
    algorithms = parser.add_subparsers(dest="algorithm", metavar="ALGORITHM", parser_class=type(parser))
    for name in FAMILY_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # family not built yet
            raise
        module.add_algorithms(algorithms)
    parser.set_defaults(func=lambda args: parser.error("choose an algorithm"))
