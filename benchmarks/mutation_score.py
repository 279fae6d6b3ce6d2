"""Mutation score of the private variants' release code against their bundled audits (issue 21 item 5).

Run: ``python benchmarks/mutation_score.py [--systems fedzero,fkm,...] [--parallel N] [--count] [--out DIR]``
(needs the ``mutation`` extra: cosmic-ray). For each system, cosmic-ray mutates the privacy-relevant
functions of its release code (``SCOPE``: noise, clip, sampling, what is broadcast) in a copy of the
tracked files (the work tree is never touched), one mutant at a time, and runs
``benchmarks/mutation_audit.py SYSTEM`` (that system's bundled audit, as ``dpaudit audit`` plans it): a
VIOLATION (exit 1) or a broken run (exit 3, an exception) kills the mutant, a PASS lets it survive. Prints
killed / survived per file and every survivor's diff; writes ``DIR/mutation_results.json``.

Operators (``OPERATORS``): cosmic-ray's core operators restricted to the arithmetic ones (+ - * / ** among
themselves: the bitwise, shift, modulo and floor-division replacements of float code only raise), all
comparisons, unary operators, boolean and constant replacements, and loops run zero times. Lines of
input validation (an ``if`` whose body only raises) are not release code and are not mutated.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_SEED = 2026
PYTHON = sys.executable

# system -> [(file, qualified function, line markers or None for the whole function)]
SCOPE = {
    "fedzero": [
        ("dpfed/fedzero/private.py", "_PrivateUplink._per_worker", None),
        ("dpfed/fedzero/private.py", "WorkerScalarUplink.aggregate", None),
        ("dpfed/fedzero/private.py", "dp_uplink", None),
    ],
    "fkm": [
        ("dpfed/fkm/private.py", "EventLevelFeedback.observe", None),
        ("dpfed/fkm/private.py", "event_mechanism", None),
        ("dpfed/fkm/algorithm.py", "_play", ("feedback.observe", "one_point_gradient", '"loss", observed')),
    ],
    "duets": [
        ("dpfed/duets/private.py", "agent_clip_bound", None),
        ("dpfed/duets/private.py", "epoch_mechanism", None),
        ("dpfed/duets/private.py", "release_sum", None),
        ("dpfed/duets/algorithm.py", "clip_rewards", None),
        ("dpfed/duets/algorithm.py", "server_release", None),
        (
            "dpfed/duets/algorithm.py",
            "communicate",
            ("statistics = ", "total = ", "if config.private", "v_bar = ", '"v_bar"'),
        ),
    ],
    "pne": [
        ("dpfed/pne/private.py", "RewardPrivatizer.__call__", None),
        ("dpfed/pne/private.py", "RewardPrivatizer.final", None),
        ("dpfed/pne/private.py", "dp_mechanism", None),
    ],
    "fts": [
        (
            "dpfed/fts/server.py",
            "Server.aggregate",
            ("present = ", "uploads = xp.where", "w = self.weights", "self.mechanism is None", "mask = ", "if self."),
        ),
    ],
}

_ARITH = "(Add|Sub|Mul|Div|Pow)"
OPERATORS = re.compile(
    rf"core/(ReplaceBinaryOperator_{_ARITH}_{_ARITH}$|ReplaceComparisonOperator_|ReplaceUnaryOperator_|AddNot$"
    r"|ReplaceTrueWithFalse$|ReplaceFalseWithTrue$|ReplaceAndWithOr$|ReplaceOrWithAnd$|NumberReplacer$"
    r"|ZeroIterationForLoop$|ExceptionReplacer$)"
)


def function_lines(path: Path, qualified: str, markers) -> set[int]:
    """Line numbers of ``qualified`` (``f`` or ``Class.f``) in ``path`` that may be mutated: all its lines
    (or those containing one of ``markers``) less input validation (an ``if`` whose body only raises)."""
    source = path.read_text()
    tree = ast.parse(source)
    owner, _, name = qualified.rpartition(".")
    body = tree.body
    if owner:
        (cls,) = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        body = cls.body
    (func,) = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == name]
    lines = set(range(func.body[0].lineno, func.end_lineno + 1))
    for node in ast.walk(func):
        if isinstance(node, ast.If) and all(isinstance(s, ast.Raise) for s in node.body):
            lines -= set(range(node.lineno, node.end_lineno + 1))
    if markers:
        text = source.splitlines()
        lines = {n for n in lines if any(m in text[n - 1] for m in markers)}
    return lines


def copy_tree(destination: Path) -> None:
    """The tracked and untracked-but-not-ignored files of the work tree (no caches, no .git)."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def _cosmic_ray(*args, cwd: Path, env: dict) -> None:
    subprocess.run([PYTHON, "-m", "cosmic_ray.cli", *args], cwd=cwd, env=env, check=True, capture_output=True)


def session(
    system: str, work: Path, count_only: bool, timeout: float, deadline: float, sample: int | None, only=None
) -> dict:
    """Init (scoped, filtered), execute and read one system's cosmic-ray session in its own copy."""
    from cosmic_ray.work_db import WorkDB, use_db

    tree = work / system
    tree.mkdir(parents=True)
    copy_tree(tree)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    files = sorted({f for f, _, _ in SCOPE[system]})
    config = tree / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(files)}\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{PYTHON} benchmarks/mutation_audit.py {system}"\n'
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    db_path = tree / "session.sqlite"
    _cosmic_ray("init", str(config), str(db_path), cwd=tree, env=env)
    allowed = {}
    for path, qualified, markers in SCOPE[system]:
        allowed.setdefault(path, set()).update(function_lines(tree / path, qualified, markers))
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        items = db.work_items
        kept = [
            w
            for w in items
            if all(
                m.start_pos[0] in allowed.get(str(m.module_path), ()) and OPERATORS.match(m.operator_name)
                for m in w.mutations
            )
        ]
        in_scope = len(kept)
        if only:  # FILE:LINE pairs: rerun the mutants of those lines (after a fix), all of them
            kept = [w for w in kept if f"{w.mutations[0].module_path}:{w.mutations[0].start_pos[0]}" in only]
            sample = None
        if sample is not None and sample < in_scope:  # a uniform sample, fixed seed (reruns test the same ones)
            kept = random.Random(SAMPLE_SEED).sample(kept, sample)
        db.clear()
        db.add_work_items(kept)
    if count_only:
        return {"system": system, "in_scope": in_scope, "mutants": len(kept), "results": []}
    start = time.perf_counter()
    process = subprocess.Popen(
        [PYTHON, "-m", "cosmic_ray.cli", "exec", str(config), str(db_path)],
        cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        process.wait(timeout=max(1.0, deadline - time.time()))
    except subprocess.TimeoutExpired:  # out of time: stop this session (its test runs in a group of its own)
        import psutil

        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
        process.kill()
        process.wait()
    seconds = time.perf_counter() - start
    results = []
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        by_id = {w.job_id: w for w in db.work_items}
        for job_id, result in db.results:
            (mutation,) = by_id[job_id].mutations
            output = result.output or ""
            verdict = "violation" if "VIOLATION:" in output else "error" if result.is_killed else "pass"
            if result.test_outcome and result.test_outcome.value == "incompetent":
                verdict = "incompetent"
            results.append(
                {
                    "file": str(mutation.module_path),
                    "line": mutation.start_pos[0],
                    "operator": mutation.operator_name,
                    "occurrence": mutation.occurrence,
                    "killed": bool(result.is_killed),
                    "verdict": verdict,
                    "worker_outcome": result.worker_outcome.value,
                    "diff": result.diff,
                    "output": output[-600:],
                }
            )
    return {
        "system": system,
        "in_scope": in_scope,
        "mutants": len(kept),
        "seconds": seconds,
        "not_run": len(kept) - len(results),
        "results": results,
    }


# Why a surviving mutant is not a privacy bug, checked by hand (BENCHMARKS.md lists every survivor):
# (system, file, lines, pattern, category, reason), where ``pattern`` is searched in "OPERATOR MUTATED-LINE";
# the first rule that matches a survivor applies. Categories: equivalent (the release is unchanged, or no
# more revealing, in the audited configuration), more-noise, post-processing (only what is done with an
# already-noised value, or a public rescaling, changes), unaudited (a branch of a configuration no bundled
# audit runs), dead (code that does not run in the audited configuration). A survivor that no rule explains
# is "missed": a privacy bug the bundled audit does not catch.
REASONS = [
    (None, None, None, r"ReplaceComparisonOperator_(Eq_Is|NotEq_IsNot) ", "equivalent",
     "`is` on an interned string literal behaves as `==`"),
    ("fedzero", "dpfed/fedzero/private.py", {116, 119, 120}, r".", "unaudited",
     "record-level / vector-noise uplink: no bundled audit target runs it"),
    ("fedzero", "dpfed/fedzero/private.py", {50, 51, 52, 53, 54}, r".", "post-processing",
     "`_per_worker` only records and combines the uploads already noised"),
    ("fedzero", "dpfed/fedzero/private.py", {63}, r"\[\.\.\., -1\]", "equivalent",
     "index -1 of an axis of length 1 is index 0"),
    ("fedzero", "dpfed/fedzero/private.py", {63}, r"scalars\[\.\.\., : 0, None\]", "equivalent",
     "an empty slice: each upload is pure noise and carries no data (more private)"),
    ("fedzero", "dpfed/fedzero/private.py", {117}, r"_Eq_(GtE|LtE) ", "equivalent",
     "'scalar' >= 'scalar' (and <=) is True: the scalar uplink is still chosen"),
    ("pne", "dpfed/pne/private.py", {68}, r"_Eq_(Lt|LtE) ", "equivalent",
     "'none' < 'noise-shared-across-nodes' is False: the planted-bug branch stays off"),
    ("pne", "dpfed/pne/private.py", {74, 75}, r".", "dead",
     "the final partial upload is off (final_upload = False) in every bundled target"),
    ("fts", "dpfed/fts/server.py", {107}, r"_Eq_(Gt|GtE) ", "equivalent",
     "'noise' > 'uniform' is False: the fallback branch stays off"),
    ("duets", "dpfed/duets/private.py", {43, 44, 45}, r".", "equivalent",
     "the clip bound C_j: the noise is z C_j, so privacy does not depend on C_j (only the bias does)"),
    ("duets", "dpfed/duets/private.py", {50, 51, 52, 53, 68, 69}, r".", "unaudited",
     "reward-level branch (or its test, unchanged for unit = agent): no bundled audit target runs it"),
    ("duets", "dpfed/duets/private.py", {70}, r"scale=", "post-processing",
     "rescaling the released noisy sum by a public constant"),
    ("duets", "dpfed/duets/algorithm.py", {156}, r".", "dead",
     "the exact sum is overwritten by the release whenever the run is private"),
    ("duets", "dpfed/duets/algorithm.py", {136}, r".", "equivalent",
     "reward clip skipped, or narrowed to [0, c_y]: the release clips every agent's statistic to C_j anyway"),
    ("fkm", "dpfed/fkm/private.py", {90}, r"NumberReplacer", "equivalent",
     "B does not depend on the seed or the count of the loss family (B = 1)"),
    ("fkm", "dpfed/fkm/private.py", {93}, r"else (0|2)\.0,", "dead",
     "the default epsilon applies only when none is given; every bundled target gives one"),
    ("fkm", "dpfed/fkm/private.py", {52}, r"np\.clip\(value, \+?bound, bound\)", "equivalent",
     "every loss clipped to the one value B: the release carries no data"),
    ("fkm", "dpfed/fkm/private.py", {92, 93}, r"_Mul_(Pow|Div) ", "equivalent",
     "sensitivity 2B with B = 1 in the audited configuration: 2 ** B = 2 / B = 2 B"),
    ("fkm", "dpfed/fkm/private.py", {92, 93}, r"_Mul_Add |sensitivity= 3\.0|noise_multiplier, 3\.0", "more-noise",
     "sensitivity 2 + B = 3 or 3 B, above 2 B = 2"),
    ("fkm", "dpfed/fkm/private.py", {93}, r"if (not epsilon is not None|epsilon is None) else 1\.0", "more-noise",
     "calibrated to epsilon 1 instead of the configured 2"),
    ("fkm", "dpfed/fkm/private.py", {52}, r"np\.clip\(value, not bound, bound\)", "equivalent",
     "clip range narrowed to [0, B], inside [-B, B] (sensitivity B < 2 B)"),
    ("fkm", "dpfed/fkm/algorithm.py", {204}, r".", "post-processing",
     "the gradient step from the noised loss (utility only)"),
    ("fkm", "dpfed/fkm/algorithm.py", {203}, r".", "post-processing", "the round label of the transcript entry"),
    ("pne", "dpfed/pne/private.py", {69}, r".", "dead", "body of a planted-bug branch (off in the audited code)"),
    ("fts", "dpfed/fts/server.py", {105}, r"scale=", "post-processing",
     "the broadcast rescaled by a public constant (0: nothing is released)"),
    ("fts", "dpfed/fts/server.py", {108, 110, 111, 112}, r".", "dead",
     "body of the uniform-fallback / planted-bug branch (off in the audited code)"),
]


def _mutated_line(result: dict) -> str:
    lines = (result.get("diff") or "").splitlines()
    return " ".join(line[1:] for line in lines if line.startswith("+") and not line.startswith("+++"))


def reason(system: str, result: dict) -> tuple[str, str]:
    """(category, reason) of a surviving mutant: the first matching rule of ``REASONS``, else missed."""
    text = f"{result['operator'].removeprefix('core/')} {_mutated_line(result)}"
    for rule_system, path, lines, pattern, category, why in REASONS:
        if rule_system not in (None, system) or path not in (None, result["file"]):
            continue
        if (lines is None or result["line"] in lines) and re.search(pattern, text):
            return category, why
    return "missed", "no reason found: a privacy bug the bundled audit does not catch"


def summary(sessions: list[dict]) -> str:
    """Markdown: killed / survived per file, the privacy-relevant score, and every survivor with its reason."""
    lines = [
        "| system | file | tested | killed: VIOLATION | killed: run broke | survived: not a privacy bug | "
        "survived: missed | privacy-relevant killed |",
        "|---" * 8 + "|",
    ]
    totals = {"tested": 0, "killed": 0, "missed": 0}
    survivors = []
    for s in sessions:
        for path in sorted({r["file"] for r in s["results"]}):
            rows = [r for r in s["results"] if r["file"] == path]
            killed = sum(r["killed"] for r in rows)
            violation = sum(r["verdict"] == "violation" for r in rows)
            explained = missed = 0
            for r in rows:
                if not r["killed"]:
                    category, text = reason(s["system"], r)
                    survivors.append((s["system"], r, category, text))
                    missed += category == "missed"
                    explained += category != "missed"
            relevant = killed + missed
            totals["tested"] += len(rows)
            totals["killed"] += killed
            totals["missed"] += missed
            lines.append(
                f"| {s['system']} | {path} | {len(rows)} | {violation} | {killed - violation} | {explained} | "
                f"{missed} | {killed}/{relevant} |"
            )
    relevant = totals["killed"] + totals["missed"]
    if relevant:
        lines.append(
            f"| all | | {totals['tested']} | | | {totals['tested'] - totals['killed'] - totals['missed']} | "
            f"{totals['missed']} | {totals['killed']}/{relevant} = {totals['killed'] / relevant:.1%} |"
        )
    lines += ["", "| system | mutant | category | why it survives |", "|---|---|---|---|"]
    for system, r, category, text in survivors:
        change = " / ".join(
            line[1:].strip() for line in (r["diff"] or "").splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
        lines.append(f"| {system} | {r['file']}:{r['line']} `{change}` | {category} | {text} |".replace("||", "| |"))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default=",".join(SCOPE))
    parser.add_argument("--parallel", type=int, default=1, help="systems run side by side")
    parser.add_argument("--count", action="store_true", help="count the mutants in scope; run nothing")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant before cosmic-ray stops it")
    parser.add_argument("--minutes", type=float, default=60.0, help="stop every session after this long")
    parser.add_argument("--sample", default="", help="SYSTEM=N,...: test a uniform sample of N of its mutants")
    parser.add_argument("--out", default=None, help="folder for mutation_results.json (default: a temporary one)")
    parser.add_argument("--only", default="", help="FILE:LINE,...: test only the mutants of these lines")
    parser.add_argument("--summarise", metavar="JSON", help="print the summary of a finished run; run nothing")
    args = parser.parse_args(argv)
    if args.summarise:
        print(summary(json.loads(Path(args.summarise).read_text())))
        return 0
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in SCOPE]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SCOPE)}")
    samples = {k: int(v) for k, v in (item.split("=") for item in args.sample.split(",") if item)}
    deadline = time.time() + 60.0 * args.minutes
    out = Path(args.out or tempfile.mkdtemp(prefix="mutation-out-"))
    work = out / "work"  # one copy of the tree and one cosmic-ray session per system (kept for inspection)
    if work.exists():
        shutil.rmtree(work)
    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        only = set(filter(None, args.only.split(",")))
        jobs = [
            pool.submit(session, s, work, args.count, args.timeout, deadline, samples.get(s), only) for s in systems
        ]
        sessions = [job.result() for job in jobs]
    (out / "mutation_results.json").write_text(json.dumps(sessions, indent=1))
    for s in sessions:
        ran = f", {s['seconds']:.0f} s, {s['not_run']} not run in time" if "seconds" in s else ""
        print(f"{s['system']}: {s['in_scope']} mutants in scope, {s['mutants']} tested{ran}")
    if args.count:
        return 0
    print(summary(sessions))
    print(f"results: {out / 'mutation_results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
