"""Read the mods a ClientApp runs around its training function, in the order Flower applies them.

Flower (1.42, ``flwr.client.mod.utils.make_ffn``) wraps the mods around the function from the last to the first:
``mods[0]`` is the outermost, so it sees the request first and the reply last. A mod listed *before* a clipping
mod therefore runs on the reply *after* the clip. App-wide mods (``ClientApp(mods=[...])``) come before a
function's own (``@app.train(mods=[...])``). A legacy ``ClientApp(client_fn=..., mods=[...])`` has one chain
for every message.

The chains are read from the wrappers ``make_ffn`` builds (closures holding ``_mod`` and ``_ffn``), as they are
in flwr 1.42; a ClientApp built otherwise reads as ``None`` (not known).
"""

from __future__ import annotations

from dataclasses import dataclass

CLIPPING_MODS = ("fixedclipping_mod", "adaptiveclipping_mod")
# Flower's mods that leave the update the server aggregates as the clip left it: the size logs, and secure
# aggregation (it masks each reply, the masks cancel in the sum the server unmasks)
KEEPING_MODS = ("message_size_mod", "arrays_size_mod", "parameters_size_mod", "secaggplus_mod", "secagg_mod")


@dataclass(frozen=True)
class ModInfo:
    """One mod of a chain: its name, whether it is Flower's own (defined in ``flwr``), and the names its code
    refers to (so that a mod of the app's own that calls Flower's clipping mod can be told apart)."""

    name: str
    flower: bool
    refers_to: tuple[str, ...] = ()

    @property
    def clips(self) -> bool:
        return self.flower and self.name in CLIPPING_MODS

    @property
    def keeps_update(self) -> bool:
        return self.flower and self.name in KEEPING_MODS

    def to_dict(self) -> dict:
        return {"name": self.name, "flower": self.flower}


def mod_info(mod) -> ModInfo:
    """``ModInfo`` of a mod (a function, or an object with ``__call__`` such as ``LocalDpMod``)."""
    target = mod if hasattr(mod, "__code__") else type(mod)
    name = getattr(target, "__name__", type(mod).__name__)
    module = getattr(target, "__module__", "") or ""
    call = vars(type(mod)).get("__call__")  # a mod object's method (LocalDpMod)
    code = getattr(mod, "__code__", None) or getattr(call, "__code__", None)
    names = tuple(code.co_names) + tuple(code.co_freevars) if code is not None else ()
    return ModInfo(name, module == "flwr" or module.startswith("flwr."), names)


def _chain(call) -> list | None:
    """The mods ``make_ffn`` wrapped around a function, outermost first (``[]``: none; None: not readable)."""
    mods, seen = [], 0
    while call is not None and seen < 64:
        code, cells = getattr(call, "__code__", None), getattr(call, "__closure__", None)
        if code is None:
            return None
        free = dict(zip(code.co_freevars, cells or (), strict=True))
        if "_mod" not in free or "_ffn" not in free:
            return mods  # the function itself: the end of the chain
        mods.append(free["_mod"].cell_contents)
        call, seen = free["_ffn"].cell_contents, seen + 1
    return None


def train_chains(client_app) -> dict[str, list[ModInfo]] | None:
    """``{function: [ModInfo, outermost first]}`` for each training function of ``client_app`` (a legacy
    ``client_fn`` app: ``{"client_fn": chain}``); None when the ClientApp cannot be read this way."""
    legacy = getattr(client_app, "_call", None)
    if legacy is not None:
        chain = _chain(legacy)
        return None if chain is None else {"client_fn": [mod_info(m) for m in chain]}
    registered = getattr(client_app, "_registered_funcs", None)
    if not isinstance(registered, dict):
        return None
    out = {}
    for name, call in registered.items():
        if not str(name).startswith("train"):
            continue
        chain = _chain(call)
        if chain is None:
            return None
        out[str(name)] = [mod_info(m) for m in chain]
    return out or None
