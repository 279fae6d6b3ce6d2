"""What an audit needs from each kind of audited system ("target"): the mechanism it releases through
and how often, the number of protected units, the parameters its probes share with it, and a utility
run. Algorithms: ``dp-fts-de`` (also ``dp-fts``), ``dp-fed-pne`` and a bare ``mechanism``.

The mechanism is built from the same configuration objects the algorithms use (``FTSConfig.mechanism()``,
``dpfed.pne.private.dp_mechanism``), so the audited parameters are the ones the code runs.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, Gaussian, Laplace, SubsampledGaussian

ALGORITHMS = ("dp-fts-de", "dp-fts", "dp-fed-pne", "mechanism")
MECHANISM_TYPES = ("gaussian", "laplace", "subsampled-gaussian")
MAX_UTILITY_POINTS = 120


def check_algorithm(name) -> str:
    if name not in ALGORITHMS:
        raise ConfigurationError(
            "algorithm", f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}"
        )
    return name


# ----- DP-FTS-DE ------------------------------------------------------------------------------------
def fts_config(target):
    """The ``FTSConfig`` of a DP-FTS(-DE) target: a preset (default svm-breast-cancer) plus overrides."""
    from dpfed.fts import FTSConfig

    params = dict(target.parameters)
    preset = params.pop("preset", "svm-breast-cancer")
    params.setdefault("algorithm", target.algorithm)
    params.setdefault("neighbouring", target.claim["neighbouring"])
    return FTSConfig.from_preset(preset, **params)


def _fts_utility(target, seed: int, runs: int, log) -> dict:
    from attacks.audit_accounting import describe
    from dpfed.fts import run_fts_de
    from dpfed.objectives import make_objective

    config = fts_config(target)
    objective = make_objective(config, np.random.default_rng([seed, 7]))
    curves, compositions = [], set()
    for run in range(runs):
        log(f"  utility run {run + 1}/{runs}")
        result = run_fts_de(config, rng=np.random.default_rng([seed, 1000 + run]), objective=objective)
        curves.append(np.asarray(result.utility, dtype=float))
        composition = result.composition()
        compositions.add(
            "nothing"
            if composition is None
            else " + ".join(f"{describe(m)} x {c}" for m, c in composition.parts)
        )
        metric = result.utility_name
    curves = np.array(curves)
    rounds = list(range(curves.shape[1]))
    from accounting.rdp import epsilon_curve

    steps = np.maximum(np.array(rounds), 1)
    spent = epsilon_curve(config.mechanism(), steps, target.claim["delta"]).tolist()
    spent[0] = 0.0
    note = (
        f"Mean over {runs} runs of the agents' mean {metric} (lower is better) after initialisation "
        f"(round 0) and each broadcast; epsilon spent after each round from the rdp accountant at delta = "
        f"{target.claim['delta']:.3g}. The runs released {', '.join(sorted(compositions))}."
    )
    return _curve(metric, rounds, curves, spent, runs, note, "rdp")


# ----- DP-Fed-PNE -----------------------------------------------------------------------------------
def pne_settings(target) -> dict:
    p = dict(target.parameters)
    settings = {
        "objective": p.pop("objective", "garland"),
        "clients": int(require_number("clients", p.pop("clients", 10), low=1, integer=True)),
        "horizon": int(require_number("horizon", p.pop("horizon", 2000), low=1, integer=True)),
        "calibration": p.pop("calibration", "analytic"),
        "epsilon": require_number("epsilon", p.pop("epsilon", target.claim["epsilon"]), low=0, low_open=True),
        "dp_delta": require_number(
            "dp_delta", p.pop("dp_delta", target.claim["delta"]), low=0, high=1, low_open=True, high_open=True
        ),
    }
    if settings["calibration"] not in ("classic", "analytic"):
        raise ConfigurationError(
            "calibration", f"unknown method {settings['calibration']!r}; choose classic or analytic"
        )
    settings["extra"] = p
    return settings


def _pne_utility(target, seed: int, runs: int, log) -> dict:
    from dpfed.pne.private import run_dp_fed_pne

    s = pne_settings(target)
    curves = []
    for run in range(runs):
        log(f"  utility run {run + 1}/{runs}")
        result = run_dp_fed_pne(
            s["objective"],
            s["clients"],
            s["horizon"],
            epsilon=s["epsilon"],
            dp_delta=s["dp_delta"],
            calibration=s["calibration"],
            seed=int(np.random.SeedSequence([seed, 1000 + run]).generate_state(1)[0]),
            **s["extra"],
        )
        curves.append(np.asarray(result.regret, dtype=float))
    curves = np.array(curves)
    mechanism = target_mechanism(target)[0]
    from accounting.exact import gaussian_epsilon

    spent_value = gaussian_epsilon(1.0 / mechanism.noise_multiplier, target.claim["delta"])
    rounds = list(range(1, curves.shape[1] + 1))
    note = (
        f"Average per-client cumulative regret of DP-Fed-PNE on {s['objective']} with {s['clients']} "
        f"clients, mean over {runs} runs. Event-level privacy: each reward enters one noisy release, so the "
        f"epsilon spent per reward ({spent_value:.4g} at delta = {target.claim['delta']:.3g}, exact profile) "
        f"does not grow with rounds."
    )
    spent = [spent_value] * len(rounds)
    return _curve("cumulative regret per client", rounds, curves, spent, runs, note, "exact")


# ----- shared ---------------------------------------------------------------------------------------
def _curve(metric, rounds, curves, spent, runs, note, accountant: str) -> dict:
    mean = curves.mean(axis=0)
    stderr = curves.std(axis=0, ddof=1) / math.sqrt(runs) if runs > 1 else np.full(mean.shape, np.nan)
    idx = np.unique(np.linspace(0, len(rounds) - 1, min(len(rounds), MAX_UTILITY_POINTS)).round().astype(int))
    return {
        "metric": metric,
        "rounds": [int(rounds[i]) for i in idx],
        "values": [float(mean[i]) for i in idx],
        "stderr": [None if not np.isfinite(stderr[i]) else float(stderr[i]) for i in idx],
        "runs": runs,
        "final": float(mean[-1]),
        "epsilon_spent": [spent[i] for i in idx],
        "epsilon_accountant": accountant,
        "note": note,
    }


def _bare_mechanism(target):
    p = dict(target.parameters)
    kind = p.get("type", "gaussian")
    if kind not in MECHANISM_TYPES:
        raise ConfigurationError(
            "parameters.type", f"unknown mechanism {kind!r}; choose {', '.join(MECHANISM_TYPES)}"
        )
    steps = int(require_number("parameters.steps", p.get("steps", 1), low=1, integer=True))
    if kind == "gaussian" and "calibration" in p:
        from attacks.audit_accounting import gaussian_for

        mech = gaussian_for(target.claim["epsilon"], target.claim["delta"], p["calibration"])
        return Gaussian(mech.noise_multiplier, p.get("sensitivity", 1.0)), steps
    if "noise_multiplier" not in p:
        raise ConfigurationError(
            "parameters.noise_multiplier",
            "a bare mechanism needs its noise multiplier (or calibration = 'classic'|'analytic')",
        )
    if kind == "gaussian":
        return Gaussian(p["noise_multiplier"], p.get("sensitivity", 1.0)), steps
    if kind == "laplace":
        return Laplace(p["noise_multiplier"], p.get("sensitivity", 1.0)), steps
    return SubsampledGaussian(
        p.get("rate", 1.0),
        p["noise_multiplier"],
        p.get("clip", 1.0),
        p.get("sampling", "poisson"),
        target.claim["neighbouring"],
        p.get("population"),
    ), steps


def target_mechanism(target) -> tuple:
    """(mechanism, number of releases) of a target, as the accountants and probes see it."""
    if target.algorithm in ("dp-fts-de", "dp-fts"):
        config = fts_config(target)
        return config.mechanism(), config.rounds
    if target.algorithm == "dp-fed-pne":
        from dpfed.pne.private import dp_mechanism

        s = pne_settings(target)
        return dp_mechanism(s["epsilon"], s["dp_delta"], s["calibration"]), 1
    return _bare_mechanism(target)


def calibration_of(target) -> str | None:
    """The Gaussian calibration formula a target uses, if any."""
    if target.algorithm == "dp-fed-pne":
        return pne_settings(target)["calibration"]
    if target.algorithm == "mechanism":
        return target.parameters.get("calibration")
    return None


def protected_units(target) -> tuple[int | None, str]:
    """How many units of privacy the data holds (for judging delta) and what they are called."""
    if "units" in target.claim:
        return int(target.claim["units"]), target.claim.get("unit_plural", "units")
    if target.algorithm in ("dp-fts-de", "dp-fts"):
        return fts_config(target).num_agents, "agents"
    if target.algorithm == "dp-fed-pne":
        s = pne_settings(target)
        return s["clients"] * s["horizon"], "rewards"
    return None, "units"


def probe_defaults(target) -> dict:
    """Parameters a probe shares with its target (only those the probe class declares are used)."""
    mechanism, steps = target_mechanism(target)
    claim = target.claim
    out = {"delta": claim["delta"], "epsilon": claim["epsilon"], "rounds": steps, "steps": steps}
    if target.algorithm in ("dp-fts-de", "dp-fts"):
        c = fts_config(target)
        out.update(
            rate=c.rate,
            noise_multiplier=c.noise_multiplier,
            agents=c.num_agents,
            subregions=c.effective_subregions,
            sampling=c.sampling,
            objective=c.objective,
        )
    elif target.algorithm == "dp-fed-pne":
        s = pne_settings(target)
        out.update(
            calibration=s["calibration"],
            clients=s["clients"],
            horizon=s["horizon"],
            objective=s["objective"],
            epsilon=s["epsilon"],
            delta=s["dp_delta"],
        )
    else:
        for key in ("noise_multiplier", "sensitivity", "rate", "clip", "sampling", "calibration"):
            if key in target.parameters:
                out[key] = target.parameters[key]
        if isinstance(mechanism, Gaussian):
            out["noise_multiplier"] = mechanism.noise_multiplier
    return out


def utility_run(target, seed: int, runs: int, log=None) -> dict:
    """Utility over rounds (mean of ``runs`` seeded runs) with the privacy spent, or 'not available'."""
    if target.algorithm in ("dp-fts-de", "dp-fts"):
        return _fts_utility(target, seed, runs, log or (lambda msg: None))
    if target.algorithm == "dp-fed-pne":
        return _pne_utility(target, seed, runs, log or (lambda msg: None))
    return {"available": False, "reason": "a bare mechanism has no utility to measure"}


def composition_of(target) -> Composition:
    mechanism, steps = target_mechanism(target)
    return Composition.of(mechanism, steps)
