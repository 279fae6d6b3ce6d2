"""Opacus's PRV accountant (Gopi, Lee, Wutschitz 2021) as an independent cross-check of the PLD.

Covers Poisson-subsampled (or un-subsampled) Gaussian mechanisms under add/remove. The reported
epsilon is the PRV upper estimate; ``eps_error`` bounds its distance from the true value.
"""

from __future__ import annotations

from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian


def _history(composition: Composition) -> list[tuple[float, float, int]]:
    history = []
    for mechanism, count in composition.parts:
        if isinstance(mechanism, Gaussian):
            history.append((float(mechanism.noise_multiplier), 1.0, count))
        elif isinstance(mechanism, SubsampledGaussian):
            if mechanism.sampling is not Sampling.POISSON or mechanism.neighbouring is not Neighbouring.ADD_REMOVE:
                raise Unsupported("opacus's PRV accountant covers Poisson sampling under add/remove only")
            history.append((float(mechanism.noise_multiplier), float(mechanism.rate), count))
        else:
            raise Unsupported(f"opacus's PRV accountant has no {type(mechanism).__name__}")
    return history


class PrvAccountant:
    name = "prv"

    def __init__(self, eps_error: float = 0.01):
        self.eps_error = eps_error

    def _accountant(self, composition: Composition):
        import warnings

        from opacus.accountants import PRVAccountant

        accountant = PRVAccountant()
        accountant.history = _history(composition)
        warnings.filterwarnings("ignore", module="opacus")
        return accountant

    def epsilon(self, composition: Composition, delta: float) -> float:
        return float(self._accountant(composition).get_epsilon(delta, eps_error=self.eps_error))

    def delta(self, composition: Composition, epsilon: float) -> float:
        raise Unsupported("opacus's PRV accountant answers epsilon for a delta only")
