"""Mechanism descriptions: frozen, validated and runnable.

One object serves three uses: an algorithm calls ``release`` to privatise a message, the accountants
analyse it, and the probes attack the very same ``release``.

Noise convention (as in DP-SGD, Opacus and dp-accounting): the standard deviation of the noise is
``noise_multiplier * sensitivity`` for ``Gaussian`` and ``noise_multiplier * clip`` for
``SubsampledGaussian``. Under replace-one neighbours the L2 sensitivity of a clipped sum is
``2 * clip``; the noise is *not* doubled, the accountants charge the doubled sensitivity instead.
Peer libraries read multipliers in their own units: ``accounting.peers`` converts, in one place
(``peers.to_dp_event`` gives the dp-accounting event of a mechanism or composition; this module knows
nothing of dp-accounting, so it imports no accountant).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError, require_number


class Sampling(enum.Enum):
    """How the participants of one release are chosen."""

    POISSON = "poisson"  # each participant independently with probability `rate`
    FIXED_SIZE = "fixed-size"  # exactly round(rate * population) without replacement

    @classmethod
    def parse(cls, value: Sampling | str) -> Sampling:
        return _parse_enum(cls, value, "sampling")


class Neighbouring(enum.Enum):
    """Which datasets count as neighbours (the unit of privacy is one participant's record)."""

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        return _parse_enum(cls, value, "neighbouring")


def _parse_enum(cls, value, field_name):
    if isinstance(value, cls):
        return value
    for member in cls:
        if str(value).lower().replace("_", "-") == member.value:
            return member
    choices = ", ".join(m.value for m in cls)
    raise ConfigurationError(field_name, f"unknown value {value!r}; choose one of {choices}")


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """Return ``rng`` if it is a Generator (or a generator of another array backend, which has the same
    drawing methods and an ``xp`` namespace), else a new NumPy Generator seeded by it."""
    if isinstance(rng, np.random.Generator) or hasattr(rng, "xp"):
        return rng
    return np.random.default_rng(rng)


def array_namespace(rng, *arrays):
    """The array namespace a release runs in: the generator's (``rng.xp``, e.g. PyTorch through
    ``array_api_compat``), else PyTorch's for tensor inputs, else NumPy itself (the default path, so
    NumPy results stay bit for bit what they were)."""
    if hasattr(rng, "xp"):
        return rng.xp
    if any(type(a).__module__.split(".")[0] == "torch" for a in arrays):
        import array_api_compat

        return array_api_compat.array_namespace(*arrays)
    return np


def as_float_array(xp, value, rng=None):
    """``value`` as a float64 array of namespace ``xp`` (on the generator's device, if it has one)."""
    if xp is np:
        return np.asarray(value, dtype=float)
    device = getattr(rng, "device", None)
    return xp.asarray(value, dtype=xp.float64, device=device)


@dataclass(frozen=True)
class _AdditiveNoise:
    """A query answer plus independent noise of scale ``noise_multiplier * sensitivity``."""

    noise_multiplier: float
    sensitivity: float = 1.0

    def __post_init__(self):
        require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
        require_number("sensitivity", self.sensitivity, low=0, low_open=True)

    @property
    def noise_scale(self) -> float:
        return float(self.noise_multiplier) * float(self.sensitivity)

    def release(self, values, rng) -> np.ndarray:
        """Return ``values`` plus independent noise of this mechanism's law and scale (an array of the
        generator's backend)."""
        rng = as_generator(rng)
        values = as_float_array(array_namespace(rng, values), values, rng)
        return values + self._draw(rng, tuple(values.shape))


@dataclass(frozen=True)
class Gaussian(_AdditiveNoise):
    """Gaussian mechanism: adds N(0, (noise_multiplier * sensitivity)^2) to each coordinate.

    ``sensitivity`` is the L2 sensitivity of the released query under the neighbouring relation
    the caller declares; ``noise_multiplier`` is the noise standard deviation in units of it.
    """

    @property
    def noise_std(self) -> float:
        return self.noise_scale

    def _draw(self, rng: np.random.Generator, shape) -> np.ndarray:
        return rng.normal(0.0, self.noise_scale, size=shape)


@dataclass(frozen=True)
class Laplace(_AdditiveNoise):
    """Laplace mechanism with scale ``noise_multiplier * sensitivity`` (L1 sensitivity).

    It is (1/noise_multiplier, 0)-DP."""

    @property
    def scale(self) -> float:
        return self.noise_scale

    def _draw(self, rng: np.random.Generator, shape) -> np.ndarray:
        return rng.laplace(0.0, self.noise_scale, size=shape)


@dataclass(frozen=True)
class SubsampledGaussian:
    """Sample participants, clip each vector to L2 norm ``clip``, (weighted) sum, add Gaussian noise.

    Attributes:
        rate: sampling probability q in (0, 1] (Poisson) or batch fraction (fixed size).
        noise_multiplier: noise standard deviation in units of ``clip`` (per unit of weight).
        clip: L2 norm bound of one participant's vector.
        sampling: Poisson or fixed-size without replacement (needs ``population``).
        neighbouring: add/remove one or replace one participant.
        population: declared number of participants; required for fixed-size sampling.
    """

    rate: float
    noise_multiplier: float
    clip: float = 1.0
    sampling: Sampling = Sampling.POISSON
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
    population: int | None = field(default=None)

    def __post_init__(self):
        require_number("rate", self.rate, low=0, low_open=True, high=1)
        require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
        require_number("clip", self.clip, low=0, low_open=True)
        object.__setattr__(self, "sampling", Sampling.parse(self.sampling))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))
        if self.population is not None:
            object.__setattr__(
                self, "population", int(require_number("population", self.population, low=1, integer=True))
            )
        if self.sampling is Sampling.FIXED_SIZE:
            if self.population is None:
                raise ConfigurationError("population", "fixed-size sampling needs the declared population")
            if self.batch_size < 1:
                raise ConfigurationError(
                    "rate", f"rate * population rounds to an empty batch ({self.rate} * {self.population})"
                )

    # ----- derived quantities -------------------------------------------------------------
    @property
    def batch_size(self) -> int | None:
        """Fixed batch size round(rate * population), or None for Poisson sampling."""
        if self.sampling is not Sampling.FIXED_SIZE:
            return None
        return int(round(self.rate * self.population))

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the clipped (unit-weight) sum under the neighbouring relation."""
        factor = 2.0 if self.neighbouring is Neighbouring.REPLACE_ONE else 1.0
        return factor * float(self.clip)

    @property
    def noise_std(self) -> float:
        """Noise standard deviation of an unweighted release."""
        return float(self.noise_multiplier) * float(self.clip)

    # ----- execution ----------------------------------------------------------------------
    def sample(self, rng, num_participants: int, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        """Boolean mask of shape ``batch_shape + (num_participants,)`` of who takes part."""
        rng = as_generator(rng)
        shape = tuple(batch_shape) + (int(num_participants),)
        if self.sampling is Sampling.POISSON:
            return rng.random(shape) < self.rate
        size = self.batch_size
        if size > num_participants:
            raise ConfigurationError("population", f"batch of {size} from {num_participants} participants")
        keys = rng.random(shape)
        xp = array_namespace(rng, keys)
        ranks = xp.argsort(xp.argsort(keys, axis=-1), axis=-1)
        return ranks < size

    def clip_vectors(self, vectors) -> np.ndarray:
        """Scale every vector (last axis) down to L2 norm at most ``clip``."""
        xp = array_namespace(None, vectors)
        vectors = as_float_array(xp, vectors)
        norms = xp.sqrt(xp.sum(vectors * vectors, axis=-1, keepdims=True))
        if xp is np:  # min(1, clip / norm), dividing only where the norm exceeds the clip (no overflow warning)
            scale = np.ones_like(norms)
            np.divide(self.clip, norms, out=scale, where=norms > self.clip)
            return vectors * scale
        return vectors * (self.clip / xp.clip(norms, min=float(self.clip)))  # = min(1, clip / norm)

    def block_noise_std(self, weights=None) -> np.ndarray | float:
        """Noise standard deviation per output block for a weighted release.

        With weights ``w`` of shape (k, n) (block i gets ``sum_n w[i, n] x_n``), block i receives noise
        ``noise_multiplier * clip * sqrt(k) * max_n |w[i, n]|``. Whitened, one participant then moves the
        release by at most ``1/noise_multiplier`` (times 2 under replace-one), so the accountants'
        analysis of the unit-weight mechanism applies unchanged.
        """
        if weights is None:
            return self.noise_std
        w = _weights_array(weights)
        if w.ndim < 2:
            w = w[None]
        xp = array_namespace(None, w)
        return self.noise_std * math.sqrt(w.shape[0]) * xp.max(xp.abs(w), axis=1)

    def add_noise(self, sums, rng, weights=None) -> np.ndarray:
        """Add the release noise to already clipped (weighted) sums of shape (..., [k,] d)."""
        rng = as_generator(rng)
        xp = array_namespace(rng, sums)
        sums = as_float_array(xp, sums, rng)
        std = self.block_noise_std(weights)
        if weights is not None and len(weights.shape if hasattr(weights, "shape") else np.shape(weights)) == 2:
            std = as_float_array(xp, std[:, None], rng)
        return sums + rng.standard_normal(tuple(sums.shape)) * std

    def release(self, contributions, rng, weights=None, *, scale: float = 1.0, return_mask: bool = False):
        """Run the mechanism on the participants' vectors.

        ``contributions`` has shape (..., n, d): an optional leading batch of independent releases, n
        participants, d coordinates. ``weights`` is None (plain sum), shape (n,) (weighted sum) or (k, n)
        (k weighted sums, returned as (..., k, d)). ``scale`` multiplies the whole noisy output (a
        public post-processing such as 1/q). An empty sample releases pure noise.
        """
        rng = as_generator(rng)
        xp = array_namespace(rng, contributions)
        x = as_float_array(xp, contributions, rng)
        if x.ndim < 2:
            raise ConfigurationError("contributions", "expected shape (..., participants, dimension)")
        mask = self.sample(rng, x.shape[-2], tuple(x.shape[:-2]))
        clipped = self.clip_vectors(x) * mask[..., None]
        if weights is None:
            sums = xp.sum(clipped, axis=-2)
        else:
            w = _weights_array(weights)
            if w.shape[-1] != x.shape[-2] or w.ndim > 2:
                raise ConfigurationError("weights", f"shape {tuple(w.shape)} does not match {x.shape[-2]} participants")
            sums = _weighted_sums(clipped, as_float_array(xp, w if w.ndim == 2 else w[None], rng))
            if w.ndim == 1:
                sums = sums[..., 0, :]
        noisy = self.add_noise(sums, rng, weights) * scale
        return (noisy, mask) if return_mask else noisy


Mechanism = Gaussian | Laplace | SubsampledGaussian


def _weights_array(weights):
    """Release weights as a float64 array: NumPy for anything but a tensor, which stays on its device
    (a batched run on a GPU passes weights it already holds there: nothing is copied per release)."""
    if type(weights).__module__.split(".")[0] == "torch":
        return array_namespace(None, weights).astype(weights, array_namespace(None, weights).float64, copy=False)
    return np.asarray(weights, dtype=float)


def _weighted_sums(clipped: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sums[..., k, :] = sum_n weights[k, n] clipped[..., n, :]`` (broadcast products for a few
    participants, which is faster than a batched matrix product of tiny matrices)."""
    if weights.shape[1] > 4:
        return weights @ clipped
    sums = weights[:, 0, None] * clipped[..., 0, None, :]
    for n in range(1, weights.shape[1]):
        sums += weights[:, n, None] * clipped[..., n, None, :]
    return sums


@dataclass(frozen=True)
class Composition:
    """Adaptive composition of heterogeneous mechanisms, each run ``count`` times."""

    parts: tuple[tuple[Mechanism, int], ...]

    def __post_init__(self):
        parts = tuple((m, c) for m, c in self.parts)
        if not parts:
            raise ConfigurationError("composition", "needs at least one (mechanism, count) pair")
        checked = []
        for mechanism, count in parts:
            if not isinstance(mechanism, (Gaussian, Laplace, SubsampledGaussian)):
                raise ConfigurationError("composition", f"not a mechanism: {mechanism!r}")
            checked.append((mechanism, int(require_number("steps", count, low=1, integer=True))))
        object.__setattr__(self, "parts", tuple(checked))

    @classmethod
    def of(cls, mechanism: Mechanism, count: int = 1) -> Composition:
        """``mechanism`` released ``count`` times (adaptively composed)."""
        return cls(((mechanism, count),))

    def __add__(self, other: Composition) -> Composition:
        return Composition(self.parts + other.parts)

    @property
    def total_count(self) -> int:
        """The number of releases, over every part."""
        return sum(c for _, c in self.parts)


def as_composition(value: Composition | Mechanism) -> Composition:
    """``value`` itself if it is a composition, else one release of the mechanism."""
    return value if isinstance(value, Composition) else Composition.of(value, 1)
