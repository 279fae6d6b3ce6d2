"""What each parameter a user writes means, and the values it takes: the audit configuration's
``[target.parameters]`` keys (each target's ``parameter_schema()``) and each probe's ``--param`` keys (its
dataclass fields). The reference pages (``reports/reference_pages.py``) print these texts beside the keys;
tests/test_reference_descriptions.py fails when a key the reader accepts has none here.

A text is a string, or a function returning one where the allowed values come from the code (so a new choice
appears on the page without an edit here). A meaning is looked up for its owner (a target or probe class, by
name) first, then in ``SHARED``, which holds the keys that mean the same wherever they appear.
"""

from __future__ import annotations

import dataclasses
import re

# "(default ...)" in a shared text: a probe's own default is in its own column
_DEFAULT_NOTE = re.compile(r"\s*\(default[^()]*(?:\([^()]*\)[^()]*)*\)")


def _choices(values) -> str:
    return ", ".join(f"`{v}`" for v in values)


def _from(module: str, name: str, before: str = "", after: str = ""):
    """A text naming the choices ``module.name`` holds (a tuple, or a dict's keys), read when the page is built."""
    def text() -> str:
        import importlib

        return before + _choices(getattr(importlib.import_module(module), name)) + after
    return text


def _fts_choice(name: str):
    def text() -> str:
        from dpfed.fts import config

        return _choices(getattr(config, name))
    return text


SHARED = {
    "noise_multiplier": "Noise standard deviation in units of the clip (or sensitivity); a number > 0.",
    "rate": "Sampling rate q of each release (Poisson: each unit takes part with probability q); in (0, 1].",
    "clip": "L2 norm bound of one unit's contribution; a number > 0.",
    "sampling": "How each release's participants are chosen: `poisson` (each independently) or `fixed-size` "
                "(without replacement; needs `population`).",
    "population": "Declared number of participants (fixed-size sampling); a whole number >= 1.",
    "dim": "Dimension of the problem; a whole number >= 1.",
    "horizon": "Number of rounds the run lasts (T); a whole number >= 1.",
    "rounds": "Number of rounds (releases); a whole number >= 1.",
    "records": "Records each worker or the data set holds (record- or dataset-level privacy); a whole number >= 1.",
    "step": "Step size of the learner; a number > 0 (default: the algorithm's tuned value).",
    "canary_seed": "Seed of the canaries' directions and signs; a whole number >= 0 (default 0).",
    "planted_bug": "A deliberate implementation bug, for checking that an audit catches it; `none` (default) runs "
                   "the correct code.",
    "input_key": "For a data loader yielding dicts: the key (or list of keys) holding the model's input (default: "
                 "the key named like a parameter of the model's `forward`, else a usual name such as `x` or `img`).",
    "label_key": "For a data loader yielding dicts: the key holding the label (default: `label`, `labels`, `y`, "
                 "`target` or `targets`, the first present).",
    "canaries_per_run": "Gradient canaries inserted in one training run; a whole number >= 1 (default 2000, capped "
                        "by the set-up).",
    "objective": "The objective function the algorithm optimises (its test problem).",
    "candidates": "Number of candidate points the acquisition is evaluated on; a whole number >= 1.",
    # the planted-bug switch of the mechanism probes (attacks.probes.planted)
    "bug": _from("attacks.probes.planted", "BUGS", "A planted bug of the release code, only for audits: ",
                 "; none: the correct code."),
    "noise_reduction": "How much the `weak-noise` planted bug divides the noise by; > 0.",
}

TARGETS = {
    "MechanismTarget": {
        "type": lambda: "The mechanism: " + _choices(__import__("reports.audit.target_mechanism",
                                                                  fromlist=["TYPES"]).TYPES) + " (default `gaussian`).",
        "calibration": "Instead of `noise_multiplier` (gaussian only): calibrate the noise to the claim's epsilon "
                       "and delta with the `classic` formula or the `analytic` Gaussian mechanism.",
        "steps": "Number of times the mechanism is released (composed); a whole number >= 1 (default 1).",
        "noise_multiplier": "Noise scale in units of the sensitivity (Gaussian: standard deviation; Laplace: scale); "
                            "> 0. Required unless `calibration` is given.",
        "sensitivity": "L2 (Gaussian) or L1 (Laplace) sensitivity of the released query; > 0 (default 1). Not for "
                       "`subsampled-gaussian`.",
        "rate": "Sampling rate of `subsampled-gaussian`; in (0, 1] (default 1).",
        "clip": "L2 clip of one participant's vector (`subsampled-gaussian`); > 0 (default 1).",
        "sampling": "`poisson` (default) or `fixed-size` (`subsampled-gaussian` only; fixed-size needs "
                    "`population`).",
    },
    "PneTarget": {
        "objective": lambda: "The test function the clients' bandit optimises: " + _choices(
            __import__("dpfed.pne.objectives", fromlist=["OBJECTIVES"]).OBJECTIVES) + " (default `garland`).",
        "clients": "Number of federated clients; a whole number >= 1 (default 10).",
        "horizon": "Rounds (pulls) each client makes; a whole number >= 1 (default 2000).",
        "calibration": "How each reward's Gaussian noise is calibrated to (`epsilon`, `dp_delta`): `classic` or "
                       "`analytic` (default).",
        "epsilon": "Epsilon each reward's noise is calibrated to; > 0 (default: the claim's epsilon).",
        "dp_delta": "Delta each reward's noise is calibrated to; in (0, 1) (default: the claim's delta).",
        "c": "Confidence constant of the clients' tree search (the seed's c); > 0 (default 0.1).",
        "planted_bug": lambda: "A deliberate implementation bug, only for audits: " + _choices(
            __import__("dpfed.pne.private", fromlist=["PLANTED_BUGS"]).PLANTED_BUGS) + " (default `none`).",
    },
    "FlowerAppTarget": {
        "app": "The Flower app project's directory (relative to the configuration file); required. Runs its code: "
               "needs `--allow-code`.",
        "run_config": "Overrides of the app's `[tool.flwr.app.config]`, as `flwr run --run-config` takes them "
                      "(nested tables become dotted keys).",
        "num_supernodes": "Number of SuperNodes (clients) the simulation runs; a whole number >= 1; required.",
        "claims": lambda: "Accounting assumptions to check the run against, any of " + _choices(
            __import__("dpfed.flower.config", fromlist=["CLAIMS"]).CLAIMS) + " (default: none; every row is shown).",
        "transcript_alpha": "False-alarm level of each noise test on the run's transcript; in (0, 1) (default "
                            "0.001).",
        "canary_seed": "Seed of the canaries' directions and signs; in [0, 2^31) (default 0).",
    },
    "DpsgdTarget": {
        "setup": "`FILE.py:FUNCTION` building your DP-SGD set-up (a `DpsgdSetup`, or the dict `dpaudit "
                 "opacus-check --setup` takes); exactly one of `setup` and `train`. Needs `--allow-code`.",
        "train": "`FILE.py:FUNCTION` running your own training as written, observed while it runs; exactly one of "
                 "`setup` and `train`. Needs `--allow-code`.",
        "argv": "`train` only: the training's command line, for a `main` that parses arguments (a list of strings).",
        "user_key": "`train` only, with a claim per user: the key of each record's user.",
        "canaries": "`train` only: gradient canaries passed through the training's own optimizer in its one run; "
                    "a whole number >= 0 (default 0: none).",
        "canary_seed": "`train` only: seed of the canaries; in [0, 2^32) (default 0).",
        "canaries_per_run": "`setup` only: gradient canaries per training run; a whole number >= 1 (default 2000, "
                            "capped by the set-up).",
        "noise_repetitions": "`setup` only (opacus dict): optimizer steps run with zero gradients to measure the noise "
                             "it adds; "
                             "a whole number >= 1 (default 16).",
        "noise_false_alarm": "`setup` only (opacus dict): false-alarm level of the noise test; in (0, 1) "
                             "(default 1e-6).",
    },
    "FedZeroTarget": {
        "dim": "Dimension d of the decision variable; a whole number >= 3 (default 10).",
        "workers": "Number of workers m; a whole number >= 1 (default 4).",
        "rounds": "Number of rounds n; a whole number >= 1 (default 10000).",
        "geometry": "`l2` (ball, Euclidean regulariser; default) or `l1` (simplex, entropy regulariser); the "
                    "losses are the matching norm losses.",
        "estimator": "Zeroth-order gradient estimator: `two-point` (default) or `one-point`.",
        "randomisation": "Distribution of the random directions: `l1` (default) or `l2`.",
        "records": "Contexts (records) each worker holds; a whole number >= 1 (default 20).",
        "step": "Step size eta; > 0 (default: Corollary 4.2's).",
        "perturbation": "Perturbation radius h of the estimator; > 0 (default: Corollary 4.2's).",
        "conf_delta": "Confidence of the high-probability regret bound (not the DP delta); in (0, 1) (default "
                      "0.05).",
        "unit": "Unit of privacy (dp-fedzero): `worker` (default; all of one worker's data) or `record` (one record "
                "of a worker).",
        "noise": "Where the noise is added (dp-fedzero, worker level): `scalar` (default; each worker's scalar) or "
                 "`vector` (a trusted aggregator noises the sum).",
        "rate": "Sampling rate of workers (worker level) or records (record level) per round; in (0, 1] "
                "(default 1).",
        "noise_multiplier": "Noise standard deviation in units of `clip`; > 0 (default 1).",
        "clip": "Clip C of each released scalar; > 0 (default 1).",
    },
    "FkmTarget": {
        "dim": "Dimension of the decision variable; a whole number >= 1 (default 5).",
        "horizon": "Number of rounds T; a whole number >= 1 (default 10000).",
        "radius": "Radius of the ball K the learner plays in; > 0 (default 1).",
        "loss": "The synthetic loss family: `linear` (default) or `quadratic`.",
        "lipschitz": "Lipschitz constant G of the linear losses (the quadratic family has G = 2); > 0 (default 1).",
        "spread": "How much the losses vary around their common direction; >= 0 (default 0.5).",
        "exploration": "Exploration radius delta; in (0, `radius`) (default: the corrected optimum).",
        "step": "Step size eta; > 0 (default: the corrected optimum).",
        "unit": "Unit of privacy (dp-fkm): `event` (default; one loss) or `dataset` (one record of `records`).",
        "epsilon": "Epsilon the noise is calibrated to when `noise_multiplier` is not given; > 0 (default: the "
                   "claim's epsilon).",
        "noise_multiplier": "Noise standard deviation in units of the sensitivity; > 0; none: calibrated to "
                            "`epsilon`.",
        "rate": "Dataset level: sampling rate of records per round; in (0, 1] (default 0.1).",
        "records": "Dataset level: number of records N; a whole number >= 1 (default 200).",
    },
    "DuetsTarget": {
        "algorithm": "`duets` or `dp-duets`; if given, it must be the target's `algorithm`.",
        "objective": lambda: "The test function: " + _choices(
            __import__("dpfed.duets.objectives", fromlist=["OBJECTIVES"]).OBJECTIVES) + " (default `branin`).",
        "num_agents": "Number of agents N; a whole number >= 1 (default 10).",
        "horizon": "Total queries T; a whole number >= 1 (default 50).",
        "first_epoch": "Length T_1 of the first epoch; a whole number >= 1 (default 2).",
        "candidates": "Candidate points discretising the domain; a whole number >= 2 (default 2000).",
        "dim": "Dimension of the sphere objectives (`cosine`, `polynomial`); a whole number >= 1 (default 10).",
        "lengthscale": "Kernel lengthscale; > 0 (default: 0.2 for Branin, 1 otherwise).",
        "objective_seed": "Seed of the objective's random draw; a whole number >= 0 (default 0).",
        "noise_std": "Standard deviation of the observation noise; >= 0 (default 0.2).",
        "lam": "Regularisation lambda of the surrogate; > 0 (default 0.2).",
        "p0": lambda: "Inducing-point constant p0: a number > 0 (default 10) or a closed form, " + _choices(
            __import__("dpfed.duets.schedule", fromlist=["P0_FORMS"]).P0_FORMS) + ".",
        "beta": "Confidence-width multiplier: a number >= 0 (default 1) or `theory` (Lemma 2.5's value).",
        "delta": "Confidence level of the bandit guarantee (not the DP delta); in (0, 1) (default 0.1).",
        "delta_prime_form": lambda: "Form of delta' in the theory beta: " + _choices(
            __import__("dpfed.duets.schedule", fromlist=["DELTA_PRIME_FORMS"]).DELTA_PRIME_FORMS)
        + " (default `lemma4.2`).",
        "rkhs_bound": "RKHS norm bound B (theory beta only); >= 0 (default 1).",
        "noise_proxy": "Sub-Gaussian noise proxy R (theory beta only); > 0 (default: `noise_std`).",
        "elimination": "Elimination rule: `paper` (default), `code` (the public code's UCB >= max LCB) or `off` "
                       "(never eliminates).",
        "jitter": "Diagonal jitter added for numerical stability; > 0 (default 1e-8).",
        "unit": "Unit of privacy (dp-duets): `agent` (default; one agent's whole reward record) or `reward` (one "
                "reward; replace-one, rate 1).",
        "rate": "Poisson sampling rate of agents per epoch; in (0, 1] (default 1; must be 1 at reward level).",
        "noise_multiplier": "Noise standard deviation in units of the clip; > 0 (default 1).",
        "reward_clip": "Rewards are clipped to [-c, c]; c > 0 (default 4).",
        "agent_clip": "Clip of one agent's statistic per epoch: `public` (default; the data-independent bound, "
                      "never binds) or `sqrt` (`clip_scale` times a square-root bound; may bind).",
        "clip_scale": "Scale of the `sqrt` agent clip; > 0 (default 1).",
        "neighbouring": "`add-remove` or `replace-one` (default: add-remove at agent level, replace-one at reward "
                        "level).",
        "noise_correction": "Widen the elimination threshold for the added noise; true (default) or false.",
        "noise_delta": "Failure probability of that noise correction; in (0, 1) (default 0.05).",
        "dp_delta": "The delta at which run reports state epsilon; in (0, 1) (default 1e-5).",
    },
    "FtsTarget": {
        "preset": lambda: "The preset run the other keys start from (each key given here overrides it): "
        + _fts_choice("PRESETS")() + " (default `svm-breast-cancer`, whose values are the defaults below).",
        "algorithm": "`dp-fts-de` or `dp-fts`; if given, it must be the target's `algorithm`.",
        "objective": lambda: "The black-box function the agents optimise: " + _fts_choice("OBJECTIVES")()
        + " (default `svm-breast-cancer`).",
        "num_agents": "Number of agents N; a whole number >= 1 (default 29).",
        "rounds": "Bayesian-optimisation rounds after initialisation (T, each a released broadcast); a whole number "
                  ">= 1 (default 60).",
        "init_points": "Initial random queries of each agent; a whole number >= 1 (default 10).",
        "init": "Initial design: `subregion` (default for `dp-fts-de`) or `whole` (default otherwise).",
        "explore_uniform": "Ablation: query a uniform point with probability 1 - p_t; true or false (default false).",
        "num_features": "Random Fourier features of the shared model (the uploads' size); a whole number >= 1 "
                        "(default 100).",
        "lengthscale": "Lengthscale of the shared kernel; > 0 (default 0.01).",
        "kernel_variance": "Variance of the shared kernel; > 0 (default 1).",
        "obs_noise_var": "Observation-noise variance of the shared model; > 0 (default 1e-6).",
        "local_lengthscale": "Lengthscale of each agent's local model; > 0 (default 0.2).",
        "local_num_features": "Random Fourier features of each agent's local model; a whole number >= 1 "
                              "(default 100).",
        "local_noise_var": "Observation-noise variance of the local model; > 0 (default 1e-4).",
        "subregions": "Sub-regions P of distributed exploration (DE); a whole number >= 1 (default 4).",
        "rate": "Poisson sampling rate of agents per round; in (0, 1] (default 0.35).",
        "noise_multiplier": "Noise standard deviation in units of `clip`; > 0 (default 1).",
        "clip": "L2 clip of one agent's upload; > 0 (default 22).",
        "delta": "The DP delta of run reports; in (0, 1) (default num_agents^-1.1).",
        "sampling": "`poisson` (default) or `fixed-size`.",
        "neighbouring": "`add-remove` (default) or `replace-one`; the target sets it from the claim.",
        "population": "Declared agent slots (weights and 1/q use them); a whole number >= 1 (default "
                      "`num_agents`).",
        "empty_sample_fallback": "What a round with no sampled agent releases: `noise` (default) or `uniform` (the "
                                 "reference code's bug).",
        "planted_bug": lambda: "A deliberate server bug, only for audits: " + _choices(
            __import__("dpfed.fts.server", fromlist=["PLANTED_BUGS"]).PLANTED_BUGS) + " (default `none`).",
        "mixing": lambda: "Schedule of the probability of playing local Thompson sampling: " + _choices(
            __import__("dpfed.fts.schedules", fromlist=["MIXING_SCHEDULES"]).MIXING_SCHEDULES)
        + " (default `reciprocal`).",
        "weight_gap": "Softmax exponent gap of the sub-region weights at the start; a number (default 15).",
        "weight_hold": "Rounds the gap is held before it decays; a whole number >= 0 (default 10).",
        "weight_decay": "Rounds over which the gap decays linearly to 0; a whole number >= 0 (default 30).",
        "candidates": "Random candidate points of the acquisition; a whole number >= 1 (default 500).",
        "refine_steps": "Refinement steps around the best candidate; a whole number >= 0 (default 3).",
        "refine_samples": "Samples per refinement step; a whole number >= 1 (default 12).",
        "dim": "Dimension of the `synthetic` objective; a whole number >= 1 (default 2).",
        "heterogeneity": "How much the agents' `synthetic` objectives differ; a number (default 0.1).",
        "gp_lengthscale": "Lengthscale of the `synthetic` objective's Gaussian process; > 0 (default 0.1).",
        "objective_noise_var": "Observation-noise variance of the objective; > 0 (default 1e-4).",
        "data_seed": "Seed of the objective's data; a whole number >= 0 (default 0).",
        "landmine_path": "Path of `LandmineData.mat`, which the `landmine` objective needs (not bundled).",
    },
}

def _names(what: str) -> str:
    if what == "algorithms":
        from reports.audit import targets

        targets._load_builtin_targets()
        return _choices(targets.TARGETS)
    from accounting.registry import ACCOUNTANTS

    return _choices(ACCOUNTANTS)


#: the audit configuration's own tables (``reports.audit.config``'s schemas), table by table
CONFIGURATION = {
    "top level": {
        "title": "The audit's title, shown in the report; a string (default: a generic title).",
        "seed": "Seed of every random draw of the audit; a whole number >= 0 (default 0; `--seed` wins).",
        "confidence": "Confidence of the audit's lower bounds, split over its probes; in (0, 1) (default 0.95).",
        "target": "One `[[target]]` table per audited system; at least one.",
    },
    "target": {
        "name": "The target's name in the report; a string (default: its `algorithm`).",
        "algorithm": lambda: "The audited system, one of " + _names("algorithms") + "; required.",
        "description": "A sentence on the target, shown in the report; a string.",
        "accountants": lambda: "The accountants to run, a list of " + _names("accountants")
        + " (default: all of them).",
        "utility_runs": "Runs of the algorithm averaged for the utility curve; a whole number >= 1 (default 1).",
        "reference_delta": 'A second delta every accountant is also run at; a number in (0, 1) or `"N^-x"` '
                           "(default 1e-5).",
        "parameters": "The algorithm's own parameters: `[target.parameters]`, per algorithm (below).",
        "claim": "The privacy claim under audit: `[target.claim]`; required.",
        "probes": "The probes to run: `[[target.probes]]` (default: the target's own; `probes = []` runs none).",
    },
    "claim": {
        "epsilon": "The claimed epsilon; a number > 0; required.",
        "delta": 'The claimed delta: a number in (0, 1), or a power `"N^-x"` such as `"29^-1.1"`; required.',
        "neighbouring": "The neighbouring relation the claim is made for: `add-remove` (one unit added or removed) "
                        "or `replace-one` (one unit replaced); required.",
        "unit": 'The unit of privacy, in words (e.g. `"one record"`, `"one client"`); required.',
        "source": "Where the claim comes from (a paper, a model card); a string, shown in the report.",
        "units": "How many units the data holds, to judge delta against (delta should be well below 1/units); a "
                 "whole number >= 1.",
        "unit_plural": 'The unit\'s plural, for the report\'s sentences (default `"units"`).',
    },
    "probes": {
        "name": "The probe, one of those listed by `dpaudit attack --list` (see Probes and estimators); required.",
        "kind": "`mechanism` (the mechanism alone) or `end-to-end` (the whole system); default: `end-to-end` for a "
                "probe whose name says so, else `mechanism`.",
        "trials": "Trials per world (or canaries of a one-run probe); a whole number >= 1. Required, except where "
                  "the target plans a budget (dp-sgd).",
        "params": "The probe's parameters, as `--param` takes them (see each probe's table on the Probes and "
                  "estimators page).",
        "batch_size": "Trials drawn per batch (memory against speed); a whole number >= 1 (default: the probe's).",
    },
}


def configuration_meanings(table: str, schema: dict) -> dict[str, str | None]:
    """Each key of one of the configuration's own tables (``CONFIGURATION``) and its meaning."""
    own = CONFIGURATION[table]
    return {key: _text(own[key]) if key in own else None for key in schema}


PROBES = {
    "GaussianProbe": {
        "epsilon": "Epsilon the noise is calibrated to (with `delta`); > 0 (default 2). Ignored beside "
                   "`noise_multiplier`.",
        "delta": "Delta of the calibration and of the bounds; in (0, 1) (default 1e-5).",
        "noise_multiplier": "Explicit noise multiplier instead of a calibration; > 0 (default: calibrated).",
        "sensitivity": "Sensitivity of the scalar query (the canary's shift); > 0 (default 1).",
        "calibration": "`analytic` (default) or `classic` Gaussian calibration.",
    },
    "LaplaceProbe": {
        "epsilon": "Pure epsilon of the mechanism (scale = sensitivity / epsilon); > 0 (default 2).",
        "delta": "Delta of the bounds; in (0, 1) (default 1e-5).",
        "sensitivity": "L1 sensitivity of the scalar query (the canary's shift); > 0 (default 1).",
    },
    "SubsampledGaussianProbe": {
        "rate": "Poisson sampling rate of each round; in (0, 1].",
        "rounds": "Releases composed; a whole number >= 1.",
        "canary_norm": "Norm of the canary's vector (clipped to `clip`; none: exactly the clip).",
        "others": "Further participants, sending known zero vectors; a whole number >= 0.",
        "delta": "Delta of the bounds; in (0, 1).",
        "canary": "The canary's vector (a list of numbers, not all zero); none: `canary_norm` times the first unit "
                  "vector. Not with `canary_norm`.",
        "dim": "Dimension of each participant's vector; a whole number >= 1; none: the canary's length (1 without "
               "a `canary`).",
        "canary_index": "With `weights`: the canary's column.",
        "weights": "Public weights (k rows of `others + 1`): the weighted release of the DP-FTS-DE server.",
        "batch_axes": "1 or 2: how trials and rounds are passed to the release (one batch axis or two).",
    },
    "FtsServerProbe": {
        "rate": "Poisson sampling rate of agents per round; in (0, 1].",
        "agents": "Number of agents; a whole number >= 1.",
        "subregions": "Sub-regions P; a whole number >= 1.",
        "clip_total": "Total clip of an agent's upload across the blocks; > 0.",
        "schedule": _from("attacks.probes.fts", "SCHEDULES", "Sub-region weight schedule: ",
                          " (`reference`: the reference code's decaying gap)."),
        "canary": "The canary agent's slot; a whole number in [0, agents - 1].",
        "gap": "Softmax exponent gap of the weights.",
        "hold": "Rounds the gap is held.",
        "decay": "Rounds over which the gap decays.",
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "FtsEndToEndProbe": {
        "preset": "The FTS preset the run starts from (see the configuration reference).",
        "rate": "Poisson sampling rate of agents per round; in (0, 1]; none: the preset's.",
        "noise_multiplier": "Noise standard deviation in units of the clip; > 0; none: the preset's.",
        "refine_steps": "Refinement steps of the acquisition; a whole number >= 0.",
        "num_features": "Random Fourier features of the uploads.",
        "objective_basis": "Basis functions of the `synthetic` objective; a whole number >= 1.",
        "canary_norm": "Norm of the canary agent's upload.",
        "score": _from("attacks.probes.fts_end_to_end", "SCORES", "What the attack scores: ", "."),
        "empty_sample_fallback": "`noise` or `uniform` (the reference code's bug).",
        "data_seed": "Seed of the objective's data.",
    },
    "PneRewardProbe": {
        "epsilon": "Epsilon each reward's noise is calibrated to; > 0.",
        "delta": "Delta of the calibration and the bounds; in (0, 1).",
        "calibration": "`classic` or `analytic`.",
        "pulls": "Rewards of the attacked arm in one release.",
        "canary_value": "The canary reward (values above 1 test the clipping).",
        "other_reward": "The other rewards' value.",
    },
    "PneEndToEndProbe": {
        "epsilon": "Epsilon each reward's noise is calibrated to; > 0.",
        "delta": "Delta of the calibration and the bounds; in (0, 1).",
        "calibration": "`classic` or `analytic`.",
        "clients": "Number of clients.",
        "c": "Confidence constant of the clients' tree search.",
        "client": "The client whose reward is the canary.",
        "canary_value": "The canary reward.",
        "final_upload": "Whether the clients upload their final, horizon-cut phase; true or false.",
        "score": _from("attacks.probes.pne", "SCORES", "What the attack scores: ", "."),
    },
    "FkmLossProbe": {
        "epsilon": "Epsilon the noise is calibrated to (without `noise_multiplier`); > 0.",
        "delta": "Delta of the calibration and the bounds; in (0, 1).",
        "private": "Whether noise is added (false: the non-private seed algorithm).",
        "canary_scale": "Size of the canary loss relative to the bound.",
        "lipschitz": "Lipschitz constant G of the losses.",
        "radius": "Radius of the ball K.",
        "canary_round": "The round whose loss is the canary; a whole number in [0, horizon - 2].",
    },
    "FkmDatasetEndToEndProbe": {
        "rate": "Poisson sampling rate of records per round; in (0, 1].",
        "exploration": "Exploration radius delta.",
        "public_seed": "Seed of the public randomness (directions), shared by both worlds.",
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "FedZeroScalarProbe": {
        "rate": "Poisson sampling rate of workers; in (0, 1].",
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "FedZeroEndToEndProbe": {
        "private": "Whether noise is added (false: the non-private seed algorithm).",
        "unit": "`worker` or `record`.",
        "view": _from("attacks.probes.fedzero", "VIEWS", "What the attacker sees: ",
                      " (`server`: the uploads; `broadcast`: what the server sends back)."),
        "rate": "Sampling rate of workers or records; in (0, 1].",
        "geometry": "`l2` or `l1`.",
        "workers": "Number of workers m.",
        "public_seed": "Seed of the public randomness (directions), shared by both worlds.",
        "delta": "Delta of the bounds; in (0, 1).",
        "canary_scale": "Size of the canary worker's contribution relative to the clip.",
    },
    "DuetsReleaseProbe": {
        "unit": "`agent` or `reward`.",
        "rate": "Poisson sampling rate of agents; in (0, 1].",
        "epoch_length": "Queries in the attacked epoch.",
        "agents": "Number of agents.",
        "reward_clip": "Rewards are clipped to [-c, c].",
        "agent_clip": "`public` or `sqrt`.",
        "clip_scale": "Scale of the `sqrt` agent clip.",
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "DuetsEndToEndProbe": {
        "agents": "Number of agents.",
        "unit": "`agent` or `reward`.",
        "reward_clip": "Rewards are clipped to [-c, c].",
        "agent_clip": "`public` or `sqrt`.",
        "clip_scale": "Scale of the `sqrt` agent clip.",
        "elimination": "`paper`, `code` or `off`.",
        "canary_agent": "The agent whose rewards are the canary.",
        "replay_seed": "Seed of the replayed run (everything but the noise is shared by the trials).",
        "private": "Whether noise is added (false: the non-private DUETS).",
        "delta": "Delta of the bounds; in (0, 1).",
        "canary_scale": "Size of the canary's rewards relative to the clip.",
    },
    "UserMechanismProbe": {
        "function": "`FILE.py:FUNCTION`, your mechanism: called on a data set, returns its release (needs "
                    "`--allow-code`).",
        "datasets": "The two neighbouring data sets (without and with the canary).",
        "classifier": _from("attacks.probes.user", "CLASSIFIERS", "The classifier learned on held-out runs to "
                            "score a release: ", "."),
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "FlowerAppProbe": {
        "app": "The Flower app project's directory.",
        "run_config": "Overrides of the app's run config.",
        "num_supernodes": "Number of SuperNodes the simulation runs.",
        "claims": "Accounting assumptions to check (see `dpaudit flower --help`).",
        "claimed_epsilon": "The user's claimed epsilon (replace-one neighbours), checked against the run; none: "
                           "no claim.",
        "canary_seed": "Seed of the canaries' directions and signs; none: the run's seed.",
        "transcript_alpha": "False-alarm level of each noise test on the transcript; in (0, 1).",
        "insert_canaries": "Whether canary SuperNodes are inserted; true or false (false: a null run).",
        "client_canaries": "Gradient canaries through each client's own private optimizer (DP-SGD inside the "
                           "clients); a whole number >= 0.",
    },
    "DpsgdAllIteratesProbe": {
        "noise_multiplier": "Noise multiplier of the training; > 0; none: the set-up's. Not with your own opacus "
                            "objects (they fix it).",
        "sample_rate": "Poisson sampling rate of records per step; in (0, 1]; none: the set-up's.",
        "epochs": "Epochs the training runs; a whole number >= 1; none: the set-up's.",
        "clip": "Per-example gradient clip; > 0; none: the set-up's.",
        "learning_rate": "Learning rate of the training; > 0; none: the set-up's.",
        "setup": "`FILE.py:FUNCTION` returning a `DpsgdSetup` or opacus-check's dict (needs `--allow-code`); empty: "
                 "the bundled example (logistic regression on breast-cancer data).",
        "planted_bug": _from("attacks.probes.dpsgd", "PLANTED_BUGS", "A planted bug, only for audits: ",
                             " (`half-noise`: opacus adds half the noise)."),
        "delta": "Delta of the bounds; in (0, 1).",
    },
    "DpsgdOneRunProbe": {
        "view": _from("attacks.probes.dpsgd_one_run", "VIEWS", "What the attacker sees: ", "."),
    },
    "DpsgdFinalModelProbe": {
        "canary_norm": "Norm of the input canary.",
        "trainer": "How the trials' models are trained: `batched` (many models at once) or `opacus` (one per "
                   "trial).",
    },
}
# probe classes that share their parameters' meanings with another
PROBE_ALIASES = {
    "EmptySampleProbe": ("SubsampledGaussianProbe",),
    "FkmEndToEndProbe": ("FkmLossProbe", "FkmDatasetEndToEndProbe"),
    "FedZeroBroadcastProbe": ("FedZeroEndToEndProbe",),
    "PlainDuetsEndToEndProbe": ("DuetsEndToEndProbe",),
    "DpsgdLastIterateProbe": ("DpsgdAllIteratesProbe",),
    "DpsgdOneRunProbe": ("DpsgdAllIteratesProbe",),
    "DpsgdFinalModelProbe": ("DpsgdAllIteratesProbe",),
    "FtsEndToEndProbe": ("TARGET:FtsTarget",),
    "PneEndToEndProbe": ("TARGET:PneTarget",),
    "FkmLossProbe": ("TARGET:FkmTarget",),
    "FkmDatasetEndToEndProbe": ("TARGET:FkmTarget",),
    "FedZeroScalarProbe": ("TARGET:FedZeroTarget",),
    "FedZeroEndToEndProbe": ("TARGET:FedZeroTarget",),
    "DuetsEndToEndProbe": ("TARGET:DuetsTarget",),
    "DuetsReleaseProbe": ("TARGET:DuetsTarget",),
    "FlowerAppProbe": ("TARGET:FlowerAppTarget",),
}


def _text(text) -> str:
    return text() if callable(text) else text


def _lookup(tables: list[dict], key: str) -> str | None:
    for table in tables + [SHARED]:
        if key in table:
            return _text(table[key])
    return None


def _probe_tables(name: str, seen=()) -> list[dict]:
    tables = [PROBES.get(name, {})]
    for alias in PROBE_ALIASES.get(name, ()):
        if alias.startswith("TARGET:"):
            tables.append(TARGETS[alias.split(":", 1)[1]])
        elif alias not in seen:
            tables += _probe_tables(alias, (*seen, name))
    return tables


def target_parameter_meanings(cls) -> dict[str, str | None]:
    """Each key of the target class's ``parameter_schema()`` and its meaning (None where it has none)."""
    tables = [TARGETS.get(cls.__name__, {})]
    return {key: _lookup(tables, key) for key in cls.parameter_schema()}


def probe_parameters(cls, preset: dict | None = None, exclude=("timeout",)) -> list[tuple[str, str, str, str | None]]:
    """(name, value kind, default, meaning) of each parameter the probe class takes (``--param NAME=VALUE``),
    the default with ``preset`` (a registered name's preset parameters) applied."""
    from accounting.strict import annotation_kind

    preset = preset or {}
    tables = _probe_tables(cls.__name__)
    rows = []
    for f in dataclasses.fields(cls):
        if f.name in exclude:
            continue
        if f.name in preset:
            default = preset[f.name]
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        meaning = _lookup(tables, f.name)
        meaning = None if meaning is None else _DEFAULT_NOTE.sub("", meaning)
        rows.append((f.name, annotation_kind(f.type).name, _default_words(default), meaning))
    return rows


def _default_words(value) -> str:
    if value is None:
        return "none"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)) and len(repr(value)) > 40:
        return f"({type(value).__name__} of {len(value)})"
    return str(value)
