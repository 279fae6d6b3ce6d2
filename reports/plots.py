"""Report plots as self-contained inline SVG strings (matplotlib, no pyplot state, deterministic).

Every function takes report sections (plain dicts, see ``reports.model``) and returns an ``<svg>``
element as text, or ``None`` when there is nothing to draw. Glyphs are drawn as paths, so the SVG
needs no fonts or network; ids are salted with a constant so the same data gives the same bytes.
"""

from __future__ import annotations

import html
import io
import math
import re

import matplotlib

matplotlib.use("Agg")
from matplotlib import rcParams  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

rcParams["svg.hashsalt"] = "dpfed-audit"
rcParams["svg.fonttype"] = "path"
_SVG_START = re.compile(r"<svg\b", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def plain(text) -> str:
    """Report text for a matplotlib label: no mathtext (a '$' in a name is a dollar sign)."""
    return str(text).replace("$", r"\$")


def _to_svg(fig: Figure, label: str) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buffer.getvalue()
    start = _SVG_START.search(text)
    svg = _COMMENT.sub("", text[start.start() :] if start else text)  # comments repeat label text verbatim
    # accessible name for screen readers and for tests that look for the plots (escaped: it holds report text)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label, quote=True)}" class="plot" ', 1)


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def claim_boundary(epsilon: float, delta: float, fpr):
    """The largest TPR an (epsilon, delta)-DP mechanism allows at each FPR: min(e^eps FPR + delta,
    1 - e^-eps (1 - delta - FPR))."""
    import numpy as np

    a = np.asarray(fpr, dtype=float)
    return np.clip(np.minimum(math.exp(epsilon) * a + delta, 1 - math.exp(-epsilon) * (1 - delta - a)), 0, 1)


def _positive_pairs(xs, ys):
    pairs = [(x, y) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None and x > 0 and y > 0]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def roc_svg(probe: dict, claim: dict | None = None) -> str | None:
    """Empirical ROC (log-log) drawn over the accountant's trade-off curve (the best possible ROC) and the
    claimed (epsilon, delta) boundary (no ROC of a mechanism meeting the claim lies above it)."""
    roc, tradeoff = probe.get("roc") or {}, probe.get("tradeoff") or {}
    fig = Figure(figsize=(5.2, 4.0))
    ax = fig.subplots()
    drew = False
    if tradeoff.get("available", True) is not False and tradeoff.get("x"):
        x, y = _positive_pairs(tradeoff["x"], tradeoff["y"])
        if x:
            ax.plot(x, y, color="#c0392b", lw=2, label=plain(tradeoff.get("label", "accountant trade-off bound")))
            drew = True
    if roc and roc.get("x"):
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
    if claim is not None:
        import numpy as np

        grid = np.logspace(-7, 0, 200)
        ax.plot(
            grid,
            claim_boundary(float(claim["epsilon"]), float(claim["delta"]), grid),
            color="#7b3fa0",
            lw=1.2,
            ls="--",
            label=f"claimed ({claim['epsilon']:g}, {claim['delta']:.3g}) boundary",
        )
    ax.plot([1e-7, 1], [1e-7, 1], color="#999999", lw=0.8, ls=":", label="random guess")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(max(1e-6, 0.5 / max(probe.get("trials", 1), 1)), 1)
    ax.set_ylim(max(1e-6, 0.5 / max(probe.get("trials", 1), 1)), 1.05)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(plain(f"{probe['name']} ({probe.get('threat_model', '')})"), fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _to_svg(fig, f"ROC of probe {probe['name']}")


def epsilon_rounds_svg(accounting: dict, claim: dict) -> str | None:
    """Epsilon at the claimed delta over rounds, one line per accountant, with the claim as a line."""
    series = (accounting or {}).get("over_rounds") or []
    if (accounting or {}).get("available") is False or not series:
        return None
    fig = Figure(figsize=(5.2, 3.6))
    ax = fig.subplots()
    for line in series:
        pts = [(x, _finite(y)) for x, y in zip(line["x"], line["y"], strict=False) if _finite(y) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=plain(line["label"]))
    ax.axhline(claim["epsilon"], color="#c0392b", ls="--", lw=1, label=f"claim epsilon = {claim['epsilon']:g}")
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
    ax.plot([p[0] for p in pts], [p[1] for p in pts], color="#1f5fa8", label=plain(utility["metric"]))
    stderr = utility.get("stderr") or []
    if stderr and len(stderr) == len(values) and all(s is not None for s in stderr):
        low = [v - s for v, s in zip(values, stderr, strict=True)]
        high = [v + s for v, s in zip(values, stderr, strict=True)]
        ax.fill_between(rounds, low, high, color="#1f5fa8", alpha=0.2, label="+/- 1 standard error")
    ax.set_xlabel("round")
    ax.set_ylabel(plain(utility["metric"]))
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


def _accountant_bounds(target: dict) -> list[tuple[str, float]]:
    acc = target.get("accounting") or {}
    return [
        (r["accountant"], float(r["epsilon"]))
        for r in acc.get("rows", [])
        if r["claimed_setting"] and r["status"] == "ok" and r["epsilon"] is not None
    ]


def _probe_bounds(target: dict) -> list[tuple[str, float, float | None]]:
    out = []
    for p in target.get("probes", []):
        rigorous = [float(b["epsilon"]) for b in p.get("bounds", []) if b["rigorous"]]
        if p.get("outcome") == "ran" and rigorous:
            out.append((p["name"], max(rigorous), _finite(p.get("ceiling"))))
    return out


def summary_svg(report: dict) -> str | None:
    """Every target on one epsilon axis: the claim, each accountant's upper bound (the tightest marked),
    each probe's best rigorous lower bound and the ceiling its budget allowed. Infinite values are drawn
    at the right edge with an arrow."""
    targets = report.get("targets") or []
    finite = [t["claim"]["epsilon"] for t in targets]
    finite += [e for t in targets for _, e in _accountant_bounds(t) if math.isfinite(e)]
    finite += [c for t in targets for _, _, c in _probe_bounds(t) if c is not None]
    if not targets:
        return None
    edge = 1.1 * max(finite)
    fig = Figure(figsize=(7.5, 0.9 + 0.75 * len(targets)))
    ax = fig.subplots()
    marks = _SummaryMarks(ax, edge)
    for row, t in enumerate(targets):
        _draw_summary_row(marks, t, len(targets) - 1 - row)
    ax.set_yticks(range(len(targets)))
    ax.set_yticklabels([plain(t["name"][:48]) for t in reversed(targets)], fontsize=7)
    ax.set_xlim(0, edge * 1.02)
    ax.set_ylim(-0.6, len(targets) - 0.4)
    ax.set_xlabel("epsilon (at each target's claimed delta)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3)
    return _to_svg(fig, "summary: claims, upper and lower bounds of every target")


class _SummaryMarks:
    """Draws on the summary axis: values beyond ``edge`` (infinite ones too) at the edge; each legend label
    once."""

    def __init__(self, ax, edge: float):
        self.ax, self.edge, self.seen = ax, edge, set()

    def mark(self, x, y, label, **style) -> None:
        self.ax.plot([min(x, self.edge)], [y], linestyle="none", label=None if label in self.seen else label, **style)
        self.seen.add(label)

    def ceiling(self, lower, ceiling, y) -> None:
        """The band from a probe's lower bound to the ceiling of its estimator."""
        self.ax.plot(
            [lower, min(ceiling, self.edge)],
            [y] * 2,
            color="#2e7d32",
            alpha=0.35,
            lw=4,
            label=None if "ceiling" in self.seen else "lower bound .. ceiling of the estimator used",
        )
        self.seen.add("ceiling")


def _draw_summary_row(marks: _SummaryMarks, target: dict, y: float) -> None:
    """One target at height ``y``: its claim, accountants' upper bounds above, probes' lower bounds below."""
    marks.mark(target["claim"]["epsilon"], y, "claim", marker="|", ms=22, mew=2.5, color="#c0392b")
    uppers = _accountant_bounds(target)
    for _name, eps in uppers:
        marks.mark(
            eps,
            y + 0.12,
            "accountant upper bound",
            marker=">" if not math.isfinite(eps) else "o",
            ms=5,
            color="#1f5fa8",
            alpha=0.6,
        )
    if uppers:
        tight = min(e for _, e in uppers)
        marks.mark(tight, y + 0.12, "tightest upper bound", marker="*", ms=12, color="#1f5fa8")
    for k, (_, lower, ceiling) in enumerate(_probe_bounds(target)):
        y_probe = y - 0.12 - 0.1 * k
        if ceiling is not None:
            marks.ceiling(lower, ceiling, y_probe)
        marks.mark(lower, y_probe, "best rigorous lower bound", marker="^", ms=7, color="#2e7d32")
