"""Observe opacus where a user's own code calls it: every ``PrivacyEngine`` made, every private step, the noise.

``observing_opacus()`` patches opacus (1.6) for the duration of a ``with`` block, in this process only, and
yields an ``OpacusLog`` of what ran inside the block:

- ``PrivacyEngine.make_private`` (``make_private_with_epsilon`` goes through it): the engine (a stable id is
  attached to it, so an engine kept across blocks is recognised), the optimizer it returned, its noise
  multiplier, clip, the sample rate opacus's accountant hook is given (1 / len(data_loader)), Poisson or not,
  the data set's size;
- ``DPOptimizer.pre_step``: each step that really updated the model (not one skipped or accumulated), with the
  optimizer's noise multiplier, clip and sample rate at that step (what opacus's accountant hook reads);
- ``DPOptimizer.add_noise``: the noise actually added, measured as ``grad - summed_grad`` over every
  parameter (sum of squares and count per noise std), before any scaling;
- each accountant's ``get_epsilon`` (``PrivacyEngine.get_epsilon`` or ``engine.accountant.get_epsilon``, opacus's
  RDP, PRV and Gaussian accountants): each epsilon the code asked for (what a training typically reports);
- every optimizer step (torch's global step hook): which parameters it updated (those with a gradient), and
  whether the optimizer is, at that step, the one a ``DPOptimizer`` wraps (private) or any other (a module trained
  outside ``make_private``, a second optimizer, or the one later made private before ``make_private``); another
  optimizer stepping a parameter whose gradient is still the one the private optimizer left (the same tensor,
  unmodified) only post-processes it and is not counted;
- for each such plain step, the data its gradient was computed from (``dpfed.dpsgd.provenance``): the private data
  set (the one behind the loader given to ``make_private``, before or after it), other data (post-processing), or
  not established;
- at the end, each engine's accountant history as opacus holds it (what its epsilon counts).

Nothing the user's code computes is changed. An optimizer subclass that overrides ``pre_step`` or ``add_noise``
without calling opacus's is seen only as far as it calls them.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from dataclasses import dataclass, field

_lock = threading.RLock()
ENGINE_ID = "_dpaudit_engine_id"
OPTIMIZER_RATE = "_dpaudit_sample_rate"
PENDING_NOISE = "_dpaudit_pending_noise"  # (sum of squares, count) of the last add_noise, until pre_step returns


@dataclass
class OpacusLog:
    """What opacus ran inside one ``observing_opacus`` block (JSON-ready lists and dicts)."""

    engines_made: list = field(default_factory=list)
    steps: dict = field(default_factory=dict)  # (engine, z, C, q) -> count
    noise: dict = field(default_factory=dict)  # (engine, expected std) -> [sum of squares, count]
    epsilons: list = field(default_factory=list)
    engines: dict = field(default_factory=dict)  # engine id -> the engine object (until ``to_dict``)
    optimizers: dict = field(default_factory=dict)  # id(optimizer) -> {"private", "steps", "params": {id: tensor}}
    private_optimizers: set = field(default_factory=set)  # ids of the optimizers DPOptimizers wrap
    names: dict = field(default_factory=dict)  # id(parameter) -> its name in a module given to make_private
    private_grads: dict = field(default_factory=dict)  # id(parameter) -> (id, version) of its last private gradient
    loaders: list = field(default_factory=list)  # the data loaders make_private returned (their datasets)
    provenance: object = None  # dpfed.dpsgd.provenance.DataProvenance: the plain steps and their data

    def _name(self, pid, tensor) -> str:
        return self.names.get(pid, f"a parameter of shape {tuple(tensor.shape)} outside make_private")

    def plain_steps(self) -> list[dict]:
        """Steps of optimizers not private at that moment, grouped by optimizer, phase (before or after the first
        ``make_private``) and data (``private``, ``other``, ``not established``), with their parameters' names."""
        if self.provenance is None:
            return []
        groups = {}
        for step in self.provenance.judge():
            key = (step["optimizer"], step["before_private"], step["data"])
            group = groups.setdefault(key, {"optimizer": step["class"], "before_make_private": step["before_private"],
                                            "private_later": step["optimizer"] in self.private_optimizers,
                                            "data": step["data"], "steps": 0, "parameters": {}, "sources": set()})
            group["steps"] += step["count"]
            group["parameters"].update({pid: self._name(pid, t) for pid, t in step["params"].items()})
            group["sources"].update(step["words"])
        return [{**g, "parameters": sorted(set(g["parameters"].values())), "sources": sorted(g["sources"])}
                for g in groups.values()]

    def updated_outside(self) -> list[str]:
        """Parameters a plain (non-private) optimizer step updated from the private data set's records (named where
        make_private's module has them, else by shape): trained with no clipping and no noise."""
        return sorted({p for g in self.plain_steps() if g["data"] == "private" for p in g["parameters"]})

    def to_dict(self) -> dict:
        """JSON-ready record, with each engine's accountant history at this moment."""
        histories = {}
        for key, engine in self.engines.items():
            accountant = getattr(engine, "accountant", None)
            histories[key] = {"mechanism": type(accountant).__name__,
                              "history": [[float(z), float(q), int(n)] for z, q, n in getattr(accountant, "history",
                                                                                              [])]}
        return {"engines_made": list(self.engines_made),
                "optimizers": [{"private": key in self.private_optimizers, "steps": e["steps"],
                                "parameters": len(e["params"])} for key, e in self.optimizers.items()],
                "updated_outside": self.updated_outside(), "plain_steps": self.plain_steps(),
                "steps": [{"engine": e, "noise_multiplier": z, "clip": c, "sample_rate": q, "count": n}
                          for (e, z, c, q), n in self.steps.items()],
                "noise": [{"engine": e, "expected_std": s, "sum_squares": v[0], "count": v[1]}
                          for (e, s), v in self.noise.items()],
                "epsilons": list(self.epsilons), "accountants": histories}


def engine_id(engine) -> str:
    """The engine's stable id (attached on first sight)."""
    key = getattr(engine, ENGINE_ID, None)
    if key is None:
        key = uuid.uuid4().hex[:12]
        setattr(engine, ENGINE_ID, key)
    return key


def _first_of(values, cls):
    return next((v for v in values if isinstance(v, cls)), None)


@contextlib.contextmanager
def observing_opacus(canaries=None):
    """Within the block, opacus's engine, optimizer steps, noise and epsilons are logged (``OpacusLog``);
    ``canaries`` (a ``dpfed.dpsgd.loop_canaries.LoopCanaries``) join the first private optimizer's steps."""
    observer = _Observer(OpacusLog(), canaries)
    with _lock:
        observer.install()
    try:
        yield observer.log
    finally:
        with _lock:
            observer.uninstall()


class _Observer:
    """The patches of one ``observing_opacus`` block: opacus's originals kept, each wrapper logging into ``log``."""

    def __init__(self, log: OpacusLog, canaries):
        from opacus import PrivacyEngine
        from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant
        from opacus.optimizers import DPOptimizer

        self.log, self.canaries = log, canaries
        self.engine_class, self.optimizer_class = PrivacyEngine, DPOptimizer
        self.originals = {"make_private": PrivacyEngine.make_private, "pre_step": DPOptimizer.pre_step,
                          "add_noise": DPOptimizer.add_noise}
        self.accountants = {cls: cls.get_epsilon for cls in (RDPAccountant, PRVAccountant, GaussianAccountant)}
        self.hook = None
        from dpfed.dpsgd.provenance import DataProvenance

        self.provenance = log.provenance = DataProvenance()

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        observer = self
        self.hook = register_optimizer_step_post_hook(self.stepped)
        self.engine_class.make_private = lambda engine, *a, **k: observer.make_private(engine, *a, **k)
        for cls in self.accountants:
            cls.get_epsilon = self._epsilon_of(cls)
        self.optimizer_class.pre_step = lambda optimizer, *a, **k: observer.pre_step(optimizer, *a, **k)
        self.optimizer_class.add_noise = lambda optimizer: observer.add_noise(optimizer)
        self.provenance.install()

    def uninstall(self) -> None:
        self.provenance.uninstall()
        self.hook.remove()
        self.engine_class.make_private = self.originals["make_private"]
        for cls, original in self.accountants.items():
            cls.get_epsilon = original
        self.optimizer_class.pre_step = self.originals["pre_step"]
        self.optimizer_class.add_noise = self.originals["add_noise"]

    def make_private(self, engine, *args, **kwargs):
        import torch

        log = self.log
        out = self.originals["make_private"](engine, *args, **kwargs)
        key = engine_id(engine)
        log.engines[key] = engine
        optimizer = _first_of(out, self.optimizer_class)
        loader = _first_of(out, torch.utils.data.DataLoader)
        rate = 1.0 / len(loader) if loader is not None and len(loader) else None
        if optimizer is not None:
            setattr(optimizer, ENGINE_ID, key)
            setattr(optimizer, OPTIMIZER_RATE, rate)
            log.private_optimizers.add(id(optimizer.original_optimizer))
        module = kwargs.get("module")
        if module is not None:
            log.names.update({id(p): name for name, p in module.named_parameters()})
        if loader is not None:
            log.loaders.append(loader)
        for given in (kwargs.get("data_loader"), loader):
            if given is not None:
                self.provenance.made_private(given)
        dataset = getattr(loader, "dataset", None)
        log.engines_made.append({"engine": key, "noise_multiplier": float(kwargs.get("noise_multiplier", float("nan"))),
                                 "clip": _float(kwargs.get("max_grad_norm")), "sample_rate": rate,
                                 "poisson": bool(kwargs.get("poisson_sampling", True)),
                                 "data_size": len(dataset) if dataset is not None and hasattr(dataset, "__len__")
                                 else None})
        return out

    def _epsilon_of(self, cls):
        log, original = self.log, self.accountants[cls]

        def get_epsilon(accountant, delta, *args, **kwargs):
            value = original(accountant, delta, *args, **kwargs)
            engine = next((e for e in log.engines.values() if getattr(e, "accountant", None) is accountant), None)
            key = engine_id(engine) if engine is not None else "accountant"
            log.epsilons.append({"engine": key, "delta": float(delta), "epsilon": float(value),
                                 "after_steps": sum(log.steps.values())})
            return value

        return get_epsilon

    def pre_step(self, optimizer, *args, **kwargs):
        stepped = self.originals["pre_step"](optimizer, *args, **kwargs)
        if stepped:
            for p in optimizer.params:
                if p.grad is not None:
                    self.log.private_grads[id(p)] = (id(p.grad), p.grad._version)
            rate = getattr(optimizer, OPTIMIZER_RATE, None)
            rate = None if rate is None else rate * int(getattr(optimizer, "accumulated_iterations", 1) or 1)
            key = (getattr(optimizer, ENGINE_ID, "unknown"), float(optimizer.noise_multiplier),
                   _float(optimizer.max_grad_norm), rate)
            with _lock:
                self.log.steps[key] = self.log.steps.get(key, 0) + 1
        self._commit_noise(optimizer)  # against the multiplier opacus's accountant reads at the end of pre_step
        return stepped

    def add_noise(self, optimizer) -> None:
        expected = float(optimizer.noise_multiplier) * _float(optimizer.max_grad_norm)
        canaries = self.canaries
        owner = canaries is not None and getattr(canaries, "optimizer", id(optimizer)) == id(optimizer)
        if owner:
            canaries.optimizer = id(optimizer)
            held = [p for p in optimizer.params if getattr(p, "summed_grad", None) is not None]
            clip, rate = _float(optimizer.max_grad_norm), float(getattr(optimizer, OPTIMIZER_RATE, None) or 1.0)
            clean = canaries.before_noise(held, clip, rate)
        self.originals["add_noise"](optimizer)
        if owner:
            canaries.after_noise(held, clean, expected, clip, rate)
        self._commit_noise(optimizer)  # an earlier add_noise that no pre_step followed (called directly)
        optimizer.__dict__[PENDING_NOISE] = self._measure_noise(optimizer)

    @staticmethod
    def _measure_noise(optimizer) -> tuple[float, int]:
        """The noise just added: grad minus the clipped sum (before any scaling), summed over every parameter."""
        import torch

        total, count = 0.0, 0
        for p in optimizer.params:
            if getattr(p, "summed_grad", None) is None or p.grad is None:
                continue
            difference = (p.grad.detach().reshape(-1).double() - p.summed_grad.detach().reshape(-1).double())
            total += float(torch.sum(difference ** 2))
            count += difference.numel()
        return total, count

    def _commit_noise(self, optimizer) -> None:
        """Log the noise measured by the last ``add_noise`` against z C as they stand now. Committed when pre_step
        returns, so z is the one opacus's accountant reads at that step (its step hook runs last in pre_step), not
        one the user's code lowered only while the noise was drawn."""
        pending = optimizer.__dict__.pop(PENDING_NOISE, None)
        if pending is None:
            return
        expected = float(optimizer.noise_multiplier) * _float(optimizer.max_grad_norm)
        key = (getattr(optimizer, ENGINE_ID, "unknown"), expected)
        with _lock:
            before = self.log.noise.get(key, [0.0, 0])
            self.log.noise[key] = [before[0] + pending[0], before[1] + pending[1]]

    def stepped(self, optimizer, args, kwargs) -> None:
        """torch's global optimizer step hook: the parameters each optimizer updated."""
        log = self.log
        entry = log.optimizers.setdefault(id(optimizer), {"steps": 0, "params": {}})
        entry["steps"] += 1
        private = id(optimizer) in log.private_optimizers
        updated = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                # another optimizer applying the private (noisy) gradient again is post-processing, not a leak
                if p.grad is not None and (private or log.private_grads.get(id(p)) != (id(p.grad), p.grad._version)):
                    entry["params"][id(p)] = updated[id(p)] = p
        if not private and updated:
            self.provenance.plain_step(optimizer, updated)


def _float(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):  # per-layer clipping: the flat norm bound they add up to
        return float(sum(float(v) ** 2 for v in value) ** 0.5)
    return float(value)
