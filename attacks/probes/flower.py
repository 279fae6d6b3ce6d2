"""One-run audit of a Flower app project (``flower-app``): one real Flower run, observed, with canary SuperNodes.

A one-run probe (``one_run = True``): instead of ``scores(world, trials, rng)`` over two worlds it runs the
system once with ``trials`` canaries (``run_once``). The project is run on Flower's simulation engine as ``flwr
run`` runs it (``dpfed.flower.run.run_app``), nothing dry-run: every strategy the app starts is observed where it
starts and, when it is or wraps a Flower central-DP wrapper, recorded; every real client's call is observed for
the private training inside it (opacus). Then, from what ran (``attacks.flower_checks.run_checks``): the
configuration check of each DP strategy as built, with the realised sample size of every round; its transcript
against what the accountant assumed; the clients' own DP composed over their rounds; and the canaries scored and
bounded (``attacks.probes.flower_bounds``). Every check's finding comes back with the bounds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from accounting.errors import ConfigurationError
from attacks.probes.base import Probe
from attacks.probes.one_run import OneRunOutcome, one_run_decision

_RUNS: dict = {}  # observed runs of this process (``FlowerAppProbe.observe``)


def assumptions_for(config, delta: float = 1e-5, claimed_epsilon: float | None = None):
    """What the corrected accounting assumes Flower runs: fixed-size m of N, z, C, one release a round (adaptive
    wrappers: each round's clip, z_u on the update); epsilons compared at ``delta`` with the claim, if any."""
    from attacks.flower_checks.transcript_check import assumptions_from_config

    return assumptions_from_config(config, delta, claimed_epsilon=claimed_epsilon)


@dataclass
class FlowerAppProbe(Probe):
    """The Flower app project in ``app`` (a directory), run with ``run_config`` overrides on ``num_supernodes``
    real SuperNodes plus the canaries; ``claims``: the usual claims to check (``dpfed.flower.config.CLAIMS``);
    ``claimed_epsilon``: the user's epsilon (replace-one), if any; ``insert_canaries=False``: a null run;
    ``canary_seed``: the seed of the canaries' directions and signs when set (else the seed ``run_once`` is given:
    the audit target sets it, so that the run it reads its mechanism from is the run its probe scores);
    ``client_canaries``: gradient canaries through each client's own private optimizer (DP-SGD in the clients)."""

    app: str = ""
    run_config: dict = field(default_factory=dict)
    num_supernodes: int = 10
    claims: tuple = ()
    claimed_epsilon: float | None = None
    transcript_alpha: float = 1e-3
    insert_canaries: bool = True
    canary_seed: int | None = None
    client_canaries: int = 0

    name = "flower-app"
    one_run = True
    run_by = "dpaudit flower APP_DIR --canaries K"  # the app, its run config and the Flower checks: not attack's
    threat_model = "final model and all iterates"
    description = ("canary SuperNodes answering current + s C u (secret sign s) in one run of the Flower app on "
                   "Flower's simulation engine; signs guessed from the cosines with the released models")

    def scores(self, world, trials, rng):
        raise ConfigurationError("probe", "flower-app is a one-run probe: it runs the app once (run_once)")

    def project(self):
        """The project and its fused run config (ConfigurationError for a bad project or run config)."""
        from dpfed.flower.app_project import fused_run_config, read_project

        project = read_project(self.app)
        return project, fused_run_config(project, dict(self.run_config))

    def provenance(self) -> dict:
        """Our code's hashes and the project's own (its .py and .toml files): a saved section of another version
        of the app is not reused."""
        digest = hashlib.sha256()
        root = Path(self.app)
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".toml") and p.is_file()):
            digest.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes())
        return {**super().provenance(), "app_code": digest.hexdigest()}

    def run_seed(self, seed: int) -> int:
        return int(self.canary_seed if self.canary_seed is not None else seed) % 2**31

    def observe(self, canaries: int, seed: int):
        """One run of the app with ``canaries`` canaries seeded ``seed`` (``dpfed.flower.run.AppRun``); a run with
        the same project files, run config, nodes, canaries and seed made earlier in this process is reused."""
        from dpfed.flower.run import RunSettings, run_app

        project, run_config = self.project()
        key = (self.provenance()["app_code"], project.directory, tuple(sorted(run_config.items())),
               self.num_supernodes, int(canaries), int(seed), bool(self.insert_canaries), int(self.client_canaries))
        if key not in _RUNS:
            _RUNS[key] = run_app(project, run_config, RunSettings(self.num_supernodes, canaries, seed,
                                                                  self.insert_canaries, int(self.client_canaries)))
        return _RUNS[key]

    def run_once(self, canaries: int, seed: int, epsilon: float | None, delta: float,
                 confidence: float) -> OneRunOutcome:
        """Run the app once with ``canaries`` canaries, check what ran and score the canaries against
        ``(epsilon, delta)`` (``epsilon`` None: the accounted epsilon of what ran). Canaries that change what is
        sampled, or how the noise relates to the sample, are refused after the run (``run_checks.canary_change``)."""
        from attacks.flower_checks.run_checks import check_run
        from attacks.probes.flower_bounds import check_canary_count

        check_canary_count(canaries, delta, confidence)
        seed = self.run_seed(seed)
        run = self.observe(canaries, seed)
        checked = check_run(run, delta, self.claimed_epsilon, tuple(self.claims), self.transcript_alpha)
        out = [{"code": f.code, "severity": f.severity, "message": f.message, "values": dict(f.values)}
               for f in checked.findings]
        details = run_details(checked, run)
        if checked.rows:
            out.append(accounted_rows_finding(checked.rows))
        power = (checked.transcript or {}).get("power")
        if power:  # the report's Power line states it (reports.power_words)
            out.append({"code": "noise-power", "severity": "info", "values": {"noise_power": power},
                        "message": f"each round's noise test ({power['coordinates']} coordinates) would refute noise "
                                   f"below {power['refuted_ratio']:.3f} of the accounted with probability "
                                   f"{power['probability']:g}"})
        if not canaries or checked.config is None:  # no release recorded: nothing to score (a critical finding)
            return OneRunOutcome([], None, None, None, out, details)
        return self.scored(run, checked, canaries, seed, epsilon, delta, confidence, out, details)

    def scored(self, run, checked, canaries, seed, epsilon, delta, confidence, out, details) -> OneRunOutcome:
        """The canaries of ``run`` scored and bounded, their decision on the claim tested and, where the claim is
        above what this many canaries can show, how many could (``canaries_to_test``)."""
        from attacks.probes.flower_bounds import canary_bounds, canary_scores
        from attacks.probes.one_run import canaries_to_test

        tested = epsilon if epsilon is not None else checked.accounted
        recorder = checked.main.recorder
        numbers = checked.main.round_numbers()
        scored_run = {"transcript": recorder.transcript, "round_numbers": numbers, "canary_nodes": run.canary_nodes,
                      "round_deltas": [recorder.round_deltas[r] for r in numbers], "initial": recorder.initial}
        scored = canary_scores(scored_run, canaries, seed, 1.0 / checked.config.noise_multiplier, delta)
        bounds = canary_bounds(scored, delta, confidence)
        status, p_value, ceiling = one_run_decision(bounds, canaries, tested, delta, confidence)
        out.append(canary_estimate_finding(scored, checked.rows))
        details = {**details, "canaries": scored, "tested_epsilon": tested}
        if status == "INCONCLUSIVE":
            reach = canaries_to_test(tested, delta, confidence, threat_models=2)
            details["canaries_to_test"] = reach
            out.append(untestable_finding(canaries, tested, ceiling, reach, delta))
        return OneRunOutcome(bounds, status, p_value, ceiling, out, details)


def run_details(checked, run) -> dict:
    """What one checked run showed, for the report: the starts, the accounted rows (of the deployment: the real
    SuperNodes), the clients, the transcript and what its check looked at, and the canaries' nodes beside it."""
    config = checked.config
    audited = None
    if config is not None and getattr(run, "canaries", 0):
        records = checked.main.transcript.filter(name="dp_release")
        audited = {"supernodes": run.nodes + run.canaries, "canaries": run.canaries,
                   "sampled": sorted({len(m.payload["sampled"]) for m in records})}
    return {"starts": checked.starts, "rows": checked.rows, "clients": checked.clients, "local": checked.local,
            "config": None if config is None else dict(config.__dict__),
            "configured_num_sampled_clients": checked.configured_m, "accounted_epsilon": checked.accounted,
            "population": None if config is None else config.nodes, "canary_run": audited,
            "transcript_check": checked.transcript, "sensitivity": checked.sensitivity,
            "releases": len(checked.main.round_numbers()) if checked.main else 0,
            "transcript": checked.main.transcript.to_dict() if checked.main else None}


def untestable_finding(canaries: int, tested: float, ceiling: float, reach: dict, delta: float) -> dict:
    """The claim tested lies above what ``canaries`` canaries can show at all: their verdict cannot refute it."""
    if reach["least"] is not None:
        more = f"at least {reach['least']} canaries could (their ceiling exceeds {tested:.4g})"
    else:
        more = (f"no number of canaries can: the rigorous one-run bound's ceiling peaks at {reach['peak']:.3g} (near "
                f"{reach['at']} canaries) at delta {delta:g}")
    return {"code": "canaries-untestable", "severity": "info",
            "values": {"canaries": canaries, "tested_epsilon": tested, "ceiling": ceiling,
                       "least_canaries": reach["least"], "peak_ceiling": reach["peak"]},
            "message": f"INCONCLUSIVE against epsilon {tested:.4g}: {canaries} canaries can show at most epsilon "
                       f"{ceiling:.3g} (every sign guessed right), so their bounds cannot refute it; {more}. The "
                       "canaries give a lower bound on what the run spends, not a test of this claim"}


def accounted_rows_finding(rows: dict) -> dict:
    values = {f"{name}_epsilon": row["epsilon"] for name, row in rows.items()}
    return {"code": "accounted-rows", "severity": "info", "values": values,
            "message": f"what Flower runs (fixed-size without replacement, replace-one, z/2 to the accountant) spends "
                       f"epsilon {rows['runs']['epsilon']:.4g} ({rows['runs']['accountant']}) and at least "
                       f"{rows['worst-pair']['epsilon']:.4g} (the replace-one pair its sampler realises); Flower's "
                       f"accountant without amplification would report {rows['no-amplification']['epsilon']:.4g}, "
                       f"Poisson at m/N {rows['poisson']['epsilon']:.4g}, replace-one with z unchanged "
                       f"{rows['z-unchanged']['epsilon']:.4g}"}


def canary_estimate_finding(canaries: dict, rows: dict) -> dict:
    """The canaries' estimates (not bounds), each with its standard error; one above the proven upper bound is
    said to be the estimate's error, not a leak (only the rigorous bounds can refute a claim)."""
    accounted, realised = rows["runs"]["epsilon"], rows["worst-pair"]["epsilon"]
    values, parts = {"accounted_epsilon": accounted, "realised_epsilon": realised}, []
    for model in ("final_model", "all_iterates"):
        e = canaries[model]["estimate"]
        values[f"{model}_epsilon"], values[f"{model}_mu"] = e["epsilon"], e["mu"]
        se = "" if e.get("mu_stderr") is None else f" +- {e['mu_stderr']:.2g}"
        parts.append(f"{model.replace('_', ' ')} mean-shift epsilon {e['epsilon']:.4g} (mu {e['mu']:.3g}{se})")
    measured = canaries["measured_shift"]
    if measured["participations"]:
        values["measured_shift_epsilon"], values["measured_shift"] = measured["estimate"]["epsilon"], measured["shift"]
        se = "" if measured.get("stderr") is None else f" +- {measured['stderr']:.2g}"
        parts.append(f"measured-shift epsilon {measured['estimate']['epsilon']:.4g} (shift {measured['shift']:.3g}{se} "
                     f"per round against 1/z = {measured['configured_shift']:.3g}, {measured['participations']} "
                     "canary-rounds)")
    above = max(v for k, v in values.items() if k.endswith("_epsilon") and k not in ("accounted_epsilon",
                                                                                     "realised_epsilon")) > accounted
    note = (f"; an estimate above the proven upper bound {accounted:.4g} is the estimate's error (see its standard "
            "error), not a leak: only the rigorous bounds refute a claim") if above else ""
    return {"code": "canary-estimate", "severity": "info", "values": values,
            "message": f"canary estimates (not bounds; +- one standard error): {'; '.join(parts)}; what Flower runs "
                       f"spends at least {realised:.4g} (the replace-one pair its sampler realises) and at most "
                       f"{accounted:.4g}{note}"}
