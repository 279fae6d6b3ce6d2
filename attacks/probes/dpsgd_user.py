"""A user's DP-SGD set-up named ``"path/file.py:function"``, and gradient canaries run through the user's own
opacus optimizer and data loader.

The function takes no arguments and returns a ``dpfed.dpsgd.DpsgdSetup`` (our training loop runs it) or the
dict ``dpaudit opacus-check`` takes (``attacks.opacus_checks.load``: what ``make_private`` returned). For the
dict, ``optimizer_gradient_canaries`` audits what the user's objects run: the user's batch sampler draws
the batches, the user's model computes per-sample gradients (of a zero loss) and the user's
``DPOptimizer.step`` clips, noises and scales them, with its inner update replaced by a recorder (the
parameters never move). Canary k is record k of the user's dataset; where it is included (world 1 of a
multi-run audit: every canary; a one-run audit: a fair coin each) its per-sample gradient is
``CANARY_MAGNITUDE * max_grad_norm`` on flat coordinate k of the optimizer's parameters whenever the sampler
puts it in a batch; where it is not (world 0: none), it is removed from every batch. Batches are built from
the records the sampler draws by the loader's own ``collate_fn`` and split into the model's input and the label
by ``attacks.opacus_checks.batches`` (tuples, dicts, custom collation). Under Poisson sampling,
with every other per-sample gradient zero, the K coordinates are independent trials, each one release per step
of a Poisson-subsampled Gaussian (the white-box adversary of Nasr et al. 2023).
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, SubsampledGaussian

CANARY_MAGNITUDE = 1e4  # in units of max_grad_norm: far above the clip norm, so a clipped canary has norm C
_FUNCTIONS: dict[str, object] = {}  # spec -> the user's function (a file is imported once per process)


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a Python file (``"path/file.py:function"``) rather than ``"module:function"``."""
    return str(spec).rpartition(":")[0].endswith(".py") or str(spec).endswith(".py")


def load_user_setup(spec: str):
    """Run the user's set-up function: a ``DpsgdSetup`` or an ``OpacusRun`` (ConfigurationError, one line,
    for anything else, and for a function that takes arguments)."""
    from attacks.opacus_checks.load import load_function, validate
    from dpfed.dpsgd import DpsgdSetup

    if spec not in _FUNCTIONS:
        _FUNCTIONS[spec] = load_function(spec)
    function = _FUNCTIONS[spec]
    try:
        required = [p.name for p in inspect.signature(function).parameters.values()
                    if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        required = []
    if required:
        raise ConfigurationError("setup", f"{spec} must take no arguments (the audit calls it as function()); "
                                 f"it requires {', '.join(required)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = function()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: a bad input, said in one line
        raise ConfigurationError("setup", f"{spec} raised {type(exc).__name__}: {str(exc)[:300]}") from None
    if isinstance(value, DpsgdSetup):
        value.__post_init__()
        return value
    if isinstance(value, dict):
        return OpacusRun(validate(value, spec))
    raise ConfigurationError("setup", f"{spec} returned {type(value).__name__}; return a dpfed.dpsgd.DpsgdSetup "
                             "or the dict opacus-check takes (model, optimizer, data_loader, privacy_engine, epochs)")


@dataclass
class OpacusRun:
    """A user's opacus objects (``attacks.opacus_checks.load.OpacusSetup``) and what their accountant is told:
    Poisson at 1 / len(data_loader), the optimizer's noise multiplier and clip, epochs x len(loader) steps."""

    setup: object

    @property
    def optimizer(self):
        return self.setup.optimizer

    @property
    def noise_multiplier(self) -> float:
        return float(self.optimizer.noise_multiplier)

    @property
    def clip(self) -> float:
        return float(self.optimizer.max_grad_norm)

    @property
    def sample_rate(self) -> float:
        return 1.0 / len(self.setup.data_loader)

    @property
    def steps(self) -> int:
        return int(self.setup.epochs) * len(self.setup.data_loader)

    @property
    def examples(self) -> int:
        return len(self.setup.data_loader.dataset)

    def mechanism(self) -> Composition:
        return Composition.of(SubsampledGaussian(self.sample_rate, self.noise_multiplier, self.clip), self.steps)

    def coordinates(self) -> int:
        return int(sum(p.numel() for p in self.optimizer.params))

    def untracked_parameters(self) -> list[str]:
        """Parameters of the model that require gradients but that the private optimizer does not hold (if
        trained, they are trained with no clipping and no noise)."""
        held = {id(p) for p in self.optimizer.params}
        model = self.setup.model
        named = model.named_parameters() if hasattr(model, "named_parameters") else []
        return [name.removeprefix("_module.") for name, p in named if p.requires_grad and id(p) not in held]


def with_batch_keys(run: OpacusRun, input_key=None, label_key=None) -> OpacusRun:
    """``run`` with the keys of its dict batches (``attacks.opacus_checks.batches``) given outside the set-up dict
    (the dp-sgd target's parameters); a key the set-up dict gives otherwise is an error (ConfigurationError)."""
    from attacks.opacus_checks.batches import check_keys

    input_key, label_key = check_keys(input_key, label_key)
    for name, value in (("input_key", input_key), ("label_key", label_key)):
        own = getattr(run.setup, name)
        if value is not None and own is not None and own != value:
            raise ConfigurationError(name, f"{name} {value!r} differs from the set-up dict's {own!r} (give it once)")
        if value is not None:
            setattr(run.setup, name, value)
    check_keys(run.setup.input_key, run.setup.label_key)
    return run


def _reseed(run: OpacusRun, seed: int) -> None:
    """Seed torch and every torch generator the user's sampler and optimizer hold (a generator seeded in the
    user's function would otherwise repeat the same batches and noise in every run)."""
    import torch

    torch.manual_seed(seed)
    loader = run.setup.data_loader
    holders = (run.optimizer, loader, getattr(loader, "batch_sampler", None), getattr(loader, "sampler", None),
               getattr(getattr(loader, "batch_sampler", None), "sampler", None))
    for i, holder in enumerate(holders):
        generator = getattr(holder, "generator", None)
        if isinstance(generator, torch.Generator):
            generator.manual_seed((seed + 7919 * (i + 1)) % 2**63)


def most_canaries(run: OpacusRun) -> int:
    """The most gradient canaries one pass of the user's loop holds: one coordinate each, and at most half the
    records (canary k is record k; the rest stay real)."""
    return min(run.coordinates(), run.examples // 2)


def check_canaries(run: OpacusRun, canaries: int, field: str = "canaries_per_run") -> int:
    """``canaries`` if the set-up holds that many (ConfigurationError on ``field``, one line, otherwise)."""
    if canaries < 1 or canaries > most_canaries(run):
        raise ConfigurationError(field, f"{canaries} canaries need as many coordinates and twice as many records; "
                                 f"the set-up has {run.coordinates()} and {run.examples} (at most "
                                 f"{most_canaries(run)} canaries)")
    return int(canaries)


def _inclusion_mask(included, canaries: int) -> np.ndarray:
    """One inclusion flag per canary: a bool (every canary in, or none) or a per-canary mask."""
    mask = np.asarray(included, dtype=bool)
    if mask.ndim == 0:
        return np.full(canaries, bool(mask))
    if mask.shape != (canaries,):
        raise ConfigurationError("canaries", f"needs one inclusion flag per canary ({canaries}), got {mask.shape}")
    return mask


def optimizer_gradient_canaries(run: OpacusRun, canaries: int, included, seed: int) -> np.ndarray:
    """One pass of the user's loop (epochs x its batches) with ``canaries`` gradient canaries (see the module
    docstring); canary k's record is in the data set where ``included[k]`` (a per-canary mask; a bool: all or
    none, the two worlds of a multi-run audit) and removed from every batch elsewhere. Returns the per-step
    updates of the canary coordinates in units of the noise the accountant is told (steps, canaries):
    ``b_t / z + N(0, 1)`` for a correct implementation."""
    import torch

    from attacks.opacus_checks.batches import BatchReader

    opt, loader = run.optimizer, run.setup.data_loader
    check_canaries(run, canaries)
    excluded = {int(k) for k in np.flatnonzero(~_inclusion_mask(included, canaries))}
    _reseed(run, seed)
    model, inner = run.setup.model, opt.original_optimizer
    reader = BatchReader(loader, model, run.setup.input_key, run.setup.label_key)  # the loader's own collate_fn
    sizes = [p.numel() for p in opt.params]
    starts = np.cumsum([0] + sizes)
    normaliser = float(opt.expected_batch_size or 1) if opt.loss_reduction == "mean" else 1.0
    std = run.noise_multiplier * run.clip / normaliser
    recorded = []

    def record(*args, **kwargs):
        flat = torch.cat([p.grad.detach().reshape(-1).double() for p in opt.params])
        recorded.append(flat[:canaries].cpu().numpy() / std)

    history = list(run.setup.privacy_engine.accountant.history)
    inner.step = record  # shadows the inner optimizer's update: parameters never move
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(int(run.setup.epochs)):
                for batch in loader.batch_sampler:
                    indices = [int(i) for i in batch if int(i) not in excluded]
                    opt.zero_grad()
                    output = reader.batch(indices).call(model)
                    output = output[0] if isinstance(output, (list, tuple)) else output
                    (output.sum() * 0.0).backward()
                    _plant(opt, indices, canaries, starts, run.clip * CANARY_MAGNITUDE)
                    opt.step()
            opt.zero_grad()
    finally:
        del inner.step
        run.setup.privacy_engine.accountant.history = history
    if len(recorded) != run.steps:
        raise ConfigurationError("optimizer", f"{run.steps - len(recorded)} of {run.steps} optimizer steps released "
                                 "nothing (skipped steps): the gradient canaries cannot be read")
    return np.stack(recorded) if recorded else np.zeros((0, canaries))


def _plant(opt, indices, canaries: int, starts, magnitude: float) -> None:
    """Set the per-sample gradient of each canary record in the batch to ``magnitude`` on its coordinate."""
    rows = [(row, i) for row, i in enumerate(indices) if i < canaries]
    if not rows:
        return
    for p, start in zip(opt.params, starts[:-1], strict=False):
        sample = p.grad_sample
        if not hasattr(sample, "shape"):
            raise ConfigurationError("optimizer", "per-sample gradients are not one tensor per step (gradient "
                                     "accumulation): the gradient canaries cannot be planted")
        flat = sample.reshape(len(sample), -1)
        for row, k in rows:
            if start <= k < start + flat.shape[1]:
                flat[row, k - start] = magnitude
        p.grad_sample = flat.reshape(sample.shape)


def check_poisson(run: OpacusRun) -> str | None:
    """Why the canaries of one run would not be independent trials (None under Poisson sampling)."""
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    sampler = getattr(run.setup.data_loader, "batch_sampler", None)
    if isinstance(sampler, UniformWithReplacementSampler):
        if not math.isclose(float(sampler.sample_rate), run.sample_rate, rel_tol=1e-6):
            return (f"the loader samples at rate {float(sampler.sample_rate):.4g}, the accountant is told "
                    f"{run.sample_rate:.4g}")
        return None
    return (f"the loader draws batches with {type(sampler).__name__}, not Poisson sampling: its records' inclusions "
            "are not independent, so canaries of one run would not be independent trials")
