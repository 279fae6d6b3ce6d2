"""Whether each record's share of a private step's clipped sum is at most the clip, from what opacus computed.

At ``add_noise`` (after opacus clipped and summed the per-sample gradients, before the noise) the clipped sum
``summed_grad`` is compared with the per-sample gradients ``grad_sample`` clipped to the clip ``C`` the step began
with (flat clipping: one factor per record over all parameters; per-layer: one per parameter, at its own clip).
Equal (within float rounding): ``verified``. Different: each record's factor ``a_i`` is solved from the sum by least
squares on a subset of coordinates (``summed = sum_i a_i g_i``), and a record whose share ``|a_i| ||g_i||`` exceeds
``C`` makes the step ``exceeded`` (its worst ratio to ``C`` kept); else ``unverified``. Ghost clipping (no per-sample
gradients kept) and a step whose sum spans earlier skipped (virtual) steps are ``unverified``. Assumes each row of
``grad_sample`` is one record's gradient (opacus's batch-first per-sample gradients).
"""

from __future__ import annotations

RELATIVE_TOLERANCE = 1e-4  # float32 sums of clipped gradients: far below any change of clip worth reporting
SOLVED_COORDINATES = 4  # coordinates per record used to solve the factors (at least the batch size, overdetermined)


def check_clipping(optimizer, clip: float | None, after_skip: bool) -> tuple[str, float | None]:
    """``(status, worst share / C)``: ``verified``, ``exceeded`` or ``unverified`` (see the module docstring)."""
    import torch
    from opacus.optimizers import DPOptimizerFastGradientClipping

    params = list(optimizer.params)
    if (clip is None or clip <= 0 or after_skip or isinstance(optimizer, DPOptimizerFastGradientClipping)
            or not params or any(getattr(p, "summed_grad", None) is None for p in params)):
        return "unverified", None
    try:
        samples = [optimizer._get_flat_grad_sample(p).detach().double() for p in params]
    except (AttributeError, RuntimeError, ValueError, TypeError):
        return "unverified", None
    records = len(samples[0])
    if records == 0 or any(s.ndim == 0 or len(s) != records for s in samples):
        return "unverified", None
    flat = [s.reshape(records, -1) for s in samples]
    summed = [p.summed_grad.detach().double().reshape(-1) for p in params]
    clips = getattr(optimizer, "max_grad_norms", None)
    if clips is not None and len(clips) == len(flat):  # per-layer clipping
        factors = [(float(c) / (f.norm(dim=1) + 1e-6)).clamp(max=1.0) for c, f in zip(clips, flat, strict=True)]
    else:
        norms = torch.stack([f.norm(dim=1) for f in flat], dim=1).norm(dim=1)
        factors = [(clip / (norms + 1e-6)).clamp(max=1.0)] * len(flat)
    error = sum(float(torch.sum((s - k @ f) ** 2)) for s, k, f in zip(summed, factors, flat, strict=True)) ** 0.5
    if error <= RELATIVE_TOLERANCE * clip * max(1, records):
        return "verified", None
    return _solved(torch.cat(flat, dim=1), torch.cat(summed), clip)


def _solved(gradients, summed, clip: float) -> tuple[str, float | None]:
    """Each record's factor from the sum by least squares on a seeded subset of coordinates; its share against C."""
    import torch

    records, width = gradients.shape
    chosen = torch.randperm(width, generator=torch.Generator().manual_seed(0))[:SOLVED_COORDINATES * records]
    factors = torch.linalg.lstsq(gradients[:, chosen].T, summed[chosen].unsqueeze(1)).solution.squeeze(1)
    worst = float(torch.max(factors.abs() * gradients.norm(dim=1)) / clip)
    return ("exceeded", worst) if worst > 1 + 1e-3 else ("unverified", worst)
