"""Measure the noise opacus's optimizer really adds, and what its accountant is told.

Method: with every per-sample gradient zero (the loss is the model's output times 0), one optimizer
step releases pure noise: the gradient it hands to the inner optimizer is N(0, sigma^2) in every
coordinate, sigma = noise_multiplier * max_grad_norm / normaliser, where opacus's normaliser is the
*expected* batch size (``loss_reduction='mean'``) or 1 (``'sum'``), whatever the realised batch size.
The step runs through the optimizer's own ``step`` (so anything patched into it, or into
``add_noise``/``scale_grad``, is measured), with the inner optimizer's update replaced by a recorder,
so the model's parameters do not move. It is done at several realised batch sizes, on batches of the
dataset's first records built by the loader's own ``collate_fn`` and split into the model's input and the
label by ``attacks.opacus_checks.batches`` (tuples, dicts, custom collation).

Test: for n recorded coordinates, sum(g^2) / sigma_0^2 is chi-square with n degrees of freedom when
the noise is what the accountant is told; a batch size is flagged when the two-sided p-value is below
``false_alarm / (number of batch sizes)`` (Bonferroni), so a correct set-up is flagged with
probability at most ``false_alarm``. The steps' accountant records are read (what it was told: the
noise multiplier and sample rate) and then removed, so the user's accountant is left as it was.

Under a ``BatchMemoryManager`` (``max_physical_batch_size``) each measured step is one logical step made
the way it makes them: physical batches of at most that size, all but the last signalled to skip, so the
noise measured is the noise of the logical step. Skip signals already queued in the user's optimizer are
set aside while measuring and put back after. Parameters the model trains but the optimizer does not hold
(``outside``, found if not given) are kept out of the measurement (``requires_grad`` off, restored after): opacus would
accumulate their per-sample gradients across the steps and refuse the next one.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

from scipy import stats

from accounting.errors import ConfigurationError

DEFAULT_FALSE_ALARM = 1e-6
DEFAULT_REPETITIONS = 16


@dataclass(frozen=True)
class NoiseAtBatch:
    """The noise measured at one realised batch size: std, the std the accountant implies, p-value."""

    batch_size: int
    coordinates: int
    std: float
    expected_std: float
    p_value: float
    flagged: bool
    std_upper: float  # one-sided upper confidence limit of std at level 1 - false_alarm


@dataclass(frozen=True)
class NoiseFacts:
    """What the optimizer and its accountant were told, and the noise measured.

    told_noise_multiplier, told_sample_rate : what the accountant's step hook recorded.
    optimizer_noise_multiplier, max_grad_norm, expected_batch_size, loss_reduction : the DPOptimizer's.
    effective_noise_multiplier : measured std at the expected batch size, in units of max_grad_norm per
        normaliser (what really protects a record); ``effective_upper``: its upper confidence limit.
    realised_normalisation : the std scales like 1 / realised batch size (opacus #571) rather than being
        constant.
    batch_form : how the batches were split into the model's input and the label.
    """

    told_noise_multiplier: float
    told_sample_rate: float
    optimizer_noise_multiplier: float
    max_grad_norm: float
    expected_batch_size: float
    loss_reduction: str
    false_alarm: float
    at_batch: tuple
    effective_noise_multiplier: float
    effective_upper: float
    noise_flagged: bool
    realised_normalisation: bool
    normalisation_slope: float
    batch_form: str = ""  # how a batch of the loader was read (``batches.ModelBatch.form``)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["at_batch"] = [asdict(a) for a in self.at_batch]
        return out


def _zero_gradient_steps(model, optimizer, batch, repetitions: int, max_physical_batch_size: int | None = None):
    """Run ``repetitions`` (logical) optimizer steps with zero per-sample gradients on ``batch`` (a
    ``batches.ModelBatch``); return the released gradients."""
    import torch

    inner = optimizer.original_optimizer
    recorded = []
    device = next(iter(optimizer.params)).device
    batch = batch.to(device)
    physical = (batch.split(math.ceil(len(batch) / max_physical_batch_size))
                if max_physical_batch_size and len(batch) > max_physical_batch_size else [batch])

    def record(*args, **kwargs):
        recorded.append(torch.cat([p.grad.detach().reshape(-1).double().cpu().clone() for p in optimizer.params]))

    inner.step = record  # instance attribute: shadows the class's update while measuring
    try:
        for _ in range(repetitions):
            optimizer.zero_grad()
            for i, part in enumerate(physical):
                if len(physical) > 1:
                    optimizer.signal_skip_step(do_skip=i < len(physical) - 1)
                output = _forward(model, part)
                (output.sum() * 0.0).backward()
                optimizer.step()
                if i < len(physical) - 1:
                    optimizer.zero_grad()  # keeps the clipped sum of a skipped step, as in a BatchMemoryManager loop
        optimizer.zero_grad()
    finally:
        del inner.step
    if len(recorded) > repetitions:
        raise ConfigurationError("optimizer", f"{len(recorded)} updates for {repetitions} logical steps of "
                                 f"{len(physical)} physical batches: the optimizer does not skip the steps a "
                                 "BatchMemoryManager asks it to skip")
    if len(recorded) < repetitions:
        raise ConfigurationError("optimizer", f"{repetitions - len(recorded)} of {repetitions} optimizer steps were "
                                 "skipped (gradient accumulation or skip_step): cannot measure the noise")
    return torch.stack(recorded).numpy()


def _forward(model, batch):
    """The model's output on ``batch`` (its first element if a tuple or list); the model failing is a
    ConfigurationError saying how the batch was read."""
    try:
        output = batch.call(model)
    except Exception as exc:  # noqa: BLE001 - the user's model on the user's batch
        from attacks.opacus_checks.load import one_line

        raise ConfigurationError("model", f"the model failed on a batch of the data loader (read as {batch.form}): "
                                 f"{type(exc).__name__}: {one_line(exc)}") from None
    return output[0] if isinstance(output, (list, tuple)) else output


def _test(values, expected_std: float, batch_size: int, level: float, false_alarm: float) -> NoiseAtBatch:
    n = int(values.size)
    sum_sq = float((values ** 2).sum())
    statistic = sum_sq / expected_std ** 2
    p_value = min(1.0, 2.0 * min(stats.chi2.cdf(statistic, n), stats.chi2.sf(statistic, n)))
    std_upper = math.sqrt(sum_sq / stats.chi2.ppf(false_alarm, n))
    return NoiseAtBatch(batch_size, n, math.sqrt(sum_sq / n), expected_std, float(p_value), bool(p_value < level),
                        std_upper)


def measurement_batch_sizes(expected: float, population: int) -> tuple[int, ...]:
    """Realised batch sizes to measure at: a quarter of, exactly, and twice the expected batch size."""
    b = max(1, int(round(expected)))
    return tuple(sorted({max(1, b // 4), b, min(max(2 * b, b + 1), max(population, b + 1))}))


class _SetAside:
    """While measuring: the user's queued skip signals set aside and ``outside`` parameters' gradients off; a layer
    whose parameters are all outside has its backward hooks (opacus's per-sample hooks) set aside too, since opacus
    would look for the activations it did not capture of a layer with no gradient ("No activations detected")."""

    def __init__(self, optimizer, outside, model=None):
        self.optimizer, self.outside, self.model = optimizer, list(outside), model

    def __enter__(self):
        self.queue = list(getattr(self.optimizer, "_step_skip_queue", []))
        self.skipped = getattr(self.optimizer, "_is_last_step_skipped", False)
        self.optimizer._step_skip_queue, self.optimizer._is_last_step_skipped = [], False
        self.requires = [p.requires_grad for p in self.outside]
        for p in self.outside:
            p.requires_grad_(False)
        self.hooks = []
        held = {id(p) for p in self.outside}
        for module in (self.model.modules() if self.outside and hasattr(self.model, "modules") else ()):
            own = list(module.parameters(recurse=False))
            hooks = getattr(module, "_backward_hooks", None)
            if own and hooks and all(id(p) in held for p in own):
                self.hooks.append((module, dict(hooks)))
                hooks.clear()
        return self

    def __exit__(self, *exc):
        self.optimizer._step_skip_queue, self.optimizer._is_last_step_skipped = self.queue, self.skipped
        for p, requires in zip(self.outside, self.requires, strict=True):
            p.requires_grad_(requires)
        for module, hooks in self.hooks:
            module._backward_hooks.update(hooks)
        return False


def measure_noise(model, optimizer, privacy_engine, data, *, repetitions: int = DEFAULT_REPETITIONS,
                  false_alarm: float = DEFAULT_FALSE_ALARM, max_physical_batch_size: int | None = None,
                  outside=None, input_key=None, label_key=None) -> NoiseFacts:
    """Measure the optimizer's noise at several realised batch sizes (see the module docstring). ``data``: the
    data loader (its batches are built by its own ``collate_fn``) or a dataset (torch's ``default_collate``);
    ``input_key``/``label_key``: the keys of dict batches (``batches.split_batch``); ``outside``: the parameters
    outside the optimizer (default: found with ``parameters.parameters_outside``)."""
    from attacks.opacus_checks.batches import BatchReader

    reader = BatchReader(data, model, input_key, label_key)
    if outside is None:
        from attacks.opacus_checks.parameters import parameters_outside

        outside = [p.parameter for p in parameters_outside(model, optimizer)]
    accountant = privacy_engine.accountant
    history = list(accountant.history)
    expected = float(optimizer.expected_batch_size or 1)
    reduction = optimizer.loss_reduction
    normaliser = expected if reduction == "mean" else 1.0
    clip = float(optimizer.max_grad_norm)
    z = float(optimizer.noise_multiplier)
    expected_std = z * clip / normaliser
    if not expected_std > 0:
        raise ConfigurationError("optimizer", f"noise_multiplier {z} and max_grad_norm {clip}: no noise to measure")
    population = len(reader.dataset)
    sizes = measurement_batch_sizes(expected, population)
    batches = {size: reader.batch([i % population for i in range(size)]) for size in sizes}
    level = false_alarm / len(sizes)
    results = {}
    try:
        with warnings.catch_warnings(), _SetAside(optimizer, outside, model):
            warnings.simplefilter("ignore")  # torch's note on full backward hooks with inputs not requiring grad
            for size in sizes:
                values = _zero_gradient_steps(model, optimizer, batches[size], repetitions,
                                              max_physical_batch_size)
                results[size] = _test(values, expected_std, size, level, false_alarm)
        told = accountant.history[-1] if len(accountant.history) > len(history) else None
    except ConfigurationError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model or optimizer failed on a batch of the dataset
        from attacks.opacus_checks.load import one_line

        raise ConfigurationError("setup", f"an optimizer step on a batch of the dataset failed: "
                                 f"{type(exc).__name__}: {one_line(exc)}") from None
    finally:
        accountant.history = history
    if told is None:
        raise ConfigurationError("privacy_engine", "the optimizer's steps reached no accountant of this "
                                 "PrivacyEngine (is the optimizer the one make_private returned?)")
    base = results[min(sizes, key=lambda s: abs(s - expected))]
    scale = normaliser / clip
    slope = _log_slope(results)
    others_flagged = any(r.flagged for s, r in results.items() if s != base.batch_size)
    return NoiseFacts(float(told[0]), float(told[1]), z, clip, expected, reduction, false_alarm,
                      tuple(results[s] for s in sizes), base.std * scale, base.std_upper * scale, bool(base.flagged),
                      bool(others_flagged and slope < -0.5), slope, batches[base.batch_size].form)


def _log_slope(results: dict) -> float:
    """Least-squares slope of log(std) on log(batch size): 0 for expected-size normalisation, -1 for realised."""
    xs = [math.log(s) for s in results]
    ys = [math.log(r.std) for r in results.values()]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var > 0 else 0.0
