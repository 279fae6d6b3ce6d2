"""Where opacus (1.6) keeps what ``dpfed.dpsgd.observe`` patches and reads: its private optimizer classes
(``DPOptimizer`` and every subclass), its Poisson batch samplers, the grad-sample modules that store each backward
pass's per-sample gradients, and, on a private optimizer, the backward passes its next step sums, the clipped sum
``add_noise`` noises and the clip as one number. The class and module look-ups read opacus as it stands when called
(a subclass imported since the last call is found).
"""

from __future__ import annotations


def private_optimizer_classes() -> list[type]:
    """``DPOptimizer`` and every subclass of it: each class opacus's ``get_optimizer_class`` dispatches on, each
    one ``opacus.optimizers`` exports, and any other imported so far (a user's own)."""
    import opacus.optimizers as module
    from opacus.optimizers import DPOptimizer

    found, todo = [], [DPOptimizer, *(v for v in vars(module).values() if isinstance(v, type)
                                      and issubclass(v, DPOptimizer))]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


def poisson_samplers() -> dict:
    """opacus's Poisson batch samplers (the batch samplers of its ``DPDataLoader``) and their ``__iter__``."""
    from opacus.utils import uniform_sampler

    classes = (uniform_sampler.UniformWithReplacementSampler, uniform_sampler.DistributedUniformWithReplacementSampler)
    return {cls: cls.__iter__ for cls in classes}


def promoter_modules() -> list:
    """opacus's grad-sample modules that call ``promote_current_grad_sample`` by its module-level name."""
    import importlib

    out = []
    for name in ("grad_sample_module", "grad_sample_module_fast_gradient_clipping"):
        name = f"opacus.grad_sample.{name}"
        module = importlib.import_module(name)
        if hasattr(module, "promote_current_grad_sample"):
            out.append(module)
    return out


def accumulated_passes(optimizer) -> int:
    """opacus's count of the backward passes (Poisson batches) the optimizer's next step sums (1 when unknown)."""
    try:
        return max(1, int(optimizer.accumulated_iterations))
    except (ValueError, AttributeError, TypeError, IndexError):
        return 1


def clipped_sum(optimizer, p):
    """The clipped (noise-free) sum of ``p``'s per-sample gradients that ``add_noise`` noises: ``p.summed_grad``,
    or FSDP's ``grad_state[p]["summed_grad"]``."""
    state = getattr(optimizer, "grad_state", None)
    if isinstance(state, dict) and p in state:
        return state[p].get("summed_grad")
    return getattr(p, "summed_grad", None)


def as_scalar(value):
    """``value`` as a float (None stays None); a per-layer list of clips as the one flat norm bound."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):  # per-layer clipping: the flat norm bound they add up to
        return float(sum(float(v) ** 2 for v in value) ** 0.5)
    return float(value)

