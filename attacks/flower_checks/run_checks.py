"""Every check of one observed Flower run (``dpfed.flower.run.AppRun``), from what ran, not from a dry run.

For each strategy the app started that is or wraps a Flower central-DP wrapper: the configuration check of the
strategy as built, with the population and the sample size its first round really had (``check.check_config``);
the realised sample size of every round against the ``num_sampled_clients`` the wrapper scales its noise for
(``sample_size_findings``: critical where it lowers the noise, with the effective multiplier and the epsilon that
really spends); the transcript against the accountant's assumptions; and, under secure aggregation, which
per-client checks the server cannot make. Then the clients' own DP (``client_dp``: DP-SGD in the ClientApp;
``local_dp``: Flower's ``LocalDpMod``). A run with neither a DP wrapper nor a LocalDpMod nor a client that trained
privately is refused (``ConfigurationError``) naming what Flower ran.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from accounting.errors import ConfigurationError
from attacks.flower_checks.check import check_config
from attacks.flower_checks.client_dp import client_dp_findings
from attacks.flower_checks.findings import FlowerFinding
from attacks.flower_checks.local_dp import local_dp_findings
from attacks.flower_checks.transcript_check import assumptions_from_config, check_transcript
from dpfed.flower.config import accounted_rows
from dpfed.flower.observe import APIS
from dpfed.flower.read import config_from_strategy, wrapper_kind, wrapper_of
from dpfed.flower.records import releases

SECURE_RULED_OUT = ("each reply's norm against the clip", "each reply's weight", "which node sent what")


@dataclass
class RunCheck:
    """The findings of one run; ``main``: the first recorded DP strategy (``StartedRun``) with its ``config``,
    ``configured_m`` and accounted ``rows`` (None / {} without one); ``clients``: the clients' DP-SGD rows;
    ``local``: each client's ``LocalDpMod`` releases composed."""

    findings: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)
    clients: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)
    main: object = None
    config: object = None
    configured_m: int | None = None
    accounted: float | None = None


def describe_start(started) -> dict:
    entry = started.observed
    wrapper = wrapper_of(entry.strategy) if started.recorder is not None else None
    return {"api": entry.api, "entry": APIS[entry.api], "strategy": type(entry.strategy).__name__,
            "rounds": entry.rounds, "workflow": entry.workflow, "secure_aggregation": entry.secure,
            "dp_wrapper": None if wrapper is None else type(wrapper).__name__,
            "recorded_rounds": started.round_numbers()}


def run_config_of(started):
    """``(FlowerDpConfig, configured m)`` of a recorded strategy as built, with the population, the sample size and
    the clip of its first recorded round (an adaptive wrapper has moved its clip by the end; None when no round
    was recorded)."""
    records = releases(started.transcript)
    if not records:
        return None, None
    first = records[0][1]
    nodes = max(int(first["population"]), 1)
    config, configured_m = config_from_strategy(started.observed.strategy, nodes=nodes,
                                                rounds=started.observed.rounds)
    sampled = min(max(len(first["sampled"]), 1), nodes)
    return dataclasses.replace(config, sampled=sampled, clip=float(first["clip"])), configured_m


def sample_size_findings(records, config, configured_m: int, delta: float) -> list:
    """Each round's realised sample size against the wrapper's ``num_sampled_clients``: the noise on the sum is
    z C m_r / m, so a smaller sample lowers the effective multiplier to z m_r / m (critical, with the epsilon the
    run spends at it); a larger one only adds noise (low)."""
    sizes = {r: len(p["sampled"]) for r, p in records}
    smallest = min(sizes.values())
    if smallest < configured_m:
        z = config.noise_multiplier * smallest / configured_m
        spent = accounted_rows(dataclasses.replace(config, noise_multiplier=z, sampled=smallest), delta)["runs"]
        rounds = [r for r, n in sizes.items() if n < configured_m]
        return [FlowerFinding("sample-size-mismatch", "critical",
                              f"the wrapper scales its noise for num_sampled_clients={configured_m}, but Flower "
                              f"sampled "
                              f"{smallest} of {config.nodes} nodes in {len(rounds)} of {len(sizes)} rounds: noise "
                              f"z C/{configured_m} on the mean of {smallest}, an effective noise multiplier "
                              f"{z:.4g} instead of {config.noise_multiplier:g}, which spends epsilon "
                              f"{spent['epsilon']:.4g} ({spent['accountant']})",
                              {"configured": configured_m, "sampled": smallest, "rounds": rounds,
                               "effective_noise_multiplier": z, "effective_epsilon": spent["epsilon"]})]
    if max(sizes.values()) > configured_m:
        return [FlowerFinding("sample-size-above-configured", "low",
                              f"Flower sampled up to {max(sizes.values())} nodes a round, more than the "
                              f"num_sampled_clients={configured_m} the noise is scaled for (more noise than "
                              "accounted on the sum)", {"configured": configured_m, "sampled": max(sizes.values())})]
    return []


def secure_aggregation_finding(started) -> FlowerFinding:
    return FlowerFinding("secure-aggregation", "info",
                         f"{started.observed.workflow}: the server sees only the sum of the clients' updates; checked "
                         "from the aggregate: the released noise against z C / m, replies against the sample the noise "
                         "is scaled for, dropouts and rounds; ruled out: " + ", ".join(SECURE_RULED_OUT),
                         {"workflow": started.observed.workflow, "ruled_out": list(SECURE_RULED_OUT)})


def strategy_findings(started, delta, claimed_epsilon, claims, alpha) -> tuple[list, object, int, dict]:
    config, configured_m = run_config_of(started)
    if config is None:
        return [FlowerFinding("no-releases", "critical", f"the app's {type(started.observed.strategy).__name__} "
                              "(a DP strategy) released no aggregate: no round was recorded", {})], None, None, {}
    checked = check_config(config, delta, None, claimed_epsilon, claims)
    records = releases(started.transcript)
    findings = checked["findings"] + sample_size_findings(records, config, configured_m, delta)
    assumed = assumptions_from_config(config, delta, claimed_epsilon=claimed_epsilon)
    findings += check_transcript(started.transcript, assumed, alpha)
    if started.observed.secure:
        findings.append(secure_aggregation_finding(started))
    return findings, config, configured_m, checked["rows"]


def check_run(run, delta: float, claimed_epsilon: float | None = None, claims=(), alpha: float = 1e-3) -> RunCheck:
    """All findings of ``run`` (``dpfed.flower.run.AppRun``); ConfigurationError when nothing private ran."""
    out = RunCheck(starts=[describe_start(s) for s in run.starts])
    clients = client_dp_findings(run.clients, delta, claimed_epsilon, alpha)
    local = local_dp_findings(run.local_dp_mods, run.clients, delta, claimed_epsilon)
    out.clients, out.local = clients["rows"], local["rows"]
    recorded = run.recorded()
    if not recorded and not out.clients and not out.local:
        raise ConfigurationError("app", no_dp_message(run))
    for index, started in enumerate(recorded):
        findings, config, configured_m, rows = strategy_findings(started, delta, claimed_epsilon, claims, alpha)
        if index == 0:
            out.main, out.config, out.configured_m, out.rows = started, config, configured_m, rows
            out.accounted = rows["runs"]["epsilon"] if rows else None
        out.findings += findings
    if len(recorded) > 1:
        out.findings.append(FlowerFinding("several-strategies", "medium",
                                          f"the app started {len(recorded)} DP strategies; each is checked, but their "
                                          "epsilons compose over the same clients (the rows show the first)",
                                          {"strategies": len(recorded)}))
    out.findings += clients["findings"] + local["findings"]
    if out.accounted is None and (out.clients or out.local):
        out.accounted = max(r["composed_epsilon"] for r in [*out.clients.values(), *out.local.values()])
    return out


def no_dp_message(run) -> str:
    if not run.starts:
        return ("Flower ran the app but saw no strategy start (Strategy.start, DefaultWorkflow or Server.fit): a "
                "strategy that overrides them cannot be observed; nothing to audit")
    started = ", ".join(f"{type(s.observed.strategy).__name__} via {APIS[s.observed.api]}" for s in run.starts)
    trained = sum(1 for r in run.clients if str(r["message_type"]).startswith("train"))
    return (f"Flower ran the app ({started}): no Flower central-DP wrapper (DifferentialPrivacy...Clipping) around "
            f"its strategy, no LocalDpMod in its ClientApp, and none of the {trained} client training calls took a "
            "private (opacus) step; nothing to audit")


__all__ = ["RunCheck", "check_run", "sample_size_findings", "wrapper_kind"]
