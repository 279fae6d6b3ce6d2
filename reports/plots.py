"""Report plots as self-contained inline SVG strings (matplotlib, no pyplot state, deterministic).

Every function takes report sections (plain dicts, see ``reports.model``) and returns an ``<svg>``
element as text, or ``None`` when there is nothing to draw. Glyphs are drawn as paths, so the SVG
needs no fonts or network; ids are salted with a constant so the same data gives the same bytes.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import html
import io
import math
import re
import threading
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
from matplotlib import cbook, rcParams  # noqa: E402
from matplotlib.backends.backend_mixed import MixedModeRenderer  # noqa: E402
from matplotlib.backends.backend_svg import FigureCanvasSVG, RendererSVG  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.textpath import TextToPath  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

rcParams["svg.hashsalt"] = "dpfed-audit"
rcParams["svg.fonttype"] = "path"
_SVG_START = re.compile(r"<svg\b", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def plain(text) -> str:
    """Report text for a matplotlib label: no mathtext (a '$' in a name is a dollar sign)."""
    return str(text).replace("$", r"\$")


_LOCAL = threading.local()  # matplotlib's font objects are not shared between threads


class _CachedTextToPath(TextToPath):
    """``TextToPath`` remembering each string's glyph layout (libraqm shaping, ~2 ms a string): the same
    glyphs at the same places, and the glyph definitions new to the figure, in the same order."""

    def __init__(self):
        super().__init__()
        self._layouts: dict = {}

    def get_glyphs_with_font(
        self, font, s, glyph_map=None, return_new_glyphs_only=False, *, features=None, language=None
    ):
        key = (font, s, features, language)  # the font object itself (held here, so never a reused id)
        if key not in self._layouts:
            glyphs, paths, _ = super().get_glyphs_with_font(font, s, {}, True, features=features, language=language)
            if len(self._layouts) > 4096:
                self._layouts.clear()
            self._layouts[key] = (glyphs, paths)
        glyphs, paths = self._layouts[key]
        if glyph_map is None:
            glyph_map = OrderedDict()
        glyph_map_new = OrderedDict() if return_new_glyphs_only else glyph_map
        for glyph in glyphs:
            if glyph[0] not in glyph_map:
                glyph_map_new[glyph[0]] = paths[glyph[0]]
        return list(glyphs), glyph_map_new, []


def _text_to_path() -> TextToPath:
    """One TextToPath per thread, so its mathtext parses (log tick labels) and its glyph layouts are
    cached across figures."""
    if not hasattr(_LOCAL, "text2path"):
        _LOCAL.text2path = _CachedTextToPath()
    return _LOCAL.text2path


@functools.lru_cache(maxsize=4096)
def _path_text_metrics(text: str, prop, ismath) -> tuple[float, float, float]:
    # Glyphs drawn as paths are measured from the font outlines at a fixed scale: the size of a text is a
    # function of (text, font properties, ismath) alone, so one cache serves every figure and renderer
    # (matplotlib's own cache lives and dies with each renderer: twice per figure). Assumes this module's
    # rcParams (no usetex), which nothing here changes after import.
    return _text_to_path().get_text_width_height_descent(text, prop, ismath)


class _PathTextRendererSVG(RendererSVG):
    """The SVG renderer with text metrics cached across figures (same numbers, same output)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._text2path = _text_to_path()

    def get_text_width_height_descent(self, s, prop, ismath):
        return _path_text_metrics(s, prop.copy(), ismath)  # a copy: FontProperties is mutable


class _Canvas(FigureCanvasSVG):
    """``FigureCanvasSVG`` drawing through ``_PathTextRendererSVG`` (``print_svg`` as matplotlib's, whose
    renderer class it cannot be told)."""

    def print_svg(self, filename, *, bbox_inches_restore=None, metadata=None, **_):
        with cbook.open_file_cm(filename, "w", encoding="utf-8") as fh:
            if not cbook.file_requires_unicode(fh):
                fh = codecs.getwriter("utf-8")(fh)
            dpi = self.figure.dpi
            self.figure.dpi = 72
            width, height = self.figure.get_size_inches()
            renderer = MixedModeRenderer(
                self.figure,
                width,
                height,
                dpi,
                _PathTextRendererSVG(width * 72, height * 72, fh, image_dpi=dpi, metadata=metadata),
                bbox_inches_restore=bbox_inches_restore,
            )
            self.figure.draw(renderer)
            renderer.finalize()


def _minor_ticks_as_one_line(axis) -> None:
    """Draw an axis's unlabelled minor ticks as one line of tick markers instead of one ``Tick`` (five
    artists, laid out again on every pass) per tick: the same marks at the same places (a log axis has
    ~8 per decade, most of a ROC plot's drawing time). Left alone when any minor tick has a label or a
    grid line, or draws on the second side."""
    if isinstance(axis.get_minor_locator(), NullLocator) or not axis.get_visible():
        return
    locs = axis.get_minorticklocs()  # without those at a major tick, as matplotlib draws them
    low, high = sorted(axis.get_view_interval())
    if not len(locs):
        return
    scale = axis.get_transform()
    a, b = scale.transform([low, high])
    tol = (b - a) * 1e-10  # matplotlib's test for a tick within the view (_interval_contains_close)
    locs = [loc for loc, t in zip(locs, scale.transform(locs), strict=True) if a - tol <= t <= b + tol]
    tick = axis.get_minor_ticks(1)[0]
    labelled = tick.label1.get_visible() and any(axis.get_minor_formatter().format_ticks(locs))
    if not locs or labelled or tick.gridline.get_visible() or tick.label2.get_visible() or tick.tick2line.get_visible():
        return
    mark = tick.tick1line
    ones = [0.0] * len(locs)
    xy = (locs, ones) if axis.axis_name == "x" else (ones, locs)
    line = Line2D(
        *xy,
        linestyle="none",
        marker=mark.get_marker(),
        markersize=mark.get_markersize(),
        markeredgewidth=mark.get_markeredgewidth(),
        markeredgecolor=mark.get_markeredgecolor(),
        color=mark.get_color(),
        alpha=mark.get_alpha(),
        zorder=axis.get_zorder(),
        transform=mark.get_transform(),
        clip_on=False,
        visible=mark.get_visible(),
    )
    axis.set_minor_locator(NullLocator())
    axis.axes.add_artist(line)


@contextlib.contextmanager
def _ticks_once_per_pass(fig: Figure):
    """Within one pass (measuring, or drawing), each axis works out its ticks once: matplotlib does it
    again for every spine, sibling axis, label and title that asks (~24 times a figure), with the same
    limits, locator and formatter, so with the same result."""
    axes = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)]
    for axis in axes:
        axis._update_ticks = functools.cache(axis._update_ticks)  # an instance attribute over the method
    try:
        yield
    finally:
        for axis in axes:
            del axis._update_ticks


def _to_svg(fig: Figure, label: str) -> str:
    """The figure cropped to its drawn extent (what ``bbox_inches="tight"`` gives) as SVG text, laid out
    once: the extent is measured without matplotlib's extra (not drawing) pass before the real one."""
    for ax in fig.axes:
        _minor_ticks_as_one_line(ax.xaxis)
        _minor_ticks_as_one_line(ax.yaxis)
    _Canvas(fig)
    fig.dpi = 72  # as the SVG canvas draws (1 pixel = 1 point)
    width, height = fig.get_size_inches()
    measure = _PathTextRendererSVG(width * 72, height * 72, io.StringIO())
    pad = rcParams["savefig.pad_inches"]
    with _ticks_once_per_pass(fig):
        bbox = fig.get_tightbbox(measure).padded(pad)
    buffer = io.StringIO()
    with _ticks_once_per_pass(fig):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=bbox)
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
    """``roc_figure`` as inline SVG (None when there is nothing to draw)."""
    fig = roc_figure(probe, claim)
    return None if fig is None else _to_svg(fig, f"ROC of probe {probe['name']}")


def roc_figure(probe: dict, claim: dict | None = None) -> Figure | None:
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
    low = max(1e-6, 0.5 / max(probe.get("trials", 1), 1))
    if claim is not None:
        _claim_boundary_line(ax, claim, low)
    ax.plot([1e-7, 1], [1e-7, 1], color="#999999", lw=0.8, ls=":", label="random guess")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, 1)
    ax.set_ylim(low, 1.05)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(plain(f"{probe['name']} ({probe.get('threat_model', '')})"), fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


FRAME_TPR = 0.99  # on the ROC plot's log axis (top 1.05) a TPR above this lies within about 1% of the top frame


def claim_boundary_points(epsilon: float, delta: float, low: float):
    """The claimed boundary over FPR in [low, 1] where it lies visibly below the top frame (TPR < 0.99);
    a large claim's boundary is ~1 almost everywhere and would be drawn along the frame. Returns (fpr, tpr,
    the first FPR from which TPR >= 0.99, or None)."""
    import numpy as np

    grid = np.logspace(math.log10(low), 0, 400)
    tpr = claim_boundary(epsilon, delta, grid)
    binding = tpr < FRAME_TPR
    saturated = grid[~binding]
    return grid[binding], tpr[binding], float(saturated[0]) if saturated.size else None


def _claim_boundary_line(ax, claim: dict, low: float) -> None:
    """The claimed (epsilon, delta) boundary, only where it lies visibly below TPR = 1; the legend says from
    which FPR it is ~1 (for a large claim every FPR shown: the claim constrains nothing visible)."""
    eps, delta = float(claim["epsilon"]), float(claim["delta"])
    x, y, saturated = claim_boundary_points(eps, delta, low)
    label = f"claimed ({eps:g}, {delta:.3g}) boundary"
    if saturated is not None:
        label += f": TPR >= {FRAME_TPR:g} for FPR >= {saturated:.2g}" + (" (no constraint shown)" if not len(x) else "")
    ax.plot(x, y, color="#7b3fa0", lw=1.2, ls="--", label=label, gid="claim-boundary")


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


SUMMARY_LABEL_WIDTH = 34  # characters per line of a target's label (wrapped, never cut)
LANE = 0.28  # height of one lane (the claim and upper bounds, or one probe) in data units = inches / 1.25


def _lanes(target: dict) -> int:
    return 1 + len(_probe_bounds(target))


def summary_layout(targets: list[dict]) -> list[tuple[float, float]]:
    """(bottom, top) of each target's band, top to bottom: one lane for the claim and upper bounds, one per
    probe, and padding; bands never overlap, so two rows never share one label."""
    bands, top = [], 0.0
    for t in targets:
        height = LANE * (_lanes(t) + 1)
        bands.append((top - height, top))
        top -= height
    return bands


def summary_figure(report: dict) -> Figure | None:
    """Every target on one epsilon axis: the claim, each accountant's upper bound (the tightest marked),
    each probe's best rigorous lower bound and the ceiling its budget allowed. Each target has its own
    shaded band with its full name (wrapped); infinite values are drawn at the right edge as arrows
    marked "inf"."""
    import textwrap

    targets = report.get("targets") or []
    if not targets:
        return None
    finite = [float(t["claim"]["epsilon"]) for t in targets]
    finite += [e for t in targets for _, e in _accountant_bounds(t) if math.isfinite(e)]
    finite += [c for t in targets for _, _, c in _probe_bounds(t) if c is not None]
    finite += [lo for t in targets for _, lo, _ in _probe_bounds(t) if math.isfinite(lo)]
    edge = 1.1 * max(finite)
    bands = summary_layout(targets)
    height = -bands[-1][0]
    fig_height = 1.6 + 1.25 * height
    fig = Figure(figsize=(8.5, fig_height))
    ax = fig.subplots()
    marks = _SummaryMarks(ax, edge)
    for i, (t, band) in enumerate(zip(targets, bands, strict=True)):
        if i % 2 == 0:
            ax.axhspan(band[0], band[1], color="#f0f0f0", zorder=0, lw=0, gid=f"band-{i}")
        _draw_summary_row(marks, t, band, f"target-{i}")
    ax.set_yticks([(b + t) / 2 for b, t in bands])
    ax.set_yticklabels(
        [plain(textwrap.fill(t["name"], SUMMARY_LABEL_WIDTH, break_on_hyphens=False)) for t in targets], fontsize=7
    )
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(-0.015 * edge, edge * 1.08)  # a lower bound of 0 stays a whole triangle
    ax.set_ylim(-height, 0)
    ax.set_xlabel("epsilon (at each target's claimed delta); values beyond the axis, and inf, are drawn at its edge")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(
        handles=marks.legend_handles(),
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.6 / (0.77 * fig_height)),  # 0.6 inch below the axes (default margins)
        ncol=2,
        handlelength=2.5,
        columnspacing=2.5,
        labelspacing=0.9,
    )
    return fig


def summary_svg(report: dict) -> str | None:
    """``summary_figure`` as inline SVG (None without targets)."""
    fig = summary_figure(report)
    return None if fig is None else _to_svg(fig, "summary: claims, upper and lower bounds of every target")


LEGEND_STYLES = {
    "claim": dict(marker="|", ms=10, mew=2.5, color="#c0392b"),
    "accountant upper bound": dict(marker="o", ms=5, color="#1f5fa8", alpha=0.6),
    "tightest upper bound": dict(marker="*", ms=10, color="#1f5fa8"),
    "infinite (drawn at the edge)": dict(marker=">", ms=8, color="#1f5fa8"),
    "best rigorous lower bound": dict(marker="^", ms=7, color="#2e7d32"),
}


class _SummaryMarks:
    """Draws on the summary axis: values beyond ``edge`` (infinite ones too) at the edge, as arrows with
    "inf" written beside an infinite one; remembers which legend entries were used."""

    def __init__(self, ax, edge: float):
        self.ax, self.edge, self.seen, self.count, self.edge_texts = ax, edge, [], 0, set()

    def _gid(self, prefix: str) -> str:
        """A unique id per mark ("target-3-7"): the SVG writes gids as element ids."""
        self.count += 1
        return f"{prefix}-{self.count}"

    def _use(self, label: str) -> None:
        if label not in self.seen:
            self.seen.append(label)

    def mark(self, x, y, label, gid, **style) -> None:
        x = float(x)
        if not math.isfinite(x) or x > self.edge:
            style = {**style, "marker": ">", "ms": 8}
            self._use("infinite (drawn at the edge)")
            text = "inf" if not math.isfinite(x) else fmt_short(x)
            if (y, text) not in self.edge_texts:  # several accountants at inf: one word, not a smudge
                self.edge_texts.add((y, text))
                self.ax.text(self.edge * 1.012, y, text, fontsize=6, va="center", ha="left", color=style.get("color"))
            x = self.edge
        else:
            self._use(label)
        self.ax.plot([x], [y], linestyle="none", gid=self._gid(gid), **style)

    def ceiling(self, lower, ceiling, y, gid) -> None:
        """The band from a probe's lower bound to the ceiling of its estimator."""
        self.ax.plot([lower, min(ceiling, self.edge)], [y] * 2, color="#2e7d32", alpha=0.35, lw=4, gid=self._gid(gid))
        self._use("lower bound .. ceiling of the estimator used")

    def legend_handles(self) -> list:
        from matplotlib.lines import Line2D

        handles = []
        for label in self.seen:
            if label in LEGEND_STYLES:
                handles.append(Line2D([], [], linestyle="none", label=label, **LEGEND_STYLES[label]))
            else:
                handles.append(Line2D([], [], color="#2e7d32", alpha=0.35, lw=4, label=label))
        return handles


def fmt_short(x: float) -> str:
    return f"{x:.3g}"


def _draw_summary_row(marks: _SummaryMarks, target: dict, band: tuple[float, float], gid: str) -> None:
    """One target in its band: the claim and accountants' upper bounds in the top lane, one lane per probe
    below (its best rigorous lower bound and the band up to its estimator's ceiling)."""
    y = band[1] - LANE
    # the claim on top (zorder): an upper bound equal to it (a star or a dot) must not hide it
    marks.mark(target["claim"]["epsilon"], y, "claim", gid, **{**LEGEND_STYLES["claim"], "ms": 14, "zorder": 4})
    uppers = _accountant_bounds(target)
    for _name, eps in uppers:
        marks.mark(eps, y, "accountant upper bound", gid, **LEGEND_STYLES["accountant upper bound"])
    if uppers:
        tight = min(e for _, e in uppers)
        if math.isfinite(tight):  # an infinite tightest bound is an arrow at the edge, never a star
            marks.mark(tight, y, "tightest upper bound", gid, **LEGEND_STYLES["tightest upper bound"])
    for k, (name, lower, ceiling) in enumerate(_probe_bounds(target)):
        y_probe = y - LANE * (k + 1)
        if ceiling is not None:
            marks.ceiling(lower, ceiling, y_probe, gid)
        right = min(max(lower, ceiling if ceiling is not None else lower), marks.edge)
        marks.ax.text(right + 0.01 * marks.edge, y_probe, plain(name), fontsize=6, va="center", color="#2e7d32")
        marks.mark(lower, y_probe, "best rigorous lower bound", gid, **LEGEND_STYLES["best rigorous lower bound"])
