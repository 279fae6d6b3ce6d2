"""Many DP-SGD trainings of one ``DpsgdSetup`` at once (``torch.func``): the final-model audit's trials.

Each of ``models`` copies starts from the same initialisation and runs opacus's update with Poisson
sampling, ``loss_reduction="sum"`` and plain SGD, as ``dpfed.dpsgd.train`` configures it: at every step
each record joins the batch with probability ``sample_rate``, independently per model; per-example
gradients (``vmap`` of ``grad`` over records, then over models) are clipped to ``clip`` in their joint
norm (factor ``min(1, C / (norm + 1e-6))``, opacus's), summed over the batch, Gaussian noise of standard
deviation ``noise_factor * noise_multiplier * clip`` added, and the model moves by ``learning_rate /
expected batch size`` times that. ``tests/dpfed/test_dpsgd_batched.py`` checks it against opacus's own run
with every record in every batch (the sampling then fixed) and noise negligible.

Cost per step: models x records x parameters (every record's gradient is computed, a mask selects the
batch), so it suits the small models of a black-box audit; ``models_per_chunk`` bounds the memory.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, vmap

from dpfed.dpsgd.setup import DpsgdSetup

CHUNK_BYTES = 256 * 2**20  # per-example gradients of one chunk of models


def models_per_chunk(setup: DpsgdSetup, records: int) -> int:
    """Models trained at once so that their per-example gradients fit in ``CHUNK_BYTES``."""
    parameters = sum(p.numel() for p in setup.model_factory().parameters())
    return max(1, CHUNK_BYTES // (4 * max(1, records) * max(1, parameters)))


def final_models(setup: DpsgdSetup, features: torch.Tensor, labels: torch.Tensor, models: int,
                 generator: torch.Generator, init_seed: int = 0, noise_factor: float = 1.0):
    """Train ``models`` copies on (``features``, ``labels``); returns (the template module, the final
    parameters as a dict of tensors with a leading ``models`` axis), on ``features``' device (``generator``
    must be on it too)."""
    with torch.random.fork_rng():
        torch.manual_seed(int(init_seed) + 2)  # dpfed.dpsgd.train._seeded_model's initialisation
        template = setup.model_factory().to(features.device)
    names = [name for name, _ in template.named_parameters()]
    params = {name: p.detach().unsqueeze(0).repeat((models,) + (1,) * p.dim()) for name, p in
              template.named_parameters()}

    def example_loss(p, x, y):
        return setup.loss(functional_call(template, p, (x.unsqueeze(0),)), y.unsqueeze(0))[0]

    per_model = vmap(vmap(grad(example_loss), in_dims=(None, 0, 0)), in_dims=(0, None, None))
    records = features.shape[0]
    step_size = setup.learning_rate / setup.expected_batch_size
    std = noise_factor * setup.noise_multiplier * setup.clip
    for _ in range(setup.steps):
        mask = (torch.rand((models, records), generator=generator, device=features.device)
                < setup.sample_rate).to(features.dtype)
        grads = per_model(params, features, labels)  # name -> (models, records, *shape)
        norms = torch.sqrt(sum(grads[n].reshape(models, records, -1).square().sum(-1) for n in names))
        weights = mask * (setup.clip / (norms + 1e-6)).clamp(max=1.0)
        for n in names:
            summed = torch.einsum("mr,mr...->m...", weights, grads[n])
            noise = torch.randn(summed.shape, generator=generator, dtype=summed.dtype, device=summed.device) * std
            params[n] = params[n] - step_size * (summed + noise)
    return template, params


def losses_on(setup: DpsgdSetup, template, params: dict, example: torch.Tensor, label: torch.Tensor):
    """Each model's loss on one example (a tensor of length ``models``)."""
    def one(p):
        return setup.loss(functional_call(template, p, (example.unsqueeze(0),)), label.unsqueeze(0))[0]

    with torch.no_grad():
        return vmap(one)(params)
