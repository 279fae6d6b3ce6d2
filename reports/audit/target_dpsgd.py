"""The DP-SGD target: a user's own training, ``setup = "file.py:function"`` or ``train = "file.py:function"``
(``--allow-code``). The train form runs the user's training function as written and checks what it ran
(``reports.audit.dpsgd_train_form``); the rest of this docstring is the setup form.

The function takes no arguments and returns a ``dpfed.dpsgd.DpsgdSetup`` (our opacus loop trains the user's
model, data and loss) or the dict ``dpaudit opacus-check`` takes (the user's own ``make_private`` objects:
``attacks.probes.dpsgd_user``; ``input_key``/``label_key``: where its dict batches hold the model's input and
the label, ``attacks.opacus_checks.batches``). Accounting: a Poisson-subsampled Gaussian, add/remove one record, at the
rate, noise multiplier and clip the accountant is told, composed over the steps the loop runs. For the dict,
opacus-check's reading of the loader and its noise measurement (``attacks.opacus_checks``) add their findings:
a rate, scheme, normalisation, step or noise that differs from what was told is a finding with its
corrected epsilon, critical (a VIOLATION) when the reported epsilon understates it; a parameter the model
trains that the private optimizer does not hold is critical too.

Probes: all-iterates, last-iterate (gradient canaries; on the dict through the user's own sampler and
optimizer), final-model (input canary; a ``DpsgdSetup`` only), and the one-run gradient canaries
(``dpsgd-one-run``: one training, each canary in by a fair coin; its budget, with no ``trials`` given, is
``canaries_per_run`` capped by the set-up, and its power is not planned). With no ``trials`` given, a
multi-run probe's budget is planned so that the audit refutes an implementation adding half the configured
noise with probability at least 0.9: the half-noise world's true epsilon from our PLD accountant; a search
by simulation of the all-iterates test (``attacks.probes.dpsgd_power``) from the larger of
``attacks.power``'s Gaussian-DP budget (too optimistic at small rates) and the planner's floor for
certifying the claim with a perfect attack, rounded up to whole runs of canaries.
"""

from __future__ import annotations

import math

from accounting import strict
from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, SubsampledGaussian
from reports.audit.accounting import describe
from reports.audit.model import Finding, TargetSpec, Unavailable
from reports.audit.targets import BaseTarget, ProbeDeclined, register

SCHEMA = {
    "setup": strict.STRING,  # exactly one of setup and train
    "train": strict.STRING,
    "argv": strict.STRINGS,  # train only: the training's command line
    "user_key": strict.STRING,  # train only, with a claim per user: each record's user
    "canaries": strict.INTEGER,  # train only: gradient canaries through the training's own optimizer (one run)
    "canary_seed": strict.INTEGER,
    "canaries_per_run": strict.INTEGER,
    "noise_repetitions": strict.INTEGER,
    "noise_false_alarm": strict.NUMBER,
    "input_key": strict.OneOf((strict.STRING, strict.STRINGS)),  # opacus-check's dict: keys of dict batches
    "label_key": strict.STRING,
}
BATCH_KEYS = ("input_key", "label_key")
DEFAULT_CANARIES = 2000
MAX_DEFAULT_TRIALS = 2 * 10**5  # a planned budget above this is capped (and the report says so)
FINAL_MODEL_DEFAULT_TRIALS = 1000  # a trained model per trial: the planned budget, capped here unless trials is given
POWER_PROBABILITY = 0.9
ONE_RUN_PROBE = "dpsgd-one-run"  # one training with many canaries, each in by a fair coin (Steinke et al.)
GRADIENT_PROBES = ("dpsgd-all-iterates", "dpsgd-last-iterate", "bug-dpsgd-half-noise", ONE_RUN_PROBE)


@register
class DpsgdTarget(BaseTarget):
    """A user's DP-SGD training: a ``DpsgdSetup`` or the user's own opacus objects."""

    algorithms = ("dp-sgd",)
    binders = {name: "_gradient_probe" for name in GRADIENT_PROBES} | {"dpsgd-final-model": "_final_model_probe"}
    runs_implementation = True

    def default_probes(self) -> tuple:
        """With no probe listed: the all-iterates gradient canaries, budget planned to refute half the noise (the
        train form measures its run itself: none)."""
        from reports.audit.model import ProbeSpec

        return () if self.train_observed is not None else (ProbeSpec("dpsgd-all-iterates", "end-to-end", None),)

    def implementation_test(self) -> str | None:
        if self.train_observed is not None:
            return "the noise the training's private optimizer added, measured at every step"
        return "the noise measured through the user's optimizer (opacus-check)" if self.check is not None else None

    @classmethod
    def parameter_schema(cls) -> dict:
        return SCHEMA

    def __init__(self, spec: TargetSpec):
        from attacks.probes.dpsgd_user import OpacusRun, load_user_setup

        super().__init__(spec)
        p = strict.check_table("parameters", dict(spec.parameters), self.parameter_schema())
        if spec.claim.neighbouring != "add-remove":
            raise ConfigurationError("claim.neighbouring", "DP-SGD with Poisson sampling is accounted for add/remove "
                                     "neighbours (one record added or removed)")
        if ("setup" in p) == ("train" in p):
            raise ConfigurationError("parameters", "give exactly one of setup (a set-up function) and train (your "
                                     "own training function, run as written)")
        self.train_observed = None
        if "train" in p:
            self._init_train(p)
            return
        _refuse_train_keys(p)
        self.setup_spec = p["setup"]
        self.canaries = int(p.get("canaries_per_run", DEFAULT_CANARIES))
        if self.canaries < 1:
            raise ConfigurationError("parameters.canaries_per_run", "must be at least 1")
        try:
            built = load_user_setup(self.setup_spec)
        except ConfigurationError as exc:
            raise ConfigurationError("parameters.setup", str(exc).split(": ", 1)[-1]) from None
        self.opacus = isinstance(built, OpacusRun)
        self.batch_keys = {k: p[k] for k in BATCH_KEYS if k in p}
        if self.batch_keys and not self.opacus:
            raise ConfigurationError(f"parameters.{next(iter(self.batch_keys))}", "names a key of dict batches of "
                                     "the user's data loader (opacus-check's dict); a DpsgdSetup's data are tensors")
        if self.batch_keys:
            from attacks.probes.dpsgd_user import with_batch_keys

            try:
                with_batch_keys(built, **self.batch_keys)
            except ConfigurationError as exc:
                raise ConfigurationError(f"parameters.{exc.field}", str(exc).split(": ", 1)[-1]) from None
        self.untracked = built.untracked_parameters() if self.opacus else []
        self.check = None
        if self.opacus:
            from attacks.probes.dpsgd_user import most_canaries

            self.canaries = min(self.canaries, most_canaries(built))
            if not self.untracked:  # a parameter outside the optimizer is critical on its own
                self.check = _opacus_check(built, spec.claim.delta, p, spec.claim.epsilon)
        self.examples, self.steps = int(built.examples), int(built.steps)
        self.mechanism = SubsampledGaussian(built.sample_rate, built.noise_multiplier, built.clip)
        self.releases = self.steps
        self.planned: dict[str, dict] = {}
        self.one_run_default: int | None = None  # the canaries default_trials gave the one-run probe, if it did

    def _init_train(self, p: dict) -> None:
        """The train form (``reports.audit.dpsgd_train_form``): the user's training run once, observed."""
        from reports.audit.dpsgd_train_form import observe_training

        for key in ("canaries_per_run", "noise_repetitions", "noise_false_alarm", *BATCH_KEYS):
            if key in p:
                raise ConfigurationError(f"parameters.{key}", "applies to the setup form only")
        self.setup_spec, self.opacus, self.batch_keys, self.untracked, self.check = p["train"], False, {}, [], None
        self.train_observed = observe_training(p["train"], self.spec.claim, p.get("argv", ()), p.get("user_key"),
                                               int(p.get("canaries", 0)), int(p.get("canary_seed", 0)))
        if self.train_observed["mechanism"] is None:
            raise ConfigurationError("parameters.train", f"{p['train']} took no private optimizer step (no "
                                                         "make_private, or no step of its optimizer): nothing to audit")
        datasets = self.train_observed["training"].datasets
        self.examples = len(datasets[0]) if datasets else 0
        self.mechanism, self.releases = self.train_observed["mechanism"], self.train_observed["releases"]
        self.unaccountable = self.train_observed.get("unaccountable")
        self.steps, self.canaries = self.releases, DEFAULT_CANARIES
        self.planned, self.one_run_default = {}, None

    def default_units(self) -> tuple[int | None, str]:
        return self.examples, "records"

    def user_code(self) -> list[str]:
        """The set-up file whose code the sections ran (a cached section is reused only while it is unchanged;
        modules it imports from elsewhere are not hashed)."""
        return [self.setup_spec.rpartition(":")[0]]

    def report_parameters(self) -> dict:
        form = ("the user's training, run as written and observed" if self.train_observed is not None else
                "opacus objects (opacus-check's dict)" if self.opacus else "DpsgdSetup (our opacus loop)")
        out = {"setup": self.setup_spec, "form": form, "records": self.examples, "steps": self.steps,
               "mechanism": describe(self.mechanism), "releases": self.releases}
        if self.train_observed is not None:  # an accountant's bound proves the claim only with every premise observed
            from attacks.opacus_checks.premises import unobserved

            out["premises_not_observed"] = unobserved(self.train_observed["checked"])
        elif self.opacus:  # the user's objects are run, never the user's loop
            out["premises_not_observed"] = _setup_unobserved(self.check)
        return out

    def utility(self, seed, runs: int, log):
        return Unavailable("the dp-sgd target audits privacy only; measure utility in your own training loop")

    def _gradient_probe(self, name: str, explicit: dict) -> dict:
        if name == "dpsgd-last-iterate" and any(p.name == "dpsgd-all-iterates" for p in self.spec.probes):
            raise ProbeDeclined("dpsgd-last-iterate adds no power beside dpsgd-all-iterates: the final parameters "
                                "are a post-processing of the iterates that probe reads, at the same cost per trial "
                                "(list it alone to attack the final parameters only)")
        if self.train_observed is not None:
            raise ProbeDeclined(f"{name} runs gradient canaries through a set-up's objects; the train form's "
                                "checks read what the training ran (its noise measured at every step)")
        if self.untracked:
            raise ProbeDeclined(f"{name} reads the private optimizer's releases; parameters outside it "
                                f"({', '.join(self.untracked)}) are trained with no noise at all")
        if self.opacus:
            from attacks.probes.dpsgd_user import check_poisson, load_user_setup

            reason = check_poisson(load_user_setup(self.setup_spec))
            if reason:
                raise ProbeDeclined(f"{name}: {reason}")
        return {"setup": self.setup_spec, "delta": self.claim.delta, "canaries_per_run": self.canaries,
                **self.batch_keys}

    def _final_model_probe(self, name: str, explicit: dict) -> dict:
        if self.train_observed is not None:
            raise ProbeDeclined(f"{name} trains models from a DpsgdSetup; the train form runs the user's training once")
        if self.opacus:
            raise ProbeDeclined(f"{name} trains models with a per-example loss; opacus-check's dict has none "
                                "(return a dpfed.dpsgd.DpsgdSetup to attack the final model)")
        return {"setup": self.setup_spec, "delta": self.claim.delta}

    def default_trials(self, name: str, confidence: float) -> int:
        """Trials per world when the configuration gives none (see the module docstring); the plan is kept
        in ``self.planned`` for the report's finding."""
        if name == ONE_RUN_PROBE:  # one run of the set-up's canaries; its power is not planned (the finding)
            self.one_run_default = self.canaries
            return self.canaries
        if name == "dpsgd-final-model":
            plan = dict(self._gradient_plan(confidence))
            plan.update(trials=min(plan["trials"], FINAL_MODEL_DEFAULT_TRIALS), final_model=True)
        else:
            plan = dict(self._gradient_plan(confidence))
        cap = getattr(self, "_caps", {}).get(name)
        if cap is not None and cap["trials"] < plan["trials"]:
            plan.update(trials=cap["trials"], budget={**cap, "planned_trials": plan["trials"]})
        self.planned[name] = plan
        return int(plan["trials"])

    def cap_trials(self, name: str, trials: int, budget: float, seconds: float) -> None:
        """``--budget``: the planned trials of ``name`` cut to what fits ``budget`` seconds (whole runs of the
        set-up's canaries, at least one), as timed (``seconds`` for the planned trials)."""
        runs = max(1, trials // self.canaries)
        self._caps = {**getattr(self, "_caps", {}), name: {"trials": runs * self.canaries, "seconds": budget,
                                                           "planned_seconds": seconds}}

    def one_run_instead(self, name: str):
        """``--budget`` too short for a multi-run gradient probe to certify anything: one training with canaries."""
        from reports.audit.model import ProbeSpec

        if name in ("dpsgd-all-iterates", "dpsgd-last-iterate") and self.train_observed is None:
            return ProbeSpec(ONE_RUN_PROBE, "end-to-end", None)
        return None

    def _gradient_plan(self, confidence: float) -> dict:
        """The all-iterates budget that refutes half the noise with simulated probability >= 0.9, from the
        larger of the Gaussian-DP model's budget and the planner's floor (computed once per target)."""
        if getattr(self, "_plan", None) is not None:
            return self._plan
        from attacks.planner import trials_needed
        from attacks.power import HALF_NOISE, reduce_composition, trials_for_power
        from attacks.probes.base import accountant_epsilon
        from attacks.probes.dpsgd_power import ACCEPT, REPEATS, half_noise_trials

        claim, m = self.claim, self.mechanism
        per_probe = 1.0 - (1.0 - confidence) / max(1, len(self.spec.probes))  # the runner's Bonferroni split
        half = Composition.of(SubsampledGaussian(m.rate, HALF_NOISE * m.noise_multiplier, m.clip), self.releases)
        half_epsilon = accountant_epsilon(half, claim.delta)
        model = trials_for_power(reduce_composition(self.composition()).mu_at(HALF_NOISE), claim.epsilon,
                                 claim.delta, per_probe, POWER_PROBABILITY, MAX_DEFAULT_TRIALS)
        floor = trials_needed(claim.epsilon, claim.delta, per_probe)
        start = max(model or MAX_DEFAULT_TRIALS, floor)
        found = None
        if half_epsilon is None or half_epsilon > claim.epsilon:
            found = half_noise_trials(m.rate, m.noise_multiplier, self.releases, claim.epsilon, claim.delta,
                                      per_probe, start, MAX_DEFAULT_TRIALS, multiple=self.canaries)
        trials = found or self.canaries * math.ceil(MAX_DEFAULT_TRIALS / self.canaries)
        self._plan = {"trials": int(trials), "half_noise_epsilon": half_epsilon, "gdp_model_trials": model,
                      "floor": floor, "confidence": per_probe, "capped": found is None,
                      "simulation": f"at least {ACCEPT} of {REPEATS} simulated audits refuting"}
        return self._plan

    def measured_probes(self, confidence: float) -> tuple:
        """The train form's canaries through the user's own optimizer, as a probe that ran (none otherwise)."""
        if self.train_observed is None:
            return ()
        from reports.audit.dpsgd_train_form import canary_section

        section = canary_section(self.train_observed, self.claim, confidence)
        return () if section is None else (section,)

    def findings(self, verdict, probes) -> list:
        if self.train_observed is not None:
            from reports.audit.dpsgd_train_form import train_findings

            return train_findings(self.train_observed)
        out = []
        for name in self.untracked:
            out.append(Finding("dpsgd-check", "critical", {
                "code": "parameter-outside-private-optimizer", "parameter": name,
                "message": f"parameter {name} requires gradients but the private optimizer does not hold it: "
                           "trained, it is updated with no clipping and no noise (its accounted epsilon is "
                           "infinite); give every trained parameter to make_private's optimizer or freeze it"}))
        if self.check is not None:
            for f in self.check["findings"]:
                out.append(Finding("dpsgd-check", f["severity"], {"code": f["code"], "message": f["message"],
                                                                   **f.get("values", {})}))
            rows = self.check["rows"]
            out.append(Finding("dpsgd-check", "info", {
                "code": "accounted-rows", "opacus_epsilon": rows["opacus"]["epsilon"],
                "runs_epsilon": rows["runs"]["epsilon"],
                "message": f"opacus-check: told {rows['opacus']['analysis']}: epsilon {rows['opacus']['epsilon']:.4g}; "
                           f"runs: {rows['runs']['analysis']}: epsilon {rows['runs']['epsilon']:.4g}"}))
        out += [self._budget_finding(name, plan) for name, plan in self.planned.items()]
        return out + self._one_run_findings(probes)

    def _one_run_findings(self, probes) -> list:
        """The one-run probe's own findings (its training's opacus record) and what its budget is: the set-up's
        canaries, with no planned power against half the noise (the multi-run gradient probes carry it)."""
        out = []
        for probe in (p for p in probes if p.name == ONE_RUN_PROBE and p.outcome == "ran"):
            out += [Finding("dpsgd-check", f["severity"], {"code": f["code"], "probe": probe.name,
                                                           "message": f["message"], **f.get("values", {})})
                    for f in probe.findings]
            origin = ("no trials given: canaries_per_run" + (", capped by the set-up" if self.opacus else "")
                      if self.one_run_default == probe.trials else "the trials given")
            out.append(Finding("dpsgd-check", "info", {
                "code": "one-run-budget", "probe": probe.name, "canaries": probe.trials, "ceiling": probe.ceiling,
                "message": f"{probe.name}: one training with {probe.trials} canaries ({origin}), which certifies "
                           f"at most epsilon {probe.ceiling:.3g} even with every guess right; its power against "
                           "half the configured noise is not planned (one run's bound stays far below a multi-run "
                           "audit's): the multi-run gradient probe dpsgd-all-iterates carries it"}))
        return out

    def _budget_finding(self, name: str, plan: dict) -> Finding:
        half = plan["half_noise_epsilon"]
        half_text = "not accounted" if half is None else f"{half:.3g} (PLD)"
        if plan["capped"]:
            how = (f"no budget up to {MAX_DEFAULT_TRIALS:.3g} trials refutes half the noise with probability "
                   f"{POWER_PROBABILITY:g} (simulated), so the cap is used")
        else:
            how = (f"planned so that an implementation adding half the configured noise (true epsilon {half_text} "
                   f"against the claimed {self.claim.epsilon:g}) is refuted with probability at least "
                   f"{POWER_PROBABILITY:g} ({plan['simulation']} at confidence {plan['confidence']:.4g}; the "
                   f"Gaussian-DP model alone would have said {plan['gdp_model_trials']} trials)")
        if plan.get("final_model"):
            how += (f"; a trained model per trial, so capped at {FINAL_MODEL_DEFAULT_TRIALS} (the gradient probes "
                    "carry the power)")
        if plan.get("budget"):
            b = plan["budget"]
            how = (f"cut to fit --budget ({b['seconds']:.0f} s for this probe) from the {b['planned_trials']:.3g} "
                   f"planned to refute half the noise with probability {POWER_PROBABILITY:g} (timed at "
                   f"{b['planned_seconds']:.0f} s): the power it keeps is stated with the probe")
        return Finding("dpsgd-check", "info", {
            "code": "default-budget", "probe": name, **plan,
            "message": f"no trials given for {name}: {plan['trials']:.3g} trials per world, {how}"})


def _setup_unobserved(check: dict | None) -> list[str]:
    """The premises the set-up form (the user's opacus objects, not their loop) cannot observe: what the loop feeds
    the optimizer, and the steps when the set-up does not tell them."""
    from attacks.opacus_checks.premises import PREMISES

    out = [f"{PREMISES['updates']} (the set-up form runs the user's objects, not their loop)",
           f"{PREMISES['multiplicity']} (the loop's backward passes per step are not seen)"]
    if check is not None and check["steps"].get("accounted_from", "loop") == "loop":
        out.append(f"{PREMISES['accounting']} (the steps are assumed to be the loop's: no accounted_epochs or "
                   "accounted_steps)")
    return out


def _refuse_train_keys(params: dict) -> None:
    for key in ("argv", "user_key", "canaries", "canary_seed"):
        if key in params:
            raise ConfigurationError(f"parameters.{key}", "applies to the train form only")


def _opacus_check(run, delta: float, params: dict, claim: float | None = None) -> dict:
    """opacus-check on the user's objects: the loader read over one epoch, the noise measured, findings; the claim
    written in the configuration is the one checked (against the epsilon of the steps the loop runs, as the train
    form checks it), whatever the set-up's dict says."""
    import dataclasses

    from attacks.opacus_checks.check import check_setup
    from attacks.opacus_checks.noise import DEFAULT_FALSE_ALARM, DEFAULT_REPETITIONS, measure_noise
    from attacks.opacus_checks.sampler import read_loader

    setup = run.setup
    try:
        facts = read_loader(setup.data_loader)
        noise = measure_noise(setup.model, setup.optimizer, setup.privacy_engine, setup.data_loader,
                              repetitions=int(params.get("noise_repetitions", DEFAULT_REPETITIONS)),
                              false_alarm=float(params.get("noise_false_alarm", DEFAULT_FALSE_ALARM)),
                              input_key=setup.input_key, label_key=setup.label_key)
        if claim is not None:
            setup = dataclasses.replace(setup, claim_epsilon=float(claim))
        return check_setup(setup, facts, noise, delta)
    except ConfigurationError as exc:
        raise ConfigurationError("parameters.setup", f"opacus-check: {str(exc).split(': ', 1)[-1]}") from None
