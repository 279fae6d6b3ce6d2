"""The DP-Fed-PNE target: every reward passes once through one calibrated Gaussian (event level)."""

from __future__ import annotations

import numpy as np

from accounting import strict
from accounting.errors import ConfigurationError, require_number
from reports.audit.accounting import describe
from reports.audit.model import TargetSpec
from reports.audit.targets import BaseTarget, register, utility_curve

SCHEMA = {
    "objective": strict.STRING,
    "clients": strict.INTEGER,
    "horizon": strict.INTEGER,
    "calibration": strict.STRING,
    "epsilon": strict.NUMBER,
    "dp_delta": strict.NUMBER,
    "c": strict.NUMBER,
    "planted_bug": strict.STRING,  # a deliberate implementation bug, only for audits (dpfed.pne.private)
}
CALIBRATIONS = ("classic", "analytic")


@register
class PneTarget(BaseTarget):
    """DP-Fed-PNE (``dpfed.pne.private``): the mechanism is ``dp_mechanism(epsilon, dp_delta, calibration)``."""

    algorithms = ("dp-fed-pne",)
    binders = {
        "pne-reward": "_reward_probe",
        "pne-unclipped-canary": "_reward_probe",
        "pne-end-to-end": "_end_to_end_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        return SCHEMA

    def __init__(self, spec: TargetSpec):
        from dpfed.pne.objectives import OBJECTIVES
        from dpfed.pne.private import PLANTED_BUGS, dp_mechanism

        super().__init__(spec)
        p = strict.check_table("parameters", dict(spec.parameters), self.parameter_schema())
        self.objective = p.get("objective", "garland")
        if self.objective not in OBJECTIVES:
            raise ConfigurationError(
                "parameters.objective", f"unknown objective {self.objective!r}; choose one of {', '.join(OBJECTIVES)}"
            )
        self.clients = int(require_number("parameters.clients", p.get("clients", 10), low=1, integer=True))
        self.horizon = int(require_number("parameters.horizon", p.get("horizon", 2000), low=1, integer=True))
        self.calibration_method = p.get("calibration", "analytic")
        if self.calibration_method not in CALIBRATIONS:
            raise ConfigurationError(
                "parameters.calibration", f"unknown method {self.calibration_method!r}; choose classic or analytic"
            )
        self.epsilon = require_number("parameters.epsilon", p.get("epsilon", spec.claim.epsilon), low=0, low_open=True)
        self.dp_delta = require_number(
            "parameters.dp_delta", p.get("dp_delta", spec.claim.delta), low=0, high=1, low_open=True, high_open=True
        )
        self.c = require_number("parameters.c", p.get("c", 0.1), low=0, low_open=True)
        self.planted_bug = p.get("planted_bug", "none")
        if self.planted_bug not in PLANTED_BUGS:
            raise ConfigurationError(
                "parameters.planted_bug", f"unknown {self.planted_bug!r}; choose one of {', '.join(PLANTED_BUGS)}"
            )
        self.mechanism = dp_mechanism(self.epsilon, self.dp_delta, self.calibration_method)
        self.releases = 1

    def default_units(self) -> tuple[int | None, str]:
        return self.clients * self.horizon, "rewards"

    def calibration(self) -> str | None:
        return self.calibration_method

    def report_parameters(self) -> dict:
        return {
            "objective": self.objective,
            "clients": self.clients,
            "horizon": self.horizon,
            "calibration": self.calibration_method,
            "epsilon": self.epsilon,
            "dp_delta": self.dp_delta,
            "c": self.c,
            "mechanism": describe(self.mechanism),
            "releases": self.releases,
            **({"planted_bug": self.planted_bug} if self.planted_bug != "none" else {}),
        }

    def _reward_probe(self, name: str, explicit: dict) -> dict:
        return {"epsilon": self.epsilon, "delta": self.dp_delta, "calibration": self.calibration_method}

    def _end_to_end_probe(self, name: str, explicit: dict) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.dp_delta,
            "calibration": self.calibration_method,
            "objective": self.objective,
            "clients": self.clients,
            "horizon": self.horizon,
            "c": self.c,
            "planted_bug": self.planted_bug,
        }

    def utility(self, seed, runs: int, log):
        from accounting.exact import gaussian_epsilon
        from dpfed.pne.private import run_dp_fed_pne

        curves = []
        for run, stream in enumerate(seed.spawn(runs)):
            log(f"  utility run {run + 1}/{runs}")
            result = run_dp_fed_pne(
                self.objective,
                self.clients,
                self.horizon,
                epsilon=self.epsilon,
                dp_delta=self.dp_delta,
                calibration=self.calibration_method,
                seed=stream,
                c=self.c,
                planted_bug=self.planted_bug,
            )
            curves.append(np.asarray(result.regret, dtype=float))
        spent = gaussian_epsilon(1.0 / self.mechanism.noise_multiplier, self.claim.delta)
        rounds = np.arange(1, len(curves[0]) + 1)
        return utility_curve(
            "cumulative regret per client",
            rounds,
            np.array(curves),
            np.full(len(rounds), spent),
            system="dp-fed-pne",
            epsilon_accountant="exact",
            delta=self.claim.delta,
            context={"objective": self.objective, "clients": self.clients},
        )
