"""Suite-wide ordering: the modules holding ``slow`` tests run first.

pyproject runs the suite with ``--dist loadscope --no-loadscope-reorder``: pytest-xdist hands each
module to one worker, in collection order, as a worker frees up. Starting the modules with the longest
tests (the README commands, the bundled planted-bug audits, about 1-2 minutes each) first lets the other
worker take the many short modules meanwhile, instead of one worker running a long test alone at the end.
Only the order changes: every test still runs, and a module's tests stay together and in their order.
"""

from __future__ import annotations

import pytest


def module_order(items) -> list:
    """``items`` with the modules holding a ``slow`` test first; otherwise the collection order (stable)."""
    slow = {_module(item) for item in items if item.get_closest_marker("slow") is not None}
    return sorted(items, key=lambda item: _module(item) not in slow)


def _module(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    items[:] = module_order(items)
