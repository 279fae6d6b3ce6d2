"""The report's figures as figure models (matplotlib artists and data, not pixels): the summary figure
keeps every target's whole name, gives each target its own band (eight targets, eight labelled bands),
draws an infinite upper bound as an arrow marked inf (never a finite star), has a legend whose entries do
not overlap; the gap is never 0 when the lower bound exceeds the upper one; the claimed boundary of a ROC
plot is never drawn along the plot's top frame."""

from __future__ import annotations

import itertools
import json

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from reports.plots import claim_boundary_points, roc_figure, summary_figure, summary_layout
from reports.render_markdown import render_markdown
from reports.render_text import gap_text
from tests.reports.synthetic_report import synthetic_report


def _targets(n: int, probes_per_target=(1, 2, 3)) -> dict:
    """A report dict with ``n`` targets made from the synthetic one, each with 1 to 3 ran probes."""
    report = json.loads(json.dumps(synthetic_report()))
    base = report["targets"][0]
    targets = []
    for i in range(n):
        t = json.loads(json.dumps(base))
        t["name"] = f"target {i}: " + "a long descriptive name of an audited system " * (1 + i % 2)
        ran = t["probes"][0]
        t["probes"] = [dict(ran, name=f"probe-{i}-{k}") for k in range(probes_per_target[i % len(probes_per_target)])]
        targets.append(t)
    report["targets"] = targets
    return report


def _lines(fig, gid):
    """The lines whose id is ``gid`` or ``gid-N`` (the summary numbers its marks: SVG ids are unique)."""
    return [
        line
        for line in fig.axes[0].get_lines()
        if line.get_gid() in (gid,) or (line.get_gid() or "").startswith(gid + "-")
    ]


def test_every_label_is_the_whole_name():
    report = _targets(3)
    labels = [t.get_text().replace("\n", " ") for t in summary_figure(report).axes[0].get_yticklabels()]
    assert labels == [t["name"].strip() for t in report["targets"]]  # wrapped, never cut
    assert all(len(t["name"]) > 48 for t in report["targets"][1::2])  # longer than the old cut


def test_eight_targets_get_eight_bands_each_with_its_label_and_its_marks():
    report = _targets(8)
    fig = summary_figure(report)
    ax = fig.axes[0]
    bands = summary_layout(report["targets"])
    assert len(bands) == 8 and all(b[0] < b[1] for b in bands)
    assert all(below[1] <= above[0] + 1e-12 for above, below in itertools.pairwise(bands))  # disjoint
    ticks = ax.get_yticks()
    assert len(set(t.get_text() for t in ax.get_yticklabels())) == 8
    for i, (low, high) in enumerate(bands):
        assert low < ticks[i] < high  # the label sits in its own band
        ys = [y for line in _lines(fig, f"target-{i}") for y in line.get_ydata()]
        assert ys and all(low < y < high for y in ys)  # every mark of the target in its band


def test_an_infinite_upper_bound_is_an_arrow_marked_inf_not_a_star():
    report = _targets(1)
    target = report["targets"][0]
    for row in target["accounting"]["rows"]:
        row["epsilon"] = "inf" if row["status"] == "ok" else row["epsilon"]
    fig = summary_figure(report)
    marks = _lines(fig, "target-0")
    assert not [m for m in marks if m.get_marker() == "*"]
    edge = max(x for m in marks for x in m.get_xdata())
    arrows = [m for m in marks if m.get_marker() == ">"]
    assert arrows and all(a.get_xdata()[0] == edge for a in arrows)
    assert [t.get_text() for t in fig.axes[0].texts].count("inf") == 1  # once, however many accountants
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "tightest upper bound" not in legend and "infinite (drawn at the edge)" in legend


def test_a_finite_tightest_bound_is_a_star_at_its_value():
    report = _targets(1)
    stars = [m for m in _lines(summary_figure(report), "target-0") if m.get_marker() == "*"]
    assert [m.get_xdata()[0] for m in stars] == [pytest.approx(0.75)]  # the exact accountant's 0.75
    claim = [m for m in _lines(summary_figure(report), "target-0") if m.get_marker() == "|"]
    assert len(claim) == 1 and claim[0].get_zorder() > stars[0].get_zorder()  # a bound equal to it cannot hide it


def test_legend_entries_do_not_overlap():
    fig = summary_figure(_targets(2))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legend = fig.axes[0].get_legend()
    boxes = [h.get_window_extent(renderer) for h in legend.legend_handles]
    boxes += [t.get_window_extent(renderer) for t in legend.get_texts()]
    assert len(boxes) >= 8
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)


def test_the_gap_is_never_zero_when_the_lower_bound_exceeds_the_upper():
    report = json.loads(json.dumps(synthetic_report()))
    verdict = report["targets"][0]["verdict"]
    verdict["upper_bound"] = {"epsilon": 0.40, "source": "pld"}
    verdict["empirical"]["lower_bound"] = {"epsilon": 2.11, "source": "clopper-pearson on probe x"}
    verdict["gap"] = 0.40 - 2.11
    text = gap_text(verdict)
    assert text.startswith("none: the lower bound 2.11 exceeds the upper bound 0.4 by 1.71")
    md = render_markdown(report)
    assert "| gap | none: the lower bound 2.11 exceeds" in md and "| gap | 0 |" not in md
    verdict["gap"] = 0.0  # a report claiming a gap of 0 here contradicts its bounds (schema 2.1)
    from accounting.errors import ConfigurationError
    from reports.model import validate_report

    with pytest.raises(ConfigurationError, match="targets/0/verdict/gap"):
        validate_report(report)


@pytest.mark.parametrize("epsilon", [15.17, 30.0])
def test_a_large_claims_boundary_is_not_drawn_on_the_top_frame(epsilon):
    probe = json.loads(json.dumps(synthetic_report()))["targets"][0]["probes"][0]
    fig = roc_figure(probe, {"epsilon": epsilon, "delta": 0.0246})
    (line,) = _lines(fig, "claim-boundary")
    assert all(y < 0.99 for y in line.get_ydata())  # nothing at TPR ~ 1, where the top frame is
    label = line.get_label()
    assert "TPR >= 0.99 for FPR >=" in label and "no constraint shown" in label


def test_a_small_claims_boundary_is_drawn_where_it_constrains():
    fpr, tpr, saturated = claim_boundary_points(1.0, 1e-5, 1e-4)
    assert len(fpr) > 100 and (tpr < 0.99).all() and 0.5 < saturated < 1
    # the closed form at FPR = 1e-3: min(e * 1e-3 + 1e-5, 1 - e^-1 (1 - 1e-5 - 1e-3))
    i = abs(fpr - 1e-3).argmin()
    assert tpr[i] == pytest.approx(min(2.718281828 * fpr[i] + 1e-5, 1 - 0.36787944 * (1 - 1e-5 - fpr[i])), rel=1e-6)
