"""One DP-SGD training as opacus runs it: the model, the data, the loss and the privacy parameters.

The accountants see a Poisson-subsampled Gaussian mechanism (``sample_rate``, ``noise_multiplier``,
``clip``) composed ``steps`` times, add/remove neighbouring of one example: exactly what opacus's
``make_private`` with Poisson sampling runs, per-example clipping to ``clip`` then Gaussian noise of
standard deviation ``noise_multiplier * clip`` on the sum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, SubsampledGaussian


@dataclass
class DpsgdSetup:
    """A DP-SGD training. ``model_factory()`` builds a fresh model mapping (B, d) features to (B, k)
    outputs; ``loss(outputs, labels)`` returns per-example losses (B,). ``sample_rate`` must be 1/m for
    a whole number m of batches per epoch (opacus derives its rate as 1 / len(data loader));
    ``learning_rate`` applies to the gradient averaged over the expected batch size."""

    model_factory: Callable[[], torch.nn.Module]
    features: torch.Tensor
    labels: torch.Tensor
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    sample_rate: float = 0.5
    noise_multiplier: float = 2.64
    clip: float = 1.0
    epochs: int = 10
    learning_rate: float = 0.5
    name: str = "user"

    def __post_init__(self):
        rate = require_number("sample_rate", self.sample_rate, low=0.0, high=1.0, low_open=True)
        batches = round(1.0 / rate)
        if abs(batches * rate - 1.0) > 1e-9:
            raise ConfigurationError("sample_rate", f"must be 1/m for a whole number m of batches per epoch "
                                     f"(opacus uses 1 / len(data loader)), got {rate}")
        self.batches_per_epoch = batches
        require_number("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
        require_number("clip", self.clip, low=0.0, low_open=True)
        self.epochs = int(require_number("epochs", self.epochs, low=1, integer=True))
        require_number("learning_rate", self.learning_rate, low=0.0, low_open=True)
        if self.features.ndim != 2 or self.labels.shape[:1] != self.features.shape[:1]:
            raise ConfigurationError("features", "needs (n, d) features and n labels")
        if self.features.shape[0] < batches:
            raise ConfigurationError("features", f"{self.features.shape[0]} examples cannot fill {batches} batches")

    @property
    def examples(self) -> int:
        return int(self.features.shape[0])

    @property
    def steps(self) -> int:
        return self.epochs * self.batches_per_epoch

    @property
    def expected_batch_size(self) -> float:
        return self.sample_rate * self.examples

    def mechanism(self) -> Composition:
        """The composition the accountants analyse (Poisson, add/remove one example)."""
        return Composition.of(SubsampledGaussian(self.sample_rate, self.noise_multiplier, self.clip), self.steps)

    def opacus_epsilon(self, delta: float, accountant: str = "prv") -> float:
        """Epsilon at ``delta`` from opacus's own accountant (``prv`` is opacus's default, or ``rdp``)
        for this setup's history (noise multiplier, sample rate, steps)."""
        from opacus.accountants import create_accountant

        engine = create_accountant(accountant)
        engine.history = [(float(self.noise_multiplier), float(self.sample_rate), int(self.steps))]
        return float(engine.get_epsilon(delta=delta))


def breast_cancer_setup(**overrides) -> DpsgdSetup:
    """The bundled example: logistic regression on scikit-learn's breast-cancer training split (455
    examples, 30 standardised features), two Poisson batches per epoch, ten epochs (20 steps)."""
    from dpfed.dpsgd.data import binary_cross_entropy, breast_cancer_arrays, logistic_regression

    features, labels, _, _ = breast_cancer_arrays()
    dim = features.shape[1]
    params = {"name": "breast-cancer logistic regression", **overrides}
    return DpsgdSetup(lambda: logistic_regression(dim), features, labels, binary_cross_entropy, **params)
