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
    """``(status, worst share / C)``: ``verified``, ``exceeded`` or ``unverified`` (see the module docstring). Works
    parameter by parameter in the gradients' own dtype and device (no copy of all per-sample gradients at once)."""
    import torch
    from opacus.optimizers import DPOptimizerFastGradientClipping

    params = list(optimizer.params)
    if (clip is None or clip <= 0 or after_skip or isinstance(optimizer, DPOptimizerFastGradientClipping)
            or not params or any(getattr(p, "summed_grad", None) is None for p in params)):
        return "unverified", None
    try:
        flat = [optimizer._get_flat_grad_sample(p).detach() for p in params]
    except (AttributeError, RuntimeError, ValueError, TypeError):
        return "unverified", None
    if any(s.ndim == 0 or len(s) != len(flat[0]) for s in flat):
        return "unverified", None
    records = len(flat[0])
    if records == 0:  # an empty Poisson batch: no record in the sum
        empty = all(not bool(torch.any(p.summed_grad != 0)) for p in params)
        return ("verified" if empty else "unverified"), None
    flat = [s.reshape(records, -1) for s in flat]
    norms = [f.norm(dim=1).double().cpu() for f in flat]
    clips = getattr(optimizer, "max_grad_norms", None)
    if clips is not None and len(clips) == len(flat):  # per-layer clipping
        factors = [(float(c) / (n + 1e-6)).clamp(max=1.0) for c, n in zip(clips, norms, strict=True)]
    else:
        total = torch.stack(norms, dim=1).norm(dim=1)
        factors = [(clip / (total + 1e-6)).clamp(max=1.0)] * len(flat)
    error = 0.0
    for p, f, k in zip(params, flat, factors, strict=True):
        expected = torch.einsum("i,i...", k.to(f.device, f.dtype), f)
        error += float(torch.sum((p.summed_grad.detach().reshape(-1) - expected).double() ** 2))
    if error ** 0.5 <= RELATIVE_TOLERANCE * clip * max(1, records):
        return "verified", None
    record_norms = torch.stack(norms, dim=1).norm(dim=1)
    return _solved(flat, [p.summed_grad.detach().reshape(-1) for p in params], record_norms, clip)


def _solved(flat, summed, record_norms, clip: float) -> tuple[str, float | None]:
    """Each record's factor from the sum by least squares on a seeded subset of coordinates (about
    ``SOLVED_COORDINATES`` per record, spread over the parameters by size); its share against C."""
    import torch

    records = len(record_norms)
    width = sum(f.shape[1] for f in flat)
    generator = torch.Generator().manual_seed(0)
    columns, values = [], []
    for f, s in zip(flat, summed, strict=True):
        take = min(f.shape[1], SOLVED_COORDINATES * records * f.shape[1] // width + 1)
        chosen = torch.randperm(f.shape[1], generator=generator)[:take].to(f.device)
        columns.append(f[:, chosen].double().cpu())
        values.append(s[chosen].double().cpu())
    if sum(c.shape[1] for c in columns) <= records:  # fewer coordinates than records: the shares are not determined
        return "unverified", None
    factors = torch.linalg.lstsq(torch.cat(columns, dim=1).T, torch.cat(values).unsqueeze(1)).solution.squeeze(1)
    worst = float(torch.max(factors.abs() * record_norms) / clip)
    return ("exceeded", worst) if worst > 1 + 1e-3 else ("unverified", worst)
