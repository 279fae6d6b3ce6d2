"""Report plots as self-contained inline SVG strings (matplotlib, no pyplot state, deterministic).

Every function takes report sections (plain dicts, see ``reports.model``) and returns an ``<svg>``
element as text, or ``None`` when there is nothing to draw. Glyphs are drawn as paths, so the SVG
needs no fonts or network; ids are salted with a constant so the same data gives the same bytes.
"""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")
from matplotlib import rcParams  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

rcParams["svg.hashsalt"] = "dpfed-audit"
rcParams["svg.fonttype"] = "path"
_SVG_START = re.compile(r"<svg\b", re.S)


def _to_svg(fig: Figure, label: str) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buffer.getvalue()
    start = _SVG_START.search(text)
    svg = text[start.start() :] if start else text
    # accessible name for screen readers and for tests that look for the plots
    return svg.replace("<svg ", f'<svg role="img" aria-label="{label}" class="plot" ', 1)


def _positive_pairs(xs, ys):
    pairs = [
        (x, y) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None and x > 0 and y > 0
    ]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def roc_svg(probe: dict) -> str | None:
    """Empirical ROC (log-log) drawn over the accountant's trade-off curve (the best possible ROC)."""
    roc, tradeoff = probe.get("roc") or {}, probe.get("tradeoff") or {}
    if roc.get("available") is False and tradeoff.get("available") is False:
        return None
    fig = Figure(figsize=(5.2, 4.0))
    ax = fig.subplots()
    drew = False
    if tradeoff.get("available", True) is not False and tradeoff.get("x"):
        x, y = _positive_pairs(tradeoff["x"], tradeoff["y"])
        if x:
            ax.plot(x, y, color="#c0392b", lw=2, label=tradeoff.get("label", "accountant trade-off bound"))
            drew = True
    if roc.get("available", True) is not False and roc.get("x"):
        x, y = _positive_pairs(roc["x"], roc["y"])
        if x:
            ax.step(
                x,
                y,
                where="post",
                color="#1f5fa8",
                lw=1.5,
                label=f"empirical ROC (AUC {probe.get('auc') or 0:.3f})",
            )
            drew = True
    if not drew:
        return None
    ax.plot([1e-7, 1], [1e-7, 1], color="#999999", lw=0.8, ls=":", label="random guess")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(max(1e-6, 0.5 / max(probe.get("trials", 1), 1)), 1)
    ax.set_ylim(max(1e-6, 0.5 / max(probe.get("trials", 1), 1)), 1.05)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(f"{probe['name']} ({probe.get('threat_model', '')})", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _to_svg(fig, f"ROC of probe {probe['name']}")


def epsilon_rounds_svg(accounting: dict, claim: dict) -> str | None:
    """Epsilon at the claimed delta over rounds, one line per accountant, with the claim as a line."""
    over = (accounting or {}).get("over_rounds") or {}
    if over.get("available") is False or not over.get("rounds"):
        return None
    fig = Figure(figsize=(5.2, 3.6))
    ax = fig.subplots()
    for series in over["series"]:
        pts = [(r, e) for r, e in zip(series["x"], series["y"], strict=False) if e is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=series.get("label", ""))
    ax.axhline(
        claim["epsilon"], color="#c0392b", ls="--", lw=1, label=f"claim epsilon = {claim['epsilon']:g}"
    )
    ax.set_xlabel("rounds (releases)")
    ax.set_ylabel(f"epsilon at delta = {claim['delta']:.3g}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _to_svg(fig, "epsilon over rounds")


def utility_svg(utility: dict) -> str | None:
    """Utility over rounds with the privacy spent (epsilon) on a second axis."""
    if not utility or utility.get("available") is False or not utility.get("rounds"):
        return None
    fig = Figure(figsize=(5.2, 3.6))
    ax = fig.subplots()
    rounds, values = utility["rounds"], utility["values"]
    pts = [(r, v) for r, v in zip(rounds, values, strict=False) if v is not None]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], color="#1f5fa8", label=utility["metric"])
    stderr = utility.get("stderr") or []
    if stderr and len(stderr) == len(values) and all(s is not None for s in stderr):
        low = [v - s for v, s in zip(values, stderr, strict=True)]
        high = [v + s for v, s in zip(values, stderr, strict=True)]
        ax.fill_between(rounds, low, high, color="#1f5fa8", alpha=0.2, label="+/- 1 standard error")
    ax.set_xlabel("round")
    ax.set_ylabel(utility["metric"])
    ax.grid(True, alpha=0.3)
    spent = utility.get("epsilon_spent") or []
    if spent and len(spent) == len(rounds):
        twin = ax.twinx()
        pts = [(r, e) for r, e in zip(rounds, spent, strict=True) if e is not None]
        label = (
            f"epsilon spent ({utility['epsilon_accountant']})"
            if utility.get("epsilon_accountant")
            else ("epsilon spent")
        )
        twin.plot([p[0] for p in pts], [p[1] for p in pts], color="#c0392b", ls="--", label=label)
        twin.set_ylabel(label, color="#c0392b")
    ax.legend(fontsize=7, loc="upper right")
    return _to_svg(fig, "utility over rounds")
