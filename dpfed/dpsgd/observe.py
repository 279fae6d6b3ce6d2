"""Observe opacus where a user's own code calls it: every ``PrivacyEngine`` made, every private step, the noise.

``observing_opacus()`` patches opacus (1.6) for the duration of a ``with`` block, in this process only, and
yields an ``OpacusLog`` of what ran inside the block:

- ``PrivacyEngine.make_private`` (``make_private_with_epsilon`` goes through it): the engine (a stable id is
  attached to it, so an engine kept across blocks is recognised), the optimizer it returned, its noise
  multiplier, clip, the sample rate opacus's accountant hook is given (1 / len(data_loader)), Poisson or not,
  the data set's size; made by ``make_private_with_epsilon``, the ``target_epsilon``, ``target_delta`` and
  ``epochs`` the user asked for too (their claim, when they make none elsewhere);
- ``pre_step`` of every private optimizer class (``private_optimizer_classes``: ``DPOptimizer`` and each subclass
  opacus defines, dispatches on or that is imported, wherever one overrides it: ghost clipping, adaptive
  clipping, per-layer, distributed, FSDP): each step that really updated the model (not one skipped or
  accumulated), with the optimizer's noise multiplier at the step's end and clip at its start (the one that
  bounded the sum), and sample rate (what opacus's accountant hook reads), how many backward passes (Poisson
  batches, with ``allow_grad_accumulation``) it summed, and whether any of its parameters changed between those
  passes (their version when each pass's per-sample gradients were stored); a subclass's call to its parent's
  method is the same step, counted once;
- opacus's Poisson batch samplers: how many batches they drew (a step's backward passes outnumbering them means a
  batch entered more than one pass);
- ``add_noise`` of the same classes: the noise actually added, measured as noisy minus clipped sum (``grad -
  summed_grad``; FSDP's clipped sums in its ``grad_state``) over every parameter (sum of squares and count per
  noise std), before any scaling; a distributed optimizer's rank other than 0 adds none by design and is not
  measured;
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

Nothing the user's code computes is changed. A subclass defined after the block starts, overriding ``pre_step``
or ``add_noise`` without calling its parent's, is seen only as far as it calls them.
"""

from __future__ import annotations

import contextlib
import threading
import uuid

from dpfed.dpsgd.opacus_internals import (
    accumulated_passes,
    as_scalar,
    clipped_sum,
    poisson_samplers,
    private_optimizer_classes,
    promoter_modules,
)
from dpfed.dpsgd.opacus_log import OpacusLog

_lock = threading.RLock()
_INHERITED = object()  # an attribute a patch set where the owner only inherited it
_ACTIVE: list = []  # the installed observers, in install order (their patches stack: each wraps the one below)
ENGINE_ID = "_dpaudit_engine_id"
OPTIMIZER_RATE = "_dpaudit_sample_rate"
PENDING_NOISE = "_dpaudit_pending_noise"  # (sum of squares, count) of the last add_noise, until pre_step returns
STEP_CLIP = "_dpaudit_step_clip"  # the clip as the outermost pre_step began (the bound of the sum it noises)
AFTER_SKIP = "_dpaudit_after_skip"  # the step's sum spans earlier skipped (virtual) steps
OBSERVED_METHODS = ("pre_step", "add_noise")  # patched on every private optimizer class that defines its own


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
        _ACTIVE.append(observer)
    try:
        observer.provenance.enter_mode()
        try:
            yield observer.log
        finally:
            observer.provenance.exit_mode()
    finally:
        with _lock:
            observer.active = False
            _unwind()


def _unwind() -> None:
    """Take out the patches of every ended observer at the top of the stack. An observer that ends while a later one
    is still installed (blocks left out of order, as by two threads) stays patched but passes every call through
    (``active`` false) until the ones above it end, so no patch outlives its block and none is restored out of
    order."""
    while _ACTIVE and not _ACTIVE[-1].active:
        _ACTIVE.pop().uninstall()


class _Observer:
    """The patches of one ``observing_opacus`` block: opacus's originals kept, each wrapper logging into ``log``."""

    def __init__(self, log: OpacusLog, canaries):
        from opacus import PrivacyEngine
        from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant
        from opacus.optimizers import DPOptimizer

        self.log, self.canaries = log, canaries
        self.engine_class, self.optimizer_class = PrivacyEngine, DPOptimizer
        self.accountant_classes = (RDPAccountant, PRVAccountant, GaussianAccountant)
        self.hook, self.active, self.undo = None, True, []
        self.thread = threading.get_ident()  # the block's thread: what runs in other threads is not its training
        from dpfed.dpsgd.provenance import DataProvenance

        self.provenance = log.provenance = DataProvenance()

    def _patch(self, owner, name: str, value) -> None:
        """Set ``owner.name`` to ``value``, remembering what it was (``uninstall`` restores it, or takes the
        attribute out where it was inherited)."""
        self.undo.append((owner, name, vars(owner).get(name, _INHERITED)))
        setattr(owner, name, value)

    def install(self) -> None:
        """Every patch, or none: a patch that fails takes out those made before it."""
        try:
            self._install()
        except BaseException:
            self.uninstall()
            raise

    def _capture(self) -> None:
        """What each patch wraps, as it stands when this observer installs (an earlier observer's wrapper, if one
        is installed)."""
        engine = self.engine_class
        self.originals = {"make_private": engine.make_private,
                          "make_private_with_epsilon": engine.make_private_with_epsilon}
        self.methods = {(cls, name): cls.__dict__[name] for cls in private_optimizer_classes()
                        for name in OBSERVED_METHODS if name in cls.__dict__}
        self.accountants = {cls: cls.get_epsilon for cls in self.accountant_classes}
        self.promoters = promoter_modules()
        self.samplers = poisson_samplers()
        self.promote = self.promoters[0].promote_current_grad_sample if self.promoters else None

    def _install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._capture()
        observer = self
        self.hook = register_optimizer_step_post_hook(self.stepped)
        self._patch(self.engine_class, "make_private", lambda engine, *a, **k: observer.make_private(engine, *a, **k))
        self._patch(self.engine_class, "make_private_with_epsilon",
                    lambda engine, *a, **k: observer.make_private_with_epsilon(engine, *a, **k))
        for cls in self.accountants:
            self._patch(cls, "get_epsilon", self._epsilon_of(cls))
        for (cls, name), original in self.methods.items():
            self._patch(cls, name, self._observed_method(name, original))
        for module in self.promoters:
            self._patch(module, "promote_current_grad_sample", self.promoted)
        for cls in self.samplers:
            self._patch(cls, "__iter__", self._drawing(cls))
        self.undo.append((self.provenance, None, None))  # undone as far as it got, if its install fails
        self.provenance.install()

    @property
    def sees(self) -> bool:
        """Whether a call now belongs to this observer: its block is open and the call runs in the block's thread
        (patches are process-wide; two threads' blocks, as a legacy Flower server's client threads, each see their
        own)."""
        return self.active and threading.get_ident() == self.thread

    def uninstall(self) -> None:
        """Restore what ``install`` patched, last patch first; every patch is restored even if one fails."""
        failure = None
        while self.undo:
            owner, name, value = self.undo.pop()
            try:
                if name is None:
                    owner.uninstall()
                elif value is _INHERITED:
                    delattr(owner, name)
                else:
                    setattr(owner, name, value)
            except Exception as error:  # noqa: BLE001 -- restore the rest, then say so
                failure = failure or error
        if self.hook is not None:
            self.hook.remove()
            self.hook = None
        if failure is not None:
            raise failure

    def _observed_method(self, name: str, original):
        """``original`` (one class's own ``pre_step`` or ``add_noise``) logged by ``self.<name>`` when it is the
        outermost call of that method on the optimizer; a subclass's ``super().<name>()`` inside it runs as is."""
        observer, handler, depth = self, getattr(self, name), f"_dpaudit_in_{name}"

        def method(optimizer, *args, **kwargs):
            if optimizer.__dict__.get(depth) or not observer.sees:
                return original(optimizer, *args, **kwargs)
            optimizer.__dict__[depth] = True
            try:
                return handler(optimizer, lambda: original(optimizer, *args, **kwargs))
            finally:
                optimizer.__dict__.pop(depth, None)

        method.__wrapped__ = original
        return method

    def make_private(self, engine, *args, **kwargs):
        import torch

        log = self.log
        out = self.originals["make_private"](engine, *args, **kwargs)
        if not self.sees:
            return out
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
                                 "clip": as_scalar(kwargs.get("max_grad_norm")), "sample_rate": rate,
                                 "poisson": bool(kwargs.get("poisson_sampling", True)),
                                 "data_size": len(dataset) if dataset is not None and hasattr(dataset, "__len__")
                                 else None})
        return out

    def make_private_with_epsilon(self, engine, *args, **kwargs):
        """opacus's ``make_private_with_epsilon`` (it calls ``make_private``, logged there); the engine it made is
        logged with the user's ``target_epsilon``, ``target_delta`` and ``epochs``."""
        made = len(self.log.engines_made)
        out = self.originals["make_private_with_epsilon"](engine, *args, **kwargs)
        if not self.sees:
            return out
        target = {"target_epsilon": as_scalar(kwargs.get("target_epsilon")),
                  "target_delta": as_scalar(kwargs.get("target_delta")),
                  "epochs": None if kwargs.get("epochs") is None else int(kwargs["epochs"])}
        for entry in self.log.engines_made[made:]:
            entry.update(target)
        return out

    def _epsilon_of(self, cls):
        observer, log, original = self, self.log, self.accountants[cls]

        def get_epsilon(accountant, delta, *args, **kwargs):
            value = original(accountant, delta, *args, **kwargs)
            if not observer.sees:
                return value
            engine = next((e for e in log.engines.values() if getattr(e, "accountant", None) is accountant), None)
            key = engine_id(engine) if engine is not None else "accountant"
            log.epsilons.append({"engine": key, "delta": float(delta), "epsilon": float(value),
                                 "after_steps": sum(log.steps.values())})
            return value

        return get_epsilon

    def _drawing(self, cls):
        observer, log, original = self, self.log, self.samplers[cls]

        def __iter__(sampler):
            if not observer.sees:
                yield from original(sampler)
                return
            log.batches_drawn = log.batches_drawn or 0
            for batch in original(sampler):
                log.batches_drawn += 1
                yield batch

        return __iter__

    def promoted(self, p) -> None:
        """opacus stores a backward pass's per-sample gradients of ``p``: its version then (it changes when the
        parameter is updated in place)."""
        if p.requires_grad and self.sees:
            self.log.passes.setdefault(id(p), []).append(p._version)
        self.promote(p)

    def _moved(self, optimizer) -> bool:
        """Whether a parameter of ``optimizer`` changed between the backward passes its step sums (then cleared)."""
        versions = [self.log.passes.pop(id(p), []) for p in optimizer.params]
        return any(len(set(v)) > 1 for v in versions)

    def pre_step(self, optimizer, call):
        batches = accumulated_passes(optimizer)  # read before opacus clears anything
        optimizer.__dict__[STEP_CLIP] = as_scalar(optimizer.max_grad_norm)  # adaptive clipping updates it after noise
        optimizer.__dict__[AFTER_SKIP] = bool(getattr(optimizer, "_is_last_step_skipped", False))
        stepped = call()
        if stepped:
            for p in optimizer.params:
                if p.grad is not None:
                    self.log.private_grads[id(p)] = (id(p.grad), p.grad._version)
            rate = getattr(optimizer, OPTIMIZER_RATE, None)
            rate = None if rate is None else rate * batches  # as opacus's accountant hook multiplies it
            key = (getattr(optimizer, ENGINE_ID, "unknown"), float(optimizer.noise_multiplier),
                   optimizer.__dict__[STEP_CLIP], rate, batches, self._moved(optimizer))
            with _lock:
                self.log.steps[key] = self.log.steps.get(key, 0) + 1
        self._commit_noise(optimizer)  # against the multiplier opacus's accountant reads at the end of pre_step
        optimizer.__dict__.pop(STEP_CLIP, None)
        optimizer.__dict__.pop(AFTER_SKIP, None)
        return stepped

    def add_noise(self, optimizer, call) -> None:
        expected = float(optimizer.noise_multiplier) * as_scalar(optimizer.max_grad_norm)
        self._check_clipping(optimizer)  # before any canary joins the sum
        canaries = self.canaries
        owner = canaries is not None and getattr(canaries, "optimizer", id(optimizer)) == id(optimizer)
        if owner:
            canaries.optimizer = id(optimizer)
            held = [p for p in optimizer.params if getattr(p, "summed_grad", None) is not None]
            clip, rate = as_scalar(optimizer.max_grad_norm), float(getattr(optimizer, OPTIMIZER_RATE, None) or 1.0)
            clean = canaries.before_noise(held, clip, rate)
        call()
        if owner:
            canaries.after_noise(held, clean, expected, clip, rate)
        self._commit_noise(optimizer)  # an earlier add_noise that no pre_step followed (called directly)
        optimizer.__dict__[PENDING_NOISE] = self._measure_noise(optimizer)

    def _check_clipping(self, optimizer) -> None:
        """Each record's share of the clipped sum against the step's clip (``dpfed.dpsgd.clip_check``), counted."""
        from dpfed.dpsgd.clip_check import check_clipping

        status, ratio = check_clipping(optimizer, optimizer.__dict__.get(STEP_CLIP),
                                       bool(optimizer.__dict__.get(AFTER_SKIP)))
        with _lock:
            clipping = self.log.clipping
            clipping[status] += 1
            if ratio is not None and status == "exceeded":
                clipping["worst_ratio"] = max(ratio, clipping["worst_ratio"] or 0.0)

    @staticmethod
    def _measure_noise(optimizer) -> tuple[float, int]:
        """The noise just added: grad minus the clipped sum (before any scaling), summed over every parameter, in
        units of the sum's noise (FSDP's mean reduction divides each rank's noise by the world size)."""
        import torch
        from opacus.optimizers import (
            DistributedDPOptimizer,
            DistributedDPOptimizerFastGradientClipping,
            FSDPOptimizerFastGradientClipping,
        )

        if (isinstance(optimizer, (DistributedDPOptimizer, DistributedDPOptimizerFastGradientClipping))
                and getattr(optimizer, "rank", 0) != 0):
            return 0.0, 0  # only rank 0 adds the noise
        scale = 1.0
        if isinstance(optimizer, FSDPOptimizerFastGradientClipping) and optimizer.loss_reduction == "mean":
            scale = float(getattr(optimizer, "world_size", 1))
        total, count = 0.0, 0
        for p in optimizer.params:
            summed = clipped_sum(optimizer, p)
            if summed is None or p.grad is None:
                continue
            difference = (p.grad.detach().reshape(-1).double() - summed.detach().reshape(-1).double()) * scale
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
        clip = optimizer.__dict__.get(STEP_CLIP)
        expected = float(optimizer.noise_multiplier) * (as_scalar(optimizer.max_grad_norm) if clip is None else clip)
        key = (getattr(optimizer, ENGINE_ID, "unknown"), expected)
        with _lock:
            before = self.log.noise.get(key, [0.0, 0])
            self.log.noise[key] = [before[0] + pending[0], before[1] + pending[1]]

    def stepped(self, optimizer, args, kwargs) -> None:
        """torch's global optimizer step hook: the parameters each optimizer updated."""
        if not self.sees:
            return
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
