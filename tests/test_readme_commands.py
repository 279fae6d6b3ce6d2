"""Every ``dpaudit`` command in README.md and in the documentation (``docs/``) runs under the suite, so an example
cannot rot.

The commands are read from every fenced code block of README.md and of every page of ``mkdocs.yml``'s nav, in
that order (a line starting with ``dpaudit``, ``\\`` continuations joined, ``#`` comments dropped), so new pages
and sections need no change here; a command written twice (a tutorial's command in the README) runs once. Each
command either

* runs **as written** and exits with the code its README comment promises (1 where the comment says
  VIOLATION or ``exit 1``, else 0); or
* is registered in ``VARIANTS``: with a small-size variant (fewer ``--trials``/``--runs``/``--horizon``,
  ...) where the command as written is too slow for the suite, or as written with an exit code its comment
  does not state; each with the exit code it must give and why.

No test here measures time (a time limit fails wherever the CPU is slower or shared): a command is registered
with a smaller variant by judgement, and the full form of every documented command is measured by
``benchmarks/docs_commands.py`` (CPU-seconds and wall time), whose figures the pages quote. A registered
command that left the README fails the test, so the table stays the README's.

All commands run, in README order, in ONE child process that imports ``dpaudit`` once (the Flower
commands in a second child from ``tests/test_readme_flower_commands.py``, so that the two xdist workers share
them: README.md's own on Flower's simulation engine, the documentation pages' on the in-process grid, see
``flower_runtime``), inside one temporary directory holding ``configs/`` and the few files the README assumes the
user has (a small ``LandmineData.mat`` in the documented format, ``my_audit.toml``), so later commands
see what earlier ones wrote (``dpaudit report audit-report/report.json`` reads the audit's report).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.user_audit_config import user_mechanism_audit

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def documented_pages() -> list[Path]:
    """README.md, then every page of the documentation in the order of ``mkdocs.yml``'s nav (generated reference
    pages, which hold no commands to run, are not files)."""
    import yaml

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = [ROOT / "docs" / page for page in walk(nav)]
    return [README] + [page for page in pages if page.exists()]


def documented_commands() -> list[tuple[str, str]]:
    """Every documented command once (the first time it is written), in documentation order."""
    seen, commands = set(), []
    for page in documented_pages():
        for command, line in readme_commands(page.read_text(encoding="utf-8")):
            if command not in seen:
                seen.add(command)
                commands.append((command, line))
    return commands
HANG_GUARD_S = 3600  # the child of all commands is stopped after an hour: a guard against a hang, not a limit

SMALL = "a copy of the bundled configuration: every probe at 20 trials, one utility run, accountants rdp and exact"
# README command (as extracted: tokens joined by one space) -> (variant or None = as written, exit code, why)
# The Flower extra (``.[flower]``, installed by the README's test command and CI) decides what `dpaudit
# flower` can do: run the example app on Flower's simulation engine (VIOLATION: every claim is below what
# Flower runs), or refuse in one line (exit 2) saying the extra is missing.
FLOWER_INSTALLED = importlib.util.find_spec("flwr") is not None

VARIANTS: dict[str, tuple[str | None, int, str]] = {
    # (keys as extracted: shlex tokens joined by one space; the variants keep the run config quoted, one argument)
    "dpaudit flower tests/flower_apps/digits_dp --num-supernodes 6 --run-config num-server-rounds=2 "
    "--out flower-audit": (
        "dpaudit flower tests/flower_apps/digits_dp --num-supernodes 6 --run-config 'num-server-rounds=2' "
        "--out flower-audit", 0 if FLOWER_INSTALLED else 2,
        "as written (2 rounds, 6 nodes); exit 2 without the flower extra"),
    "dpaudit flower tests/flower_apps/digits_dp --num-supernodes 6 --run-config num-server-rounds=2 "
    "noise-scale=0.5 --out flower-half-noise": (
        "dpaudit flower tests/flower_apps/digits_dp --num-supernodes 6 --run-config "
        "'num-server-rounds=2 noise-scale=0.5' --out flower-half-noise", 1 if FLOWER_INSTALLED else 2,
        "as written (VIOLATION: half the noise); exit 2 without the flower extra"),
    "dpaudit opacus-check --train tests/dpsgd_examples/mnist.py:main --argv --device cpu --epochs 1": (
        "dpaudit opacus-check --train tests/dpsgd_examples/mnist.py:main --argv '--device cpu --epochs 1'", 0,
        "as written (the training's command line quoted, one argument)"),
    "dpaudit opacus-check --train tests/dpsgd_examples/planted.py:half_noise --argv --device cpu --epochs 1": (
        "dpaudit opacus-check --train tests/dpsgd_examples/planted.py:half_noise --argv '--device cpu --epochs 1'",
        1, "as written (VIOLATION: half the noise)"),
    "dpaudit audit configs/audit_flower.toml --allow-code --out out/flower": (
        None,
        0 if FLOWER_INSTALLED else 2,
        "as written (one small Flower run); without the flower extra the target cannot be built (exit 2)",
    ),
    "dpaudit run dp-fts-de": ("dpaudit run dp-fts-de --runs 1 --rounds 4", 0, "60 rounds x default runs"),
    "dpaudit run fts-de --preset synthetic --runs 10 --out results/": (
        "dpaudit run fts-de --preset synthetic --runs 1 --rounds 3 --out results/",
        0,
        "10 runs",
    ),
    "dpaudit run dp-fts-de --preset landmine --landmine-path LandmineData.mat": (
        "dpaudit run dp-fts-de --preset landmine --landmine-path LandmineData.mat --runs 1 --rounds 2",
        0,
        "LandmineData.mat is the user's (a small synthetic file in its format stands in); 60 rounds",
    ),
    "dpaudit run dp-fts-de --config configs/fts_synthetic_example.toml --seed 3": (
        "dpaudit run dp-fts-de --config configs/fts_synthetic_example.toml --seed 3 --runs 1 --rounds 3",
        0,
        "30 rounds",
    ),
    "dpaudit run fed-pne --objective garland --clients 10 --horizon 10000 --runs 10 --out out/": (
        "dpaudit run fed-pne --objective garland --clients 10 --horizon 500 --runs 2 --out out/",
        0,
        "size",
    ),
    "dpaudit run dp-fed-pne --claim-epsilon 1 --delta 1e-5 --calibration analytic --clients 10 --horizon 10000": (
        "dpaudit run dp-fed-pne --claim-epsilon 1 --delta 1e-5 --calibration analytic --clients 10 --horizon 500 "
        "--runs 2",
        0,
        "size",
    ),
    "dpaudit run dp-fed-pne --calibration classic --claim-epsilon 10 --delta 1e-5": (
        "dpaudit run dp-fed-pne --calibration classic --claim-epsilon 10 --delta 1e-5 --horizon 500 --runs 2",
        1,
        "size",
    ),
    "dpaudit run hct --objective doublesine --horizon 10000 --runs 10": (
        "dpaudit run hct --objective doublesine --horizon 500 --runs 2",
        0,
        "size",
    ),
    "dpaudit run fed-pne --config configs/pne_garland.toml": (
        "dpaudit run fed-pne --config configs/pne_garland.toml --horizon 500 --runs 2",
        0,
        "size",
    ),
    "dpaudit run fedzero --geometry l2 --clients 4 --rounds 10000 --runs 20": (
        "dpaudit run fedzero --geometry l2 --clients 4 --rounds 200 --runs 2",
        0,
        "size",
    ),
    "dpaudit run dp-fedzero --unit worker --rate 0.5 --noise-multiplier 1 --noise scalar": (
        "dpaudit run dp-fedzero --unit worker --rate 0.5 --noise-multiplier 1 --noise scalar --rounds 50 --runs 2",
        0,
        "default rounds",
    ),
    "dpaudit run dp-fedzero --unit record --rate 0.1 --records 50": (
        "dpaudit run dp-fedzero --unit record --rate 0.1 --records 50 --rounds 200 --runs 2",
        0,
        "default rounds",
    ),
    "dpaudit run fkm --dim 5 --horizon 10000 --loss quadratic --runs 10": (
        "dpaudit run fkm --dim 5 --horizon 800 --loss quadratic --runs 2",
        0,
        "size",
    ),
    "dpaudit run dp-fkm --claim-epsilon 2 --delta 1e-5": (
        "dpaudit run dp-fkm --claim-epsilon 2 --delta 1e-5 --horizon 800 --runs 2",
        0,
        "default horizon",
    ),
    "dpaudit run dp-fkm --unit dataset --records 200 --rate 0.1 --noise-multiplier 1": (
        "dpaudit run dp-fkm --unit dataset --records 200 --rate 0.1 --noise-multiplier 1 --horizon 800 --runs 2",
        0,
        "default horizon",
    ),
    "dpaudit run duets --objective hartmann4 --runs 10": (
        "dpaudit run duets --objective hartmann4 --runs 1",
        0,
        "runs",
    ),
    "dpaudit run dp-duets --objective cosine --noise-multiplier 2": (
        "dpaudit run dp-duets --objective cosine --noise-multiplier 2 --runs 1",
        0,
        "runs",
    ),
    "dpaudit run dp-duets --unit reward --noise-multiplier 4": (
        "dpaudit run dp-duets --unit reward --noise-multiplier 4 --runs 1",
        0,
        "runs",
    ),
    "dpaudit run diskernelucb --objective branin --beta 0.5": (
        "dpaudit run diskernelucb --objective branin --beta 0.5 --runs 1",
        0,
        "runs",
    ),
    "dpaudit attack gaussian --trials 1e7 --seed 1": ("dpaudit attack gaussian --trials 1e4 --seed 1", 0, "trials"),
    "dpaudit attack fts-server --param schedule=reference --trials 1e5 --executor processes --workers 2": (
        "dpaudit attack fts-server --param schedule=reference --trials 2e3 --executor processes --workers 2",
        3,
        "trials; at 2e3 the estimator's ceiling (5.5) is below the claim 6.2 (INCONCLUSIVE)",
    ),
    "dpaudit attack pne-reward --param pulls=4 --trials 1e6": (
        "dpaudit attack pne-reward --param pulls=4 --trials 1e4",
        0,
        "trials",
    ),
    "dpaudit attack fts-end-to-end --trials 2000 --executor processes": (
        "dpaudit attack fts-end-to-end --trials 20 --executor processes",
        3,
        "full DP-FTS-DE runs per trial; 20 trials cannot test the claim (INCONCLUSIVE)",
    ),
    "dpaudit attack bug-fts-renormalise-sampled --trials 2000": (
        "dpaudit attack bug-fts-renormalise-sampled --trials 20 --seed 1",
        0,
        "full runs; at 20 trials (seed 1) the planted bug is not yet refuted (PASS); the default seed is random",
    ),
    "dpaudit attack bug-pne-unnoised-final-upload --trials 10000": (
        "dpaudit attack bug-pne-unnoised-final-upload --trials 200",
        1,
        "full runs per trial; 200 refute it already",
    ),
    "dpaudit attack --config configs/attack_duets_end_to_end.toml": (
        "dpaudit attack --config configs/attack_duets_end_to_end.toml --trials 1000",
        0,
        "trials",
    ),
    "dpaudit attack --config configs/attack_duets_nonprivate.toml": (
        "dpaudit attack --config configs/attack_duets_nonprivate.toml --trials 200",
        3,
        "trials; the claim 8 is above 200 trials' ceiling (INCONCLUSIVE)",
    ),
    "dpaudit attack subsampled-gaussian --trials 1e6 --executor dask --scheduler tcp://HOST:8786 "
    "--checkpoint runs/sg": (
        None,
        2,
        "HOST is a placeholder for the user's scheduler: refused in one line (connect timeout cut to 1 s)",
    ),
    "dpaudit attack --config configs/attack_fkm.toml": (
        "dpaudit attack --config configs/attack_fkm.toml --trials 200",
        0,
        "trials",
    ),
    "dpaudit attack fedzero-nonprivate --trials 1e5 --claim-epsilon 2": (
        "dpaudit attack fedzero-nonprivate --trials 2e3 --claim-epsilon 2",
        1,
        "trials",
    ),
    "dpaudit attack gaussian --trials 1e8 --executor processes --workers 2": (
        "dpaudit attack gaussian --trials 1e4 --executor processes --workers 2",
        0,
        "trials",
    ),
    "dpaudit attack fts-server --trials 2e6 --executor processes --workers 2": (
        "dpaudit attack fts-server --trials 2e3 --executor processes --workers 2",
        3,
        "trials; the claim is above 2e3 trials' ceiling (INCONCLUSIVE)",
    ),
    "dpaudit attack gaussian --trials 1e8 --executor processes --workers 2 --checkpoint runs/gaussian": (
        "dpaudit attack gaussian --trials 1e4 --executor processes --workers 2 --checkpoint runs/gaussian",
        0,
        "trials",
    ),
    "dpaudit attack gaussian --trials 1e7 --backend torch --device cpu": (
        "dpaudit attack gaussian --trials 1e4 --backend torch --device cpu",
        0,
        "trials",
    ),
    "dpaudit audit --out audit-report": (
        "dpaudit audit default_small.toml --out audit-report --trials 2e3",
        1,
        "the built-in default audit, " + SMALL,
    ),
    "dpaudit audit configs/audit_dpfedpne.toml --out out/pne --trials 2e4 --executor processes": (
        "dpaudit audit dpfedpne_small.toml --out out/pne --trials 20 --executor processes",
        1,
        SMALL,
    ),
    "dpaudit audit configs/audit_small.toml --out out/small": (
        None,
        1,
        "as written: its classic-calibration target is a VIOLATION",
    ),
    "dpaudit attack --mechanism attacks.probes.examples:leaky_count "
    "--datasets configs/attack_user_example_datasets.toml --trials 2e4 --claim-epsilon 1": (
        None,
        1,
        "as written: the example mechanism leaks (VIOLATION)",
    ),
    "dpaudit audit configs/audit_algorithm_bugs.toml --out out/bugs": (
        "dpaudit audit algorithm_bugs_small.toml --out out/bugs",
        3,
        SMALL + ": the looser rdp leaves a claim unproved that 20 trials cannot test (INCONCLUSIVE)",
    ),
    "dpaudit audit configs/audit_duets.toml --out out/duets": (
        "dpaudit audit duets_small.toml --out out/duets",
        1,
        SMALL,
    ),
    "dpaudit audit configs/audit_fedzero.toml --out out/fedzero": (
        "dpaudit audit fedzero_small.toml --out out/fedzero",
        1,
        SMALL,
    ),
    "dpaudit audit configs/audit_fkm.toml --out out/fkm": ("dpaudit audit fkm_small.toml --out out/fkm", 1, SMALL),
    "dpaudit attack --config configs/attack_dpsgd.toml": (
        "dpaudit attack --config configs/attack_dpsgd.toml --trials 400 --param epochs=1 --param canaries_per_run=400",
        0,
        "20 opacus steps x 2e4 trials per world; one epoch and 400 trials",
    ),
}

# what a user's own audit with a `user` probe looks like (README: dpaudit audit my_audit.toml ...)
MY_AUDIT = user_mechanism_audit("attacks.probes.examples:laplace_count", "configs/attack_user_example_datasets.toml")


def readme_commands(text: str) -> list[str]:
    """Every line of a fenced code block that starts with ``dpaudit``, continuations joined, comments dropped."""
    commands = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        lines, i = block.split("\n"), 0
        while i < len(lines):
            line = lines[i]
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            tokens = shlex.split(line.lstrip("$ "), comments=True)
            if tokens and tokens[0] == "dpaudit":
                commands.append((" ".join(tokens), line))
    return commands


def promised_code(line: str) -> int:
    """The exit code a README comment promises for an as-written command (1 for VIOLATION / exit 1)."""
    comment = line.split("#", 1)[1] if "#" in line else ""
    return 1 if re.search(r"VIOLATION|exit 1\b", comment) else 0


def _small_copy(source: Path, target: Path) -> None:
    """``source`` with every probe budget at 20 trials, one utility run and the two cheap accountants (PLD
    dominates an audit's time; the accountants have their own tests). Same targets, settings and claims."""
    text = re.sub(r"(?m)^trials = \S+", "trials = 20", source.read_text(encoding="utf-8"))
    text = re.sub(r"(?m)^utility_runs = \S+", "utility_runs = 1", text)
    text = re.sub(r"(?m)^accountants = .*\n", "", text)
    text = re.sub(r'(?m)^(algorithm = "[^"]*"\n)', '\\1accountants = ["rdp", "exact"]\n', text)
    target.write_text(text, encoding="utf-8")


def _landmine_file(path: Path) -> None:
    """A small file in ``LandmineData.mat``'s format: 1 x 29 cell arrays ``feature`` (n_i x 9) and ``label``."""
    import numpy as np
    import scipy.io

    rng = np.random.default_rng(0)
    features = np.empty((1, 29), dtype=object)
    labels = np.empty((1, 29), dtype=object)
    for i in range(29):
        x = rng.normal(size=(40, 9))
        features[0, i] = x
        labels[0, i] = ((x[:, 0] + 0.5 * rng.normal(size=40)) > 1.0).astype(float).reshape(-1, 1)
        labels[0, i][:2] = [[1.0], [0.0]]  # both classes in every field
    scipy.io.savemat(path, {"feature": features, "label": labels})


def _one_run_scores(path: Path) -> None:
    """A user's ``scores.npy`` (README: ``dpaudit estimate scores.npy --kind one-run``): (n, 2) columns
    score and inclusion bit, canaries at mu = 2 when included."""
    import numpy as np

    rng = np.random.default_rng(7)
    included = rng.integers(0, 2, size=1000)
    np.save(path, np.column_stack([rng.normal(size=1000) + 2.0 * included, included]))


def prepare_workdir(work: Path) -> None:
    (work / "configs").symlink_to(ROOT / "configs")
    (work / "tests").mkdir()
    for folder in ("flower_apps", "flower_examples", "dpsgd_outside", "dpsgd_examples"):  # what the README audits
        (work / "tests" / folder).symlink_to(ROOT / "tests" / folder)
    _landmine_file(work / "LandmineData.mat")
    (work / "my_audit.toml").write_text(MY_AUDIT, encoding="utf-8")
    _one_run_scores(work / "scores.npy")
    _small_copy(ROOT / "reports" / "defaults" / "default_audit.toml", work / "default_small.toml")
    for name in ("dpfedpne", "algorithm_bugs", "duets", "fedzero", "fkm"):
        _small_copy(ROOT / "configs" / f"audit_{name}.toml", work / f"{name}_small.toml")


def _child(jobs_path: str, results_path: str) -> None:
    """Runs in the child process: every job through ``reports.cli.main``, one after another."""
    import io

    from attacks.executors.dask_cluster import DaskExecutor
    from reports.cli import main

    if len(DaskExecutor.__init__.__defaults__ or ()) == 3:  # README's placeholder HOST: 1 s, not 10 s, to refuse
        DaskExecutor.__init__.__defaults__ = DaskExecutor.__init__.__defaults__[:2] + (1.0,)

    def run(job) -> dict:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), in_process(job.get("runtime")):
            code = main(shlex.split(job["run"])[1:])
        return {"code": code, "tail": out.getvalue()[-600:], "critical": critical_codes(out.getvalue())}

    results = []
    for job in json.loads(Path(jobs_path).read_text()):
        result = run(job)
        if statistical_false_alarm(job, result):  # once more: both runs flag a correct run w.p. <= alpha^2
            result = {**run(job), "first_run": result}
        results.append(result)
        Path(results_path).write_text(json.dumps(results))


@contextlib.contextmanager
def in_process(runtime: str | None):
    """Within the block, ``dpaudit flower`` runs apps on the in-process grid where ``runtime`` says so
    (``flower_runtime``); Flower's own ``_run_simulation`` is restored after it."""
    if runtime != "in-process":
        yield
        return
    import functools
    import importlib

    from tests.flower.inprocess_grid import in_process_simulation

    simulation = importlib.import_module("flwr.simulation.run_simulation")
    original = simulation._run_simulation
    simulation._run_simulation = functools.partial(in_process_simulation, connecting=None)
    try:
        yield
    finally:
        simulation._run_simulation = original


# The findings that are statistical tests of a run's randomness (noise below the accounted level, noise correlated
# across releases, a sampler not as accounted): each flags a correct, unseeded run with the probability its
# ``false_alarm`` states (1e-3 by default). On Flower's simulation engine the clients' noise is drawn in Ray's
# worker processes, unseeded, so a documented correct app fails such a test in about 1 run of 1,000 (it happened
# once in CI: p = 6.2e-5 against 1e-3 / 6 on ``opacus_kept``). A command promised to pass that is a VIOLATION
# through these tests alone runs once more, and must pass then: a correct run fails both with probability at most
# alpha^2 = 1e-6, while a real noise bug fails both (half the noise over n coordinates gives a chi-square statistic
# near n / 4 against n degrees of freedom: at the documented planted bugs' n of a thousand or more, p is far below
# the level in every run).
STATISTICAL_TESTS = frozenset({"noise-below-accounted", "client-noise-below-accounted", "noise-part-below-accounted",
                               "noise-correlated", "sampling-scheme", "sampler-not-uniform",
                               "sampler-not-independent"})


def critical_codes(output: str) -> list[str]:
    """The codes of the CRITICAL findings a command printed."""
    return re.findall(r"CRITICAL ([a-z][a-z-]*)\b", output)


def statistical_false_alarm(job: dict, result: dict) -> bool:
    """A command promised to pass that is a VIOLATION through statistical tests only (``STATISTICAL_TESTS``)."""
    return (job["code"] == 0 and result["code"] == 1 and bool(result["critical"])
            and set(result["critical"]) <= STATISTICAL_TESTS)


def plan_jobs(commands) -> tuple[list[dict], list[str]]:
    """One job per README command; problems with the table itself as messages."""
    jobs, problems = [], []
    for command, line in commands:
        variant, code, why = VARIANTS.get(command, (None, promised_code(line), ""))
        jobs.append({"readme": command, "run": variant or command, "code": code, "registered": command in VARIANTS})
    stale = sorted(set(VARIANTS) - {c for c, _ in commands})
    problems += [f"registered in VARIANTS but no longer in README.md or docs/: {c}" for c in stale]
    return jobs, problems


def judge(job: dict, result: dict) -> str | None:
    """Why a job's result fails, or None (only the exit code is judged, never the time taken)."""
    if result["code"] != job["code"]:
        shown = job["run"] if job["run"] == job["readme"] else f"{job['run']} (for `{job['readme']}`)"
        again = " (run twice: its first run was a VIOLATION through statistical tests only)" if "first_run" in result \
            else ""
        return f"`{shown}` exited {result['code']}, expected {job['code']}{again}: {result['tail']!r}"
    return None


def test_only_a_promised_pass_flagged_by_statistical_tests_alone_runs_again():
    printed = ("  CRITICAL client-noise-below-accounted: client 7 (partition 0), round 3: ...\n"
               "  MEDIUM   release-count: ...\n")
    assert critical_codes(printed) == ["client-noise-below-accounted"]
    flagged = {"code": 1, "critical": critical_codes(printed)}
    assert statistical_false_alarm({"code": 0}, flagged)
    assert not statistical_false_alarm({"code": 1}, flagged)  # a VIOLATION promised: nothing to repeat
    assert not statistical_false_alarm({"code": 0}, {"code": 2, "critical": []})  # a refusal is no test's chance
    assert not statistical_false_alarm({"code": 0}, {"code": 1, "critical": []})  # a VIOLATION we cannot attribute
    both = critical_codes(printed + "  CRITICAL sensitivity-above-accounted: ...\n")
    assert not statistical_false_alarm({"code": 0}, {"code": 1, "critical": both})  # a deterministic finding too
    twice = {"code": 1, "tail": "x", "first_run": flagged}
    assert "run twice" in judge({"code": 0, "run": "dpaudit flower a", "readme": "dpaudit flower a"}, twice)


def test_every_statistical_test_named_is_a_finding_the_checks_make():
    """Every code ``STATISTICAL_TESTS`` names is still made by the Flower or opacus checks (a renamed finding would
    otherwise leave a stale name here)."""
    sources = "".join(path.read_text() for folder in ("attacks/flower_checks", "attacks/opacus_checks")
                      for path in sorted((ROOT / folder).glob("*.py")))
    for code in STATISTICAL_TESTS:
        assert f'"{code}"' in sources, code


def test_the_extraction_reads_blocks_continuations_and_comments():
    text = "x\n```bash\ndpaudit a --b 1 \\\n    --c 2   # VIOLATION\necho no\n```\n```\n$ dpaudit plan  # note\n```\n"
    commands = readme_commands(text)
    assert [c for c, _ in commands] == ["dpaudit a --b 1 --c 2", "dpaudit plan"]
    assert [promised_code(line) for _, line in commands] == [1, 0]


def test_a_command_runs_as_written_or_as_its_registered_variant_and_is_judged_by_its_exit_code():
    line = "dpaudit attack gaussian --trials 1e7 --seed 1  # VIOLATION"
    job = plan_jobs([("dpaudit attack gaussian --trials 1e12", line)])[0][0]
    assert not job["registered"] and job["run"] == job["readme"] and job["code"] == 1
    assert judge(job, {"code": 1, "tail": ""}) is None
    assert "expected 1" in judge(job, {"code": 0, "tail": "error"})
    registered = "dpaudit attack gaussian --trials 1e7 --seed 1"
    job = plan_jobs([(registered, registered)])[0][0]
    assert job["registered"] and job["run"] == VARIANTS[registered][0] and job["code"] == VARIANTS[registered][1]
    assert "no longer in README.md" in plan_jobs([])[1][0]


def test_every_registered_command_says_why_and_changes_something():
    """A registered command runs a smaller variant or expects another exit code than its page's comment states;
    an entry that changes neither would only hide the page's own promise (a Flower command's code depends on the
    flower extra, so it is registered whatever its comment says)."""
    for command, line in documented_commands():
        if command in VARIANTS:
            variant, code, why = VARIANTS[command]
            assert why.strip(), command
            changes = variant not in (None, command) or code != promised_code(line)
            assert changes or "flower" in command, f"redundant entry: {command}"


def is_flower_job(job: dict) -> bool:
    """The Flower commands (about 70 s of Flower simulations) run in their own module,
    ``tests/test_readme_flower_commands.py``, so that xdist gives them to the other worker. They read no
    other command's output and no other command reads theirs."""
    return job["readme"].startswith("dpaudit flower ") or "audit_flower.toml" in job["readme"]


def flower_runtime(job: dict, readme: set[str]) -> str | None:
    """Where a Flower job runs: README.md's own Flower commands (and the Flower audit configuration) on Flower's
    simulation engine (Ray), as ``flwr run`` runs them; the documentation pages' ``dpaudit flower`` commands on the
    in-process grid (``tests.flower.inprocess_grid``: Flower's own ServerApp, strategies, DP wrappers, mods and
    ClientApps, message by message in this process; about 3 CPU-seconds where a Ray start costs 15), whose apps
    ``tests/flower/test_observed_apps.py`` also runs in process. None for the other commands."""
    if not is_flower_job(job):
        return None
    return "flower" if job["readme"] in readme or not job["readme"].startswith("dpaudit flower ") else "in-process"


def run_readme_jobs(tmp_path: Path, flower: bool) -> Path:
    """Run the README's Flower commands (``flower=True``) or all the others, in README order, in one child;
    returns the directory they ran in (with what they wrote)."""
    commands = documented_commands()
    assert len(commands) > 30, "the documented commands were not found"
    jobs, problems = plan_jobs(commands)
    jobs = [job for job in jobs if is_flower_job(job) == flower]
    assert len(jobs) >= (3 if flower else 30), "the README's Flower or other commands were not found"
    readme = {command for command, _ in readme_commands(README.read_text(encoding="utf-8"))}
    for job in jobs:
        job["runtime"] = flower_runtime(job, readme)
    work = tmp_path / "work"
    work.mkdir()
    prepare_workdir(work)
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), MPLBACKEND="Agg")
    script = "import sys; from tests.test_readme_commands import _child; _child(sys.argv[1], sys.argv[2])"
    child = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "jobs.json"), str(tmp_path / "results.json")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    results = json.loads((tmp_path / "results.json").read_text()) if (tmp_path / "results.json").exists() else []
    assert len(results) == len(jobs), f"the child stopped after {len(results)} commands: {child.stderr[-2000:]}"
    problems += [p for job, result in zip(jobs, results, strict=True) if (p := judge(job, result))]
    assert not problems, "\n".join(problems)
    return work


@pytest.mark.slow
def test_every_readme_command_runs(tmp_path):
    """Every README command except the Flower ones (``tests/test_readme_flower_commands.py``)."""
    run_readme_jobs(tmp_path, flower=False)


def test_ci_runs_the_readme_test_command_verbatim():
    found = re.search(
        r"\*\*Set up and pass the tests\*\*.*?```bash\n(.*?)\n```", README.read_text(encoding="utf-8"), re.S
    )
    assert found, "README.md lost its 'Set up and pass the tests' command"
    command = found.group(1).strip()
    assert "apt-get" not in command, "the README's test command must run without root"
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
