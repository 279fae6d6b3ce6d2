"""A Flower app project as an audit target (``algorithm = "flower-app"``; needs the ``flower`` extra).

Parameters: ``app`` (the project's directory, relative to the configuration file), ``run_config`` (overrides of
its ``[tool.flwr.app.config]``, as ``flwr run --run-config``), ``num_supernodes`` (the simulation's real nodes),
``claims`` (``dpfed.flower.config.CLAIMS`` to check), ``transcript_alpha`` and ``canary_seed`` (the seed of the
canaries' directions and signs, default 0). The app runs Python code, so the audit needs ``--allow-code``.

Nothing is dry-run: building the target runs the app once on Flower's simulation engine, with the canary
SuperNodes of its ``flower-app`` probe (the probe's ``trials``), observed (``attacks.probes.flower``), and its
mechanism is what that run showed: for a Flower central-DP wrapper, fixed-size sampling of the realised m of the N
connected nodes without replacement, replace-one neighbours (sensitivity 2C), noise multiplier z, one release a
round; for DP-SGD inside the clients (opacus), the Poisson subsampled Gaussian steps of the client whose composed
epsilon is largest. The probe then scores that same run (reused in this process); its checks' findings become
``flower-check`` findings (a critical one makes the target a VIOLATION, ``verdicts.with_critical_findings``).
"""

from __future__ import annotations

from pathlib import Path

from accounting import strict
from accounting.errors import ConfigurationError
from accounting.mechanisms import Neighbouring, Sampling, SubsampledGaussian
from reports.audit.model import Finding, TargetSpec, Unavailable
from reports.audit.targets import BaseTarget, register

SCHEMA = {
    "app": strict.Required(strict.STRING),
    "run_config": strict.ANY_TABLE,
    "num_supernodes": strict.Required(strict.INTEGER),
    "claims": strict.STRINGS,
    "transcript_alpha": strict.NUMBER,
    "canary_seed": strict.INTEGER,
}
PROBE = "flower-app"


def flat_run_config(table: dict, prefix: str = "") -> dict:
    """A ``run_config`` table with nested tables flattened to dotted keys, as flwr flattens its config."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        out.update(flat_run_config(value, f"{name}.") if isinstance(value, dict) else {name: value})
    return out


@register
class FlowerAppTarget(BaseTarget):
    """A Flower app project, run as ``flwr run APP_DIR`` runs it, with canary SuperNodes."""

    algorithms = ("flower-app",)
    binders = {PROBE: "_bind"}
    runs_implementation = True

    def default_probes(self) -> tuple:
        """With no probe listed: the ``flower-app`` probe without canaries, i.e. the checks of the one run (the
        configuration, every round's sample, the transcript with each release's noise measured, the clients' DP)."""
        from reports.audit.model import ProbeSpec

        return (ProbeSpec(PROBE, "end-to-end", 0),)

    def implementation_test(self) -> str | None:
        """None: the run's checks (transcript, noise measured) are the ``flower-app`` probe's findings, so with
        ``probes = []`` nothing of what ran is tested and the verdict cannot be a plain PASS."""
        return None

    @classmethod
    def parameter_schema(cls) -> dict:
        return SCHEMA

    def __init__(self, spec: TargetSpec):
        super().__init__(spec)
        from dpfed.flower.config import parse_claims

        p = strict.check_table("parameters", dict(spec.parameters), self.parameter_schema())
        if not spec.allow_code:
            raise ConfigurationError("parameters.app", "a flower-app target runs the app's Python code; run with "
                                                       "--allow-code to allow it")
        app = Path(p["app"]).expanduser()
        self.app = str(app if app.is_absolute() else Path(spec.base_dir or ".") / app)
        self.run_config = flat_run_config(p.get("run_config", {}))
        self.nodes = int(p["num_supernodes"])
        if self.nodes < 1:
            raise ConfigurationError("parameters.num_supernodes", f"at least 1, got {self.nodes}")
        self.claims = parse_claims(p.get("claims", ()), "parameters.claims")
        self.alpha = float(p.get("transcript_alpha", 1e-3))
        if not 0 < self.alpha < 1:
            raise ConfigurationError("parameters.transcript_alpha", "must lie in (0, 1)")
        runs = [probe for probe in (spec.probes or self.default_probes()) if probe.name == PROBE]
        if len(runs) > 1:
            raise ConfigurationError("probes", f"one {PROBE} probe per target (each is a whole Flower run)")
        self.canaries = runs[0].trials if runs else 0
        try:
            import flwr  # noqa: F401
        except ModuleNotFoundError:
            raise ConfigurationError("algorithm", "flower-app needs flwr: pip install -c constraints.txt "
                                                  "-e '.[flower]'") from None
        self.canary_seed = int(p.get("canary_seed", 0))
        if not 0 <= self.canary_seed < 2**31:
            raise ConfigurationError("parameters.canary_seed", f"must lie in [0, 2^31), got {self.canary_seed}")
        self._observe()

    def _observe(self) -> None:
        """Run the app once (the probe's canaries, seeded ``canary_seed``) and take its mechanism from that run."""
        from attacks.flower_checks.run_checks import check_run
        from attacks.probes import get_probe

        probe = get_probe(PROBE, **self._bind(PROBE, {}))
        try:
            checked = check_run(probe.observe(self.canaries, probe.run_seed(0)), self.claim.delta)
        except ConfigurationError as exc:
            raise ConfigurationError(f"parameters.{exc.field}", str(exc).split(": ", 1)[-1]) from None
        self.config, self.configured_m, self.observed = checked.config, checked.configured_m, checked.starts
        if checked.config is not None:
            c = checked.config
            self.releases = c.rounds
            self.mechanism = SubsampledGaussian(c.sampled / c.nodes, c.noise_multiplier, c.clip,
                                                sampling=Sampling.FIXED_SIZE, neighbouring=Neighbouring.REPLACE_ONE,
                                                population=c.nodes)
        elif checked.clients:
            self.mechanism, self.releases = client_mechanism(checked.clients)
        else:
            raise ConfigurationError("parameters.app", "the app's DP is a LocalDpMod in its ClientApp; audit it with "
                                                       "dpaudit flower APP_DIR (the audit target takes central DP "
                                                       "wrappers and DP-SGD in the clients)")

    def user_code(self) -> list[str]:
        """The app project whose code the sections ran (its .py and .toml files are hashed)."""
        return [self.app]

    def _bind(self, name: str, explicit: dict) -> dict:
        # A replace-one claim is also checked against what Flower's sampler provably spends (the realised pair).
        claimed = self.claim.epsilon if self.claim.neighbouring == "replace-one" else None
        return {"app": self.app, "run_config": dict(self.run_config), "num_supernodes": self.nodes,
                "claims": tuple(self.claims), "claimed_epsilon": claimed, "transcript_alpha": self.alpha,
                "canary_seed": self.canary_seed}

    def default_units(self):
        return self.nodes, "clients"  # the deployment's (the canary SuperNodes are the audit's)

    def report_parameters(self) -> dict:
        return {"app": self.app, "run_config": dict(self.run_config), "num_supernodes": self.nodes,
                "canaries": self.canaries, "claims": list(self.claims), "canary_seed": self.canary_seed,
                "strategy": None if self.config is None else dict(self.config.__dict__), "observed": self.observed,
                "configured_num_sampled_clients": self.configured_m,
                "runtime": "Flower simulation engine (as flwr run APP_DIR runs it), one run observed"}

    def utility(self, seed, runs: int, log):
        return Unavailable("the Flower audit reports the run's findings and canary bounds, not a utility curve")

    def findings(self, verdict, probes) -> list:
        return [Finding("flower-check", f["severity"], {"code": f["code"], "message": f["message"], **f["values"]})
                for probe in probes if probe.name == PROBE for f in probe.findings]


def client_mechanism(clients: dict) -> tuple:
    """``(SubsampledGaussian, steps)`` of the client whose composed epsilon is largest, when all its steps share one
    noise multiplier and sample rate (Poisson, add/remove: opacus's accounting)."""
    worst = max(clients.values(), key=lambda r: r["composed_epsilon"])
    if len(worst["noise_multipliers"]) != 1 or len(worst["sample_rates"]) != 1:
        raise ConfigurationError("parameters.app", "the clients' DP-SGD steps mix noise multipliers or sample rates "
                                                   f"({worst['noise_multipliers']}, {worst['sample_rates']}); audit "
                                                   "this app with dpaudit flower, which composes them per client")
    return SubsampledGaussian(worst["sample_rates"][0], worst["noise_multipliers"][0]), int(worst["steps"])
