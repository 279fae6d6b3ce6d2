"""Find an Opacus ``PrivacyEngine`` built inside a Flower ClientApp's per-message code.

Flower's Opacus example builds a new ``PrivacyEngine`` in every training call, so each engine (and its
accountant) sees one round only: the epsilon it reports never composes across rounds. This check reads a
``ClientApp`` without running it: the functions it calls for a message (registered ``@app.train()`` etc.
functions, a legacy ``client_fn`` and its client class's methods), their closures, nested functions and
the helpers of their own module they call, looking for a reference to ``PrivacyEngine``. Static and
duck-typed: a reference that the code never executes is still reported, an engine reached only through
``getattr`` tricks is not.
"""

from __future__ import annotations

import inspect
import types

from attacks.flower_checks.findings import FlowerFinding

ENGINE = "PrivacyEngine"
MAX_DEPTH = 6


def _code_mentions(code: types.CodeType) -> bool:
    if ENGINE in code.co_names or ENGINE in code.co_varnames:
        return True
    return any(isinstance(c, types.CodeType) and _code_mentions(c) for c in code.co_consts)


def _children(obj):
    """Functions and classes ``obj`` reaches: closure cells, its own module's globals it names, methods."""
    if inspect.isclass(obj):
        yield from (v for v in vars(obj).values() if inspect.isfunction(v))
        return
    for cell in obj.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue
    names = set()
    stack = [obj.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    for name in names:
        value = obj.__globals__.get(name)
        same_module = getattr(value, "__module__", None) == obj.__module__
        if (inspect.isfunction(value) or inspect.isclass(value)) and same_module:
            yield value


def builds_engine_per_call(function) -> str | None:
    """Qualified name of the first function reached from ``function`` that names ``PrivacyEngine``."""
    seen, stack = set(), [(function, 0)]
    while stack:
        obj, depth = stack.pop()
        if id(obj) in seen or depth > MAX_DEPTH or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        seen.add(id(obj))
        if inspect.isfunction(obj) and _code_mentions(obj.__code__):
            return obj.__qualname__
        stack.extend((child, depth + 1) for child in _children(obj))
    return None


def message_handlers(client_app) -> list:
    """What a ``flwr.clientapp.ClientApp`` calls per message (registered functions and the legacy path)."""
    handlers = list(getattr(client_app, "_registered_funcs", {}).values())
    if getattr(client_app, "_call", None) is not None:
        handlers.append(client_app._call)
    return handlers


def opacus_findings(client_app) -> list:
    """A ``opacus-engine-per-round`` finding (high) for each per-message handler that builds an engine."""
    found = []
    for handler in message_handlers(client_app):
        where = builds_engine_per_call(_unwrap(handler))
        if where:
            found.append(FlowerFinding(
                "opacus-engine-per-round", "high",
                f"the ClientApp builds an Opacus PrivacyEngine per message (in {where}): each engine's accountant "
                "sees one round, so the epsilon Opacus reports never composes across rounds; account all "
                "rounds of a client together (e.g. dpaudit account with the client's steps over every round)",
                {"function": where}))
    return found


def _unwrap(function):
    """Flower wraps each handler in mods (``make_ffn``); the closure walk reaches the user's function, but
    start from the innermost ``__wrapped__`` where functools.wraps left one."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    return function
