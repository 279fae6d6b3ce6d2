"""The transcript checks on a Flower app written outside this project (``planted_apps``: its own MLP, data and
strategy under Flower 1.42's DP wrappers), each planted bug a small variant of the correct app.

The apps run on an in-process grid (``inprocess_grid``: Flower's strategies and ClientApps, no Ray; about 1 s a
run) and once on Flower's simulation engine (slow). At a fixed seed a run is deterministic (Python's, NumPy's and
torch's generators are seeded; torch runs single-threaded). Before the seeds were fixed, a correct run raised a
false finding with probability at most 5 alpha = 5e-3 (five statistical check kinds at alpha = 1e-3 each; the
deterministic checks never fire on a correct run), so the 8 correct runs below fail together with probability
below 4e-2 a priori; the planted bugs are found with p-values below 1e-15 (a certainty in practice).
"""

import math

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")

from attacks.flower_checks.transcript_check import assumptions_from_config, check_transcript  # noqa: E402
from dpfed.flower.records import releases  # noqa: E402
from tests.flower.inprocess_grid import run_in_process  # noqa: E402
from tests.flower.planted_apps import settings  # noqa: E402

DELTA = 1e-5


def audit(**cfg):
    out = run_in_process(settings(**cfg))
    assumptions = assumptions_from_config(out["config"], DELTA)
    return out, assumptions, check_transcript(out["transcript"], assumptions)


def critical(findings):
    return {f.code for f in findings if f.severity == "critical"}


# adaptive with a generous initial clip (updates have norms 0.7-3.5 against 2): fewer than half are clipped, so
# Flower's rule raises the clip every round unless the clipped count's noise (std 1 on 10 clients) pushes the
# noisy clipped fraction above 0.5
RISING = dict(initial_clip=2.0, sampled=10)


@pytest.mark.parametrize("cfg", [dict(kind="server-fixed"), dict(kind="client-fixed"),
                                 dict(kind="server-adaptive", **RISING), dict(kind="client-adaptive", **RISING)],
                         ids=["server-fixed", "client-fixed", "server-adaptive", "client-adaptive"])
@pytest.mark.parametrize("seed", [0, 1])
def test_correct_apps_pass(cfg, seed):
    _, _, findings = audit(**cfg, seed=seed)
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("cfg, code", [
    (dict(kind="client-fixed", bug="clip-missing", rounds=8), "reply-above-clip"),
    (dict(bug="same-noise"), "noise-correlated"),
    (dict(bug="bias-unnoised"), "noise-part-below-accounted"),
    (dict(bug="same-clients"), "sampler-not-independent"),
    (dict(bug="noise-cut"), "noise-below-accounted"),
], ids=["a-clip-missing", "b-same-noise", "c-bias-unnoised", "d-same-clients", "noise-cut"])
def test_planted_bug_is_a_named_critical_finding(cfg, code):
    _, _, findings = audit(**cfg)
    assert code in critical(findings), [(f.code, f.severity) for f in findings]
    assert all(f.values.get("false_alarm") is not None for f in findings)  # each states its false-alarm rate


def test_clip_missing_names_the_unclipped_clients_norm():
    """Nodes 0 and 1 skip the clipping mod: every reply above C comes from them, and its norm is the one recorded."""
    out, _, findings = audit(kind="client-fixed", bug="clip-missing", rounds=8)
    found = next(f for f in findings if f.code == "reply-above-clip")
    assert {out["partitions"][n] for n in found.values["nodes"]} <= {0, 1}
    assert found.values["largest_norm"] > 0.5 and found.values["ratio"] > 1


def test_bias_unnoised_names_the_output_bias():
    _, _, findings = audit(bug="bias-unnoised")
    tensors = [f for f in findings if f.code == "noise-part-below-accounted" and f.values["kind"] == "tensor"]
    assert [f.values["parts_below"] for f in tensors] == [["tensor 2.bias"]]


def test_same_clients_realised_epsilon_is_above_the_accounted_one():
    """The re-seeded sampler includes the same 5 of 20 clients in all 5 rounds: they spend the epsilon of 5
    Gaussians of multiplier z / 2 (replace-one), mu = 2 sqrt(5) / z, checked here against the closed form of
    the Gaussian mechanism's delta(epsilon) (Balle & Wang 2018)."""
    _, a, findings = audit(bug="same-clients")
    found = next(f for f in findings if f.code == "sampler-not-independent")
    assert found.values["most_inclusions"] == 5 and found.values["clients_at_most"] == 5
    eps, mu = found.values["participation_epsilon"], 2 * math.sqrt(5) / a.noise_multiplier
    delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert delta == pytest.approx(DELTA, rel=1e-6)
    assert eps > found.values["accounted_epsilon"]


def test_adaptive_clip_is_read_every_round():
    """Each round's clip is the wrapper's at the time it clips; the next round starts from the clip the wrapper
    updated to (recorded as ``noise_clip``); a rising clip is no finding."""
    out, _, findings = audit(kind="server-adaptive", **RISING)
    records = [p for _, p in releases(out["transcript"])]
    assert records[0]["clip"] == 2.0
    for before, after in zip(records, records[1:], strict=False):
        assert after["clip"] == before["noise_clip"] > before["clip"]
    assert findings == []


@pytest.mark.slow  # our RDP accountant takes several seconds on 5 rounds of distinct multipliers
def test_falling_adaptive_clip_flags_noise_scaled_with_the_updated_clip():
    """Flower 1.42's adaptive wrappers update the clip from the noisy clipped count and then scale the noise with
    the new clip: when it falls, the round's update noise is z_u C_{t+1} / m against a sensitivity of C_t. The
    noise itself is what the wrapper meant (no noise finding); the realised epsilon is above the accounted.
    BENCHMARKS.md's example (5 rounds, 5 of 20, initial clip 0.5, seed 0): its realised and accounted epsilons
    and smallest ratio C_{t+1} / C_t print as documented (this run is deterministic)."""
    from tests.flower.documented import find, printed, section

    out, a, findings = audit(kind="server-adaptive", initial_clip=0.5, seed=0)
    records = [p for _, p in releases(out["transcript"])]
    assert all(p["noise_clip"] < p["clip"] for p in records)  # every update clipped: Flower's rule lowers C
    assert critical(findings) == {"adaptive-noise-below-clip"}
    found = findings[0]
    ratios = [p["noise_clip"] / p["clip"] for p in records]
    assert found.values["smallest_ratio"] == pytest.approx(min(ratios))
    assert found.values["realised_epsilon"] > found.values["accounted_epsilon"] == pytest.approx(a.accounted_epsilon())
    text = section("BENCHMARKS.md", "## Flower")
    documented = find(r"e\.g\. ([\d.]+) against the accounted ([\d.]+) for 5 rounds, 5 of 20 sampled, initial clip "
                      r"0\.5, seed 0 \(ratios C_\{t\+1\} / C_t down to ([\d.]+);", text)
    assert printed(documented[1], found.values["realised_epsilon"])
    assert printed(documented[2], found.values["accounted_epsilon"])
    assert printed(documented[3], found.values["smallest_ratio"])


def test_noise_of_correct_client_side_app_is_not_inflated_by_clipping():
    """Client-side clipping: the recorder averages the replies as they arrived (the server does not clip), so the
    recorded noise has the accounted std z C / m (650 coordinates: within 15%)."""
    out, a, _ = audit(kind="client-fixed")
    for _, p in releases(out["transcript"]):
        assert p["clipping"] == "client" and max(p["norms"]) <= p["clip"] * (1 + 1e-5)
        assert np.std(p["noise"]) == pytest.approx(a.noise_std, rel=0.15)
