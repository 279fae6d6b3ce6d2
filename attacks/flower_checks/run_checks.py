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
from attacks.flower_checks.client_clipping import client_clipping_findings
from attacks.flower_checks.client_dp import client_dp_findings
from attacks.flower_checks.findings import FlowerFinding
from attacks.flower_checks.local_dp import local_dp_findings
from attacks.flower_checks.sensitivity_check import sensitivity_findings
from attacks.flower_checks.sensitivity_check import summary as sensitivity_summary
from attacks.flower_checks.transcript_check import (
    RELATIVE,
    assumptions_from_config,
    check_transcript,
    transcript_summary,
)
from dpfed.flower.config import accounted_rows
from dpfed.flower.observe import APIS
from dpfed.flower.read import WRAPPER_KINDS, config_from_strategy, flower_sample_size, wrapper_kind, wrapper_of
from dpfed.flower.records import releases
from dpfed.flower.sensitivity import strategy_name

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
    transcript: dict | None = None  # what the main strategy's transcript check looked at (``transcript_summary``)
    sensitivity: dict | None = None  # what the replays of the main strategy's inner strategy showed


def describe_start(started) -> dict:
    """One strategy the app started: how, its rounds, its DP wrapper's class, the Flower wrapper it is or
    subclasses (``flower_wrapper``) and the strategy the wrapper wraps (``inner_strategy``: its aggregation is
    what the noise is added to)."""
    entry = started.observed
    wrapper = wrapper_of(entry.strategy) if started.recorder is not None else None
    flower = None if wrapper is None else next(c.__name__ for c in type(wrapper).__mro__ if c.__name__ in WRAPPER_KINDS)
    return {"api": entry.api, "entry": APIS[entry.api], "strategy": type(entry.strategy).__name__,
            "rounds": entry.rounds, "workflow": entry.workflow, "secure_aggregation": entry.secure,
            "dp_wrapper": None if wrapper is None else type(wrapper).__name__, "flower_wrapper": flower,
            "inner_strategy": None if wrapper is None else strategy_name(wrapper.strategy),
            "recorded_rounds": started.round_numbers(),
            "rounds_run": None if started.recorder is None else len(releases(started.transcript))}


def run_config_of(started):
    """``(FlowerDpConfig, configured m)`` of a recorded strategy as built, with the rounds that released (an app may
    stop before its configured rounds: ``rounds_finding``), the population and the sample size of its first round
    with every node that connected (a round that started while nodes were still connecting sampled from fewer: the
    transcript check names it) and the clip of its first recorded round (an adaptive wrapper has moved its clip by
    the end); None when no round was recorded."""
    records = releases(started.transcript)
    if not records:
        return None, None
    top = max(int(p["population"]) for _, p in records)
    full = next(p for _, p in records if int(p["population"]) == top)
    nodes = max(top, 1)
    config, configured_m = config_from_strategy(started.observed.strategy, nodes=nodes, rounds=len(records))
    sampled = min(max(len(full["sampled"]), 1), nodes)
    return dataclasses.replace(config, sampled=sampled, clip=float(records[0][1]["clip"])), configured_m


def rounds_finding(started) -> list:
    """``release-count``: the releases recorded against the rounds the strategy was started with. Fewer (the app
    stopped early: ``should_stop``, an exception its main caught) is medium: the run is accounted at the rounds that
    ran, and a figure for the configured rounds over-counts; more is critical (a claim for the configured rounds
    understates)."""
    ran, configured = len(releases(started.transcript)), int(started.observed.rounds)
    if ran == configured:
        return []
    name = type(started.observed.strategy).__name__
    if ran < configured:
        return [FlowerFinding("release-count", "medium",
                              f"{name} released {ran} of its {configured} configured rounds (the app stopped early, or "
                              f"a round released nothing): accounted at the {ran} that released",
                              {"recorded": ran, "configured": configured, "false_alarm": 0.0})]
    return [FlowerFinding("release-count", "critical",
                          f"{name} released {ran} times, more than its {configured} configured rounds: accounted at "
                          f"the {ran} that ran, a figure for {configured} understates",
                          {"recorded": ran, "configured": configured, "false_alarm": 0.0})]


def sampling_words(inner) -> str:
    """The attributes that size Flower's sample, as the strategy holds them (Message API or legacy)."""
    names = (("fraction_train", "min_train_nodes", "min_available_nodes") if hasattr(inner, "fraction_train")
             else ("fraction_fit", "min_fit_clients", "min_available_clients"))
    held = [(name, getattr(inner, name, None)) for name in names]
    return ", ".join(f"{name}={value:g}" for name, value in held if value is not None)


def canary_change(started, nodes: int, canaries: int) -> str | None:
    """Why ``canaries`` canary SuperNodes beside ``nodes`` real ones change the system audited (None: they do not),
    compared with the same strategy on the real nodes alone: Flower's sample size there (``flower_sample_size``,
    max(int(N fraction), min), at most N) against the one with the canaries. Each client's privacy rests on its
    sampling rate and on the noise over the sample's sum (z C m_r / m): the canaries must keep the rate, and the
    wrapper's ``num_sampled_clients`` must be the canary run's sample so that each client's noise multiplier is z
    (the deployment's, when its own ``num_sampled_clients`` is its sample; a run without canaries checks that)."""
    wrapper = wrapper_of(started.observed.strategy)
    inner, total = wrapper.strategy, nodes + canaries
    audited, deployed = flower_sample_size(inner, total), flower_sample_size(inner, nodes)
    configured, name = int(wrapper.num_sampled_clients), type(inner).__name__
    head = f"Flower ran the app, but the {canaries} canary SuperNodes change the system audited: {name}"
    if audited * nodes != deployed * total:
        return (f"{head} ({sampling_words(inner)}) trains {audited} of the {total} nodes with them but {deployed} of "
                f"the {nodes} real nodes without them (rate {audited / total:.3g} instead of {deployed / nodes:.3g}), "
                "so no verdict would be about the deployment; canaries keep the rate where every node is sampled "
                f"every round (e.g. min_train_nodes = {total}, with num_sampled_clients = {total} for the canary run: "
                f"the deployment's {nodes} of {nodes}), or audit this deployment without --canaries")
    if configured != audited:
        return (f"{head} trains {audited} of the {total} nodes with them ({deployed} of the {nodes} real nodes "
                f"without them, the same rate), but the DP wrapper scales its noise for num_sampled_clients="
                f"{configured}: noise z C/{configured} on the mean of {audited}, {audited / configured:.3g} times the "
                f"noise per client of a run whose wrapper is told its sample, so no verdict would be about the "
                f"deployment; set num_sampled_clients = {audited} for the canary run (the deployment's {deployed} of "
                f"{nodes} at the same rate), or audit this deployment without --canaries")
    return None


def deployment_config(started, config, nodes: int, canaries: int):
    """The deployment ``config`` stands for: with canaries (refused where they change the system,
    ``canary_change``), the same sampling rate on the ``nodes`` real SuperNodes, accounted there."""
    if not canaries:
        return config
    refusal = canary_change(started, nodes, canaries)
    if refusal is not None:
        raise ConfigurationError("canaries", refusal)
    return dataclasses.replace(config, nodes=nodes, sampled=flower_sample_size(wrapper_of(started.observed.strategy)
                                                                               .strategy, nodes))


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


def equal_weights(records) -> bool:
    """Whether every reply of every round weighed the same (1 / replies), to float rounding."""
    import numpy as np

    return all(np.allclose(p["weights"], 1.0 / len(p["weights"]), rtol=RELATIVE, atol=0.0)
               for _, p in records if p["weights"])


def weighting_seen(findings: list, records) -> list:
    """``weighted-by-examples`` (a configuration finding: FedAvg weighs by reported counts) as INFO where the
    transcript shows every reply of every round weighed the same: the accounting's equal weights held."""
    if not equal_weights(records):
        return findings
    return [FlowerFinding(f.code, "info", "FedAvg weights by reported example counts, and every reply of every "
                          "round weighed the same (the transcript's weights): the equal weights 1/m the noise is "
                          "calibrated for held in this run", {**f.values, "equal_in_run": True})
            if f.code == "weighted-by-examples" else f for f in findings]


def strategy_findings(started, delta, claimed_epsilon, claims, alpha, run=None) -> tuple[list, object, int, dict]:
    """The findings of one recorded strategy, the deployment's configuration (``deployment_config``), its
    ``num_sampled_clients`` and accounted rows; ``run`` (an ``AppRun``) gives the real nodes and the canaries."""
    config, configured_m = run_config_of(started)
    if config is None:
        return [FlowerFinding("no-releases", "critical", f"the app's {type(started.observed.strategy).__name__} "
                              "(a DP strategy) released no aggregate: no round was recorded", {})], None, None, {}
    deployed = deployment_config(started, config, getattr(run, "nodes", 0), getattr(run, "canaries", 0))
    checked = check_config(deployed, delta, None, claimed_epsilon, claims)
    records = releases(started.transcript)
    findings = weighting_seen(checked["findings"], records) + sample_size_findings(records, config, configured_m,
                                                                                   delta) + rounds_finding(started)
    assumed = assumptions_from_config(config, delta, claimed_epsilon=claimed_epsilon)
    transcript = check_transcript(started.transcript, assumed, alpha)
    started.summary = transcript_summary(started.transcript, assumed, transcript, alpha)
    findings += transcript
    measurements = getattr(started.recorder, "sensitivity", {})
    findings += sensitivity_findings(measurements, assumed)
    started.sensitivity = sensitivity_summary(measurements) if measurements else None
    if started.observed.secure:
        findings.append(secure_aggregation_finding(started))
    return findings, deployed, configured_m, checked["rows"]


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
        findings, config, configured_m, rows = strategy_findings(started, delta, claimed_epsilon, claims, alpha, run)
        if index == 0:
            out.main, out.config, out.configured_m, out.rows = started, config, configured_m, rows
            out.transcript, out.sensitivity = started.summary, started.sensitivity
            out.accounted = rows["runs"]["epsilon"] if rows else None
        out.findings += findings
    kinds = {wrapper_kind(wrapper_of(s.observed.strategy)) for s in recorded}
    for kind in sorted(kinds & {"client-fixed", "client-adaptive"}):  # the ClientApp must clip: its mods
        out.findings += client_clipping_findings(getattr(run, "train_mods", None), kind)
    if len(recorded) > 1:
        ran = [len(releases(s.transcript)) for s in recorded]
        out.findings.append(FlowerFinding("several-strategies", "medium",
                                          f"the app started {len(recorded)} DP strategies ({sum(ran)} releases in all: "
                                          f"{' + '.join(map(str, ran))} rounds run); each is checked, but their "
                                          "epsilons compose over the same clients (the rows show the first's "
                                          f"{ran[0]} rounds)", {"strategies": len(recorded), "rounds_run": ran}))
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
