"""Canaries for DP-SGD: gradient canaries on coordinates no real example touches, and an input canary.

A *gradient canary* (Nasr et al. 2023, "Tight auditing of differentially private machine learning") is
an example whose gradient the adversary chooses. Here canary k owns coordinate k of an extra linear
layer (``CanaryCoordinates.canary``) that reads K extra input features. Real examples carry zeros in
those features, so their per-example gradient on every canary coordinate is exactly zero; canary k
carries ``magnitude`` in feature k, zero features elsewhere, and its loss is minus its canary output, so
its per-example gradient is ``-magnitude * e_k`` on the canary layer and exactly zero on the model (a
canary row's loss does not depend on the model's output, so no gradient flows back into the model).
opacus clips it to ``clip`` (the magnitude exceeds the clip), so the canary's clipped gradient is the
clip norm times a unit vector on a coordinate of its own: a Dirac canary. Canary coordinates never
interact (disjoint coordinates, per-example clipping, independent noise per coordinate, independent
Poisson sampling per example), so the K coordinates' trajectories are independent, each distributed
as in a run with that canary alone.
"""

from __future__ import annotations

import torch
from torch import nn

CANARY_MAGNITUDE = 1e4  # the canary feature's value; its gradient norm is this, far above any usable clip


class CanaryCoordinates(nn.Module):
    """``model`` on the first ``dim`` input features, plus ``canaries`` canary coordinates (the weights
    of a bias-free linear layer on the remaining input features, initialised to 0). Output: the model's
    outputs with the canary layer's output appended as the last column."""

    def __init__(self, model: nn.Module, dim: int, canaries: int):
        super().__init__()
        self.model = model
        self.dim = int(dim)
        self.canary = nn.Linear(int(canaries), 1, bias=False)
        nn.init.zeros_(self.canary.weight)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        outputs = self.model(inputs[:, : self.dim]).reshape(len(inputs), -1)
        return torch.cat([outputs, self.canary(inputs[:, self.dim:])], dim=1)


def canary_inputs(features: torch.Tensor, labels: torch.Tensor, canaries: int, included):
    """(inputs, labels, is_canary) of the training set: the real examples with ``canaries`` zero
    features appended, then one row per included canary (``included``: a boolean tensor of length
    ``canaries``) with ``CANARY_MAGNITUDE`` in its own canary feature and zero everywhere else."""
    n, dim = features.shape
    chosen = torch.nonzero(torch.as_tensor(included, dtype=torch.bool)).ravel()
    real = torch.cat([features, features.new_zeros((n, canaries))], dim=1)
    fake = features.new_zeros((len(chosen), dim + canaries))
    fake[torch.arange(len(chosen)), dim + chosen] = CANARY_MAGNITUDE
    inputs = torch.cat([real, fake])
    all_labels = torch.cat([labels, labels.new_zeros((len(chosen),) + tuple(labels.shape[1:]))])
    flags = torch.cat([torch.zeros(n, dtype=torch.bool), torch.ones(len(chosen), dtype=torch.bool)])
    return inputs, all_labels, flags


def canary_loss(loss, outputs: torch.Tensor, labels: torch.Tensor, is_canary: torch.Tensor) -> torch.Tensor:
    """Summed loss: the model's per-example ``loss`` on real rows, minus the canary output on canary rows
    (a loss linear in the canary coordinate, so its gradient does not depend on the model's state;
    ``torch.where`` passes no gradient to the unselected branch, so none reaches the model)."""
    real = loss(outputs[:, :-1], labels)
    return torch.where(is_canary, -outputs[:, -1], real).sum()


def input_canary(features: torch.Tensor, norm: float = 10.0) -> torch.Tensor:
    """A crafted input: ``norm`` times the unit direction of least variance of the training features (the
    direction real examples move the model along least), labelled 1 by the caller."""
    centred = features - features.mean(dim=0)
    _, vectors = torch.linalg.eigh(centred.T.double() @ centred.double())
    return (norm * vectors[:, 0]).to(features.dtype)
