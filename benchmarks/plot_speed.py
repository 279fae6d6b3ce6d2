"""Speed of the HTML report's plots: ``reports.render_html.render_plots`` (every SVG of a report) with the
previous ``reports.plots._to_svg`` against the current one, side by side in one process (a script, not a
timed test).

The previous ``_to_svg`` is reimplemented below (``legacy_to_svg``: ``fig.savefig(..., format="svg",
bbox_inches="tight")``, as before) and swapped in for the "old" runs; the figures themselves are built by
the same code either way. Runs alternate old/new; each side's minimum and median, and the median of the
paired runs' ratios, are printed: read the ratios (the machine is shared and noisy), not the seconds.

Reports timed: the small audit (``configs/audit_small.toml``, run once through the CLI into a temporary
folder: summary, two ROC plots, one utility plot), the tests' synthetic report (every plot kind), and any
``--report report.json`` given (for example the 8-target ``configs/audit_algorithm_bugs.toml``).

``--check`` also screenshots every plot both ways with headless Chromium (when installed) and reports
the largest pixel difference, and checks that the new SVGs are deterministic (same data, same bytes).

Usage: python benchmarks/plot_speed.py [--repeats 5] [--report PATH ...] [--check]
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = Path(_HERE).parent
# benchmarks/accounting.py and attacks.py would shadow the packages while this folder leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [str(ROOT)]

from reports import plots  # noqa: E402
from reports.render_html import render_plots  # noqa: E402

NEW_TO_SVG = plots._to_svg


def legacy_to_svg(fig, label: str) -> str:
    """``reports.plots._to_svg`` before this change (verbatim)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buffer.getvalue()
    start = plots._SVG_START.search(text)
    svg = plots._COMMENT.sub("", text[start.start() :] if start else text)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label, quote=True)}" class="plot" ', 1)


def _render(report: dict, which: str) -> dict:
    plots._to_svg = legacy_to_svg if which == "old" else NEW_TO_SVG
    try:
        return render_plots(report)
    finally:
        plots._to_svg = NEW_TO_SVG


def _flat(rendered: dict) -> list[tuple[str, str]]:
    out = [("summary", rendered["summary"])]
    out += [(f"epsilon-{i}", s) for i, s in enumerate(rendered["epsilon"])]
    out += [(f"utility-{i}", s) for i, s in enumerate(rendered["utility"])]
    out += [(f"roc-{i}-{j}", s) for i, row in enumerate(rendered["roc"]) for j, s in enumerate(row)]
    return [(name, str(s)) for name, s in out if s]


def small_audit_report(workdir: Path) -> dict:
    from reports.cli import main

    out = workdir / "small"
    code = main(["audit", str(ROOT / "configs" / "audit_small.toml"), "--out", str(out), "--quiet"])
    assert code in (0, 1, 3), code
    return json.loads((out / "report.json").read_text())


def synthetic() -> dict:
    from tests.reports.synthetic_report import synthetic_report

    return json.loads(json.dumps(synthetic_report()))  # as saved (tuples become lists)


def time_report(name: str, report: dict, repeats: int) -> float:
    figures = len(_flat(_render(report, "new")))
    _render(report, "old")  # warm both paths (imports, font cache)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(repeats):
        for which in ("old", "new"):
            start = time.perf_counter()
            _render(report, which)
            times[which].append(time.perf_counter() - start)
    old_min, new_min = min(times["old"]), min(times["new"])
    old_med, new_med = statistics.median(times["old"]), statistics.median(times["new"])
    paired = statistics.median(o / n for o, n in zip(times["old"], times["new"], strict=True))
    print(
        f"{name:34s} {figures:3d} plots  old {old_min:6.2f} s (median {old_med:6.2f})  "
        f"new {new_min:6.2f} s (median {new_med:6.2f})  ratio old/new: min {old_min / new_min:4.1f}x, "
        f"median {old_med / new_med:4.1f}x, median of paired runs {paired:4.1f}x",
        flush=True,
    )
    return old_min / new_min


def per_plot(report: dict, repeats: int) -> None:
    """Each plot kind of the report alone (the first of its kind), old against new."""
    targets = report["targets"]
    calls = {"summary": lambda: plots.summary_svg(report)}
    for t in targets:
        ran = [p for p in t["probes"] if p["outcome"] == "ran"]
        if ran and "roc" not in calls:
            calls["roc"] = lambda t=t, p=ran[0]: plots.roc_svg(p, t["claim"])
        if t["accounting"].get("over_rounds") and "epsilon" not in calls:
            calls["epsilon"] = lambda t=t: plots.epsilon_rounds_svg(t["accounting"], t["claim"])
        if t["utility"].get("rounds") and "utility" not in calls:
            calls["utility"] = lambda t=t: plots.utility_svg(t["utility"])
    for kind, call in calls.items():
        best = {}
        for which, fn in (("old", legacy_to_svg), ("new", NEW_TO_SVG)) * repeats:
            plots._to_svg = fn
            start = time.perf_counter()
            call()
            best[which] = min(best.get(which, 1e9), time.perf_counter() - start)
        plots._to_svg = NEW_TO_SVG
        print(
            f"   {kind:8s} old {best['old'] * 1000:7.0f} ms  new {best['new'] * 1000:7.0f} ms  "
            f"ratio {best['old'] / best['new']:4.1f}x",
            flush=True,
        )


def _screenshot(chromium: str, svg: str, path: Path, profile: Path) -> object:
    import numpy as np
    from PIL import Image

    page = path.with_suffix(".html")
    page.write_text(f'<!doctype html><body style="margin:0;background:#fff">{svg}</body>')
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--window-size=1000,1400",
            "--force-device-scale-factor=2",
            f"--screenshot={path}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return np.asarray(Image.open(path).convert("L"), dtype=np.int16)


def check(name: str, report: dict, workdir: Path) -> None:
    import numpy as np

    new, again = _render(report, "new"), _render(report, "new")
    assert _flat(new) == _flat(again), "the new SVGs are not deterministic"
    old = _render(report, "old")
    browsers = ("chromium", "chromium-browser", "google-chrome")
    chromium = next((shutil.which(n) for n in browsers if shutil.which(n)), None)
    if chromium is None:
        print(f"   {name}: deterministic; no Chromium, so no pixel comparison")
        return
    for (plot, a), (_, b) in zip(_flat(old), _flat(new), strict=True):
        pa = _screenshot(chromium, a, workdir / f"{plot}-old.png", workdir / "profile")
        pb = _screenshot(chromium, b, workdir / f"{plot}-new.png", workdir / "profile")
        diff = np.abs(pa - pb)
        print(
            f"   {name} {plot:10s} bytes {len(a):7d} -> {len(b):7d}  identical bytes: {a == b!s:5s}  "
            f"pixels differing: {int((diff > 0).sum())} (of {diff.size}), largest difference {int(diff.max())}/255"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--report", action="append", default=[], help="a report.json to time as well")
    parser.add_argument("--check", action="store_true", help="pixel comparison (Chromium) and determinism")
    parser.add_argument("--no-audit", action="store_true", help="skip running the small audit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="plot-speed-") as tmp:
        workdir = Path(tmp)
        reports = []
        if not args.no_audit:
            reports.append(("small audit (audit_small.toml)", small_audit_report(workdir)))
        reports.append(("synthetic report (tests)", synthetic()))
        reports += [(Path(p).parent.name + "/report.json", json.loads(Path(p).read_text())) for p in args.report]
        print(f"render_plots, old _to_svg (savefig bbox_inches='tight') vs new; {args.repeats} runs each, alternated")
        for name, report in reports:
            time_report(name, report, args.repeats)
            per_plot(report, args.repeats)
        if args.check:
            for name, report in reports:
                check(name, report, workdir)


if __name__ == "__main__":
    main()
