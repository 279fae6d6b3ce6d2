"""What a Flower DP configuration really runs, accounted beside what is usually claimed for it.

Facts about flwr 1.42 the accounting rests on (read from its source):

- the central-DP wrappers add Gaussian noise of std ``z * C / m`` to the *mean* of the ``m`` sampled
  clients' clipped updates, i.e. ``z * C`` on their sum: a noise multiplier ``z`` in units of one
  client's norm bound ``C``;
- the clients of a round are drawn **fixed-size without replacement** (``random.sample``); the only
  neighbouring relation under which that sampler has an analysis is **replace-one**, whose L2
  sensitivity of the sum is ``2 C``, so dp-accounting's RDP accountant must be given ``z / 2``;
- Flower's accountant reports the fixed-clipping wrapper only with ``sampling_method='no-amplification'``
  (a plain Gaussian of multiplier ``z`` composed over rounds).

``FlowerDpConfig`` holds the numbers; ``accounted_rows`` returns the epsilons of what Flower runs (an upper
bound, and beside it a lower bound: the exact epsilon of a replace-one pair the sampler realises) and of
the usual claims, each from our accountants over ``accounting`` objects.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

from accounting.base import run_accountant
from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian
from accounting.registry import get_accountant
from accounting.replace_one_pair import worst_pair_epsilon

CENTRAL_KINDS = ("server-fixed", "client-fixed", "server-adaptive", "client-adaptive")
KINDS = CENTRAL_KINDS + ("local",)
WEIGHTINGS = ("examples", "equal")
CLAIMS = ("no-amplification", "poisson", "z-unchanged")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_claims(names, field: str = "claim") -> tuple[str, ...]:
    """The claims named, each of ``CLAIMS`` and each once (a repeated one would repeat its finding)."""
    names = tuple(names)
    word = "assumption" if field == "assumptions" else "claim"  # `dpaudit flower --assumptions`
    for k, name in enumerate(names):
        if name not in CLAIMS:
            hint = " (a claimed epsilon is --claim-epsilon)" if word == "assumption" and _is_number(name) else ""
            raise ConfigurationError(field, f"unknown {word} {name!r}; choose from {', '.join(CLAIMS)}{hint}")
        if name in names[:k]:
            raise ConfigurationError(field, f"{word} {name!r} is named twice")
    return names


@dataclass(frozen=True)
class FlowerDpConfig:
    """One Flower DP setting.

    kind : which wrapper (``server-fixed`` ...) or ``local`` for ``LocalDpMod``.
    noise_multiplier, clip : z and C of a central wrapper (C: the initial norm for adaptive ones).
    sampled, nodes : clients per round ``m`` and connected nodes ``N`` (Flower samples m of N).
    rounds : number of server rounds (one noisy release each).
    weighting : ``examples`` (FedAvg weights by reported example counts) or ``equal``.
    local_epsilon, local_delta : LocalDpMod's per-round (epsilon, delta), for ``kind='local'``.
    update_noise_multiplier : z_u of an adaptive wrapper, the multiplier of the noise on the update (the
        larger one; ``noise_multiplier`` is the combined z it makes with the clipped count's noise); None
        for the fixed wrappers.
    """

    kind: str
    rounds: int
    nodes: int
    sampled: int
    noise_multiplier: float | None = None
    clip: float = 1.0
    weighting: str = "examples"
    local_epsilon: float | None = None
    local_delta: float | None = None
    update_noise_multiplier: float | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigurationError("kind", f"unknown Flower DP kind {self.kind!r}; choose from {', '.join(KINDS)}")
        if self.weighting not in WEIGHTINGS:
            raise ConfigurationError("weighting", f"unknown weighting {self.weighting!r}; choose examples or equal")
        require_number("rounds", self.rounds, low=1, integer=True)
        require_number("nodes", self.nodes, low=1, integer=True)
        require_number("sampled", self.sampled, low=1, high=self.nodes, integer=True)
        require_number("clip", self.clip, low=0, low_open=True)
        if self.kind in CENTRAL_KINDS:
            require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
            if self.update_noise_multiplier is not None:
                require_number("update_noise_multiplier", self.update_noise_multiplier,
                               low=self.noise_multiplier * (1 - 1e-9))
        else:
            require_number("local_epsilon", self.local_epsilon, low=0, low_open=True)
            require_number("local_delta", self.local_delta, low=0, high=1, low_open=True, high_open=True)

    @property
    def rate(self) -> float:
        return self.sampled / self.nodes

    def runs(self) -> Composition:
        """What Flower runs: fixed-size sampling without replacement, replace-one, z in units of C."""
        return Composition.of(self._fixed_size(self.noise_multiplier), self.rounds)

    def claim(self, name: str) -> Composition:
        """The composition a usual claim accounts (see ``CLAIMS``)."""
        z = self.noise_multiplier
        if name == "no-amplification":  # Flower's accountant: a Gaussian of multiplier z per round
            return Composition.of(Gaussian(z, 1.0), self.rounds)
        if name == "poisson":  # what users usually assume: Poisson rate m/N, add/remove
            return Composition.of(SubsampledGaussian(self.rate, z, self.clip), self.rounds)
        if name == "z-unchanged":  # replace-one without replacement, z handed over as if it were z/2
            return Composition.of(self._fixed_size(2.0 * z), self.rounds)
        raise ConfigurationError("claim", f"unknown claim {name!r}; choose from {', '.join(CLAIMS)}")

    def _fixed_size(self, z: float) -> SubsampledGaussian:
        return SubsampledGaussian(self.rate, z, self.clip, sampling=Sampling.FIXED_SIZE,
                                  neighbouring=Neighbouring.REPLACE_ONE, population=self.nodes)


# accountant for each row: the tightest of ours that analyses it
RUNS_ACCOUNTANT = "dpa-rdp"
CLAIM_ACCOUNTANTS = {"no-amplification": "pld", "poisson": "pld", "z-unchanged": "dpa-rdp"}


def epsilon_of(composition: Composition, accountant: str, delta: float) -> float:
    """Epsilon at ``delta`` from our accountant ``accountant`` (ConfigurationError if it cannot answer)."""
    result = run_accountant(get_accountant(accountant), composition, delta=delta)
    if not result.ok:
        raise ConfigurationError("accountant", f"{accountant} cannot account this Flower setting: {result.reason}")
    return float(result.epsilon)


def accounted_rows(config: FlowerDpConfig, delta: float) -> dict[str, dict]:
    """``{row: {"epsilon", "accountant", "describes"}}`` for ``runs`` (upper bound), ``worst-pair`` (lower bound)
    and each claim (central DP only). Memoised (a copy each call): ``dpaudit flower`` asks for the same setting's
    rows four times (configuration check, its findings, the run's check and its findings), 3 s each."""
    return copy.deepcopy(_accounted_rows(config, float(delta)))


@functools.lru_cache(maxsize=32)
def _accounted_rows(config: FlowerDpConfig, delta: float) -> dict[str, dict]:
    if config.kind not in CENTRAL_KINDS:
        raise ConfigurationError("kind", "accounted rows exist for the central-DP wrappers only")
    rows = {"runs": {"epsilon": epsilon_of(config.runs(), RUNS_ACCOUNTANT, delta), "accountant": RUNS_ACCOUNTANT,
                     "describes": "fixed-size without replacement, replace-one, sensitivity 2C (what Flower runs)"}}
    described = {"no-amplification": "Gaussian of multiplier z per round, no sampling (Flower's accountant)",
                 "poisson": "Poisson sampling at rate m/N, add/remove (the usual assumption)",
                 "z-unchanged": "without replacement, replace-one, z passed unchanged (sensitivity taken as C)"}
    rows["worst-pair"] = {"epsilon": worst_pair_epsilon(config.rate, 1.0 / config.noise_multiplier, config.rounds,
                                                        delta),
                          "accountant": "dp-accounting PLD, rounded down",
                          "describes": "the replace-one pair this sampler realises (accounting.replace_one_pair): a "
                                       "lower bound on what Flower runs"}
    for name in CLAIMS:
        accountant = CLAIM_ACCOUNTANTS[name]
        rows[name] = {"epsilon": epsilon_of(config.claim(name), accountant, delta), "accountant": accountant,
                      "describes": described[name]}
    return rows
