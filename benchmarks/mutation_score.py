"""Mutation score of the private variants' release code against their bundled audits (issues 21 and 29).

Run: ``python benchmarks/mutation_score.py [--systems mechanism,fkm,...] [--results FILE] [--shard K/N] [--count]``
(needs the ``mutation`` extra: cosmic-ray, used to enumerate and apply the mutants of
``mutation_mutants.SCOPE``). Every in-scope mutant is tested, one at a time, in a private copy of the tracked
files (the work tree is never touched): the mutated file is written into the copy, ``mutation_audit.py
SYSTEM`` (that system's bundled audit) runs there, and the original file is put back. Before any mutant of a
system, the unmutated copy must PASS that audit (the baseline); otherwise the system is skipped. A system of
``STAGES`` is audited in stages (each a ``mutation_audit.py`` entry with its own baseline): a mutant runs a stage only
if it passed the stages before, and its verdict is the first stage's that kills it.

Verdicts: ``violation`` (exit 1: the audit proves a privacy failure), ``broken`` (exit 3 or another code, or
over ``--timeout``: the run broke; killed, but not by a verdict), ``pass`` (the mutant survives; its reason
is checked per mutant by ``mutation_survivors.py``). Resumable: each result is written to ``--results``
(JSON, keyed by the mutant's fingerprint: the mutated source with every file the audit reads) atomically as
soon as it is known, and a mutant whose fingerprint is already there is not run again; a changed audit,
configuration or code gives new fingerprints, so old results are never reused for other inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_mutants import (  # noqa: E402
    ROOT,
    SCOPE,
    check_fingerprint,
    code_fingerprint,
    file_digest,
    mutants,
    tracked_files,
)

PYTHON = sys.executable
RESULTS = ROOT / "benchmarks" / "mutation_results.json"
ORDER = ("fkm", "mechanism", "duets", "pne", "fedzero", "fts")  # cheapest audits first
#: a system whose audit runs in stages (``mutation_audit.py`` names): a mutant runs a stage only if it passed the ones
#: before (the usual stop at the first failing test); its verdict is the first stage's that kills it
STAGES = {"mechanism": ("mechanism", "mechanism-stress", "mechanism-axes"), "fts": ("fts", "fts-sampled-weight"),
          "duets": ("duets", "duets-canary")}


def stages(system: str) -> tuple[str, ...]:
    return STAGES.get(system, (system,))


def system_configs(system: str) -> list[str]:
    """The configurations ``mutation_audit.py SYSTEM`` reads (part of the system's fingerprint)."""
    from mutation_audit import TARGETS

    return sorted({path for path, _ in TARGETS[system]})


def load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def record(path: Path, key: str, entry: dict) -> None:
    """Add one result to the JSON file atomically (write a temporary file, then rename it over)."""
    data = load(path)
    data[key] = entry
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".mutation-", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(temporary, path)


def audit(tree: Path, system: str, timeout: float) -> tuple[str, int | None, str, float, list[str] | None]:
    """(verdict, exit code, output tail, seconds, the repository's Python files it imported or None when it was
    stopped) of the system's audit in ``tree``, one core. The list is written beside ``tree``, which must be the only
    tree in its folder (two runs sharing the folder would read each other's lists)."""
    reads_file = tree.parent / f"reads-{system}.txt"
    reads_file.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MUTATION_READS": str(reads_file)}
    start = time.perf_counter()
    process = subprocess.Popen(
        ["nice", "-n", "10", PYTHON, "benchmarks/mutation_audit.py", system], cwd=tree, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own process group: the audit and its workers
        output, _ = process.communicate()
        code = None
    seconds = time.perf_counter() - start
    verdict = "pass" if code == 0 else "violation" if code == 1 else "broken"
    reads = reads_file.read_text().split() if reads_file.exists() else None
    return verdict, code, (output or "")[-800:], seconds, reads


def copy_tree(destination: Path) -> None:
    for name in tracked_files(ROOT):
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)


def system_code(system: str, tree: Path, results: dict) -> tuple[str, list[str]] | None:
    """(code fingerprint, files read) of a recorded baseline of ``system`` whose reads are unchanged in ``tree``:
    the files its unmutated audit imported, the data files, the audit script and the configurations are the same
    bytes now. None when no recorded baseline matches (a new baseline run is needed)."""
    configs = system_configs(system)
    for key, entry in results.items():
        if key.startswith(f"baseline:{system}:") and entry.get("reads") is not None:
            code = code_fingerprint(configs, tree, entry["reads"], system)
            if key == f"baseline:{system}:{code}":
                return code, entry["reads"]
    return None


def still_valid(entry: dict, tree: Path, broad: str) -> bool:
    """A mutant's recorded result holds for ``tree``: the files its run imported beyond the baseline's (if any)
    are the same bytes; a run stopped before it could list them holds only while the whole of ``AUDITED`` is
    the same (``broad``)."""
    extra = entry.get("extra_reads")
    if extra is None:
        return entry.get("code_all") == broad
    return all(file_digest(tree, name) == digest for name, digest in extra.items())


def run_system(system: str, tree: Path, results: Path, timeout: float, log=print, shard=(0, 1)) -> None:
    """Every in-scope mutant of ``system`` (of ``shard``) through its audit's stages, in order."""
    for number, stage in enumerate(stages(system)):
        run_stage(system, stage, stages(system)[:number], tree, results, timeout, log, shard)


def run_stage(system: str, stage: str, before: tuple, tree: Path, results: Path, timeout: float, log=print,
              shard=(0, 1)) -> None:
    """Run audit ``stage`` on each mutant of ``system`` that passed every stage of ``before`` (all, if none); with
    ``shard = (k, n)`` only the mutants at positions k, k + n, k + 2n, ... of the system's list (one of n processes
    that share the work, each with its own results file)."""
    done = load(results)
    found = system_code(stage, tree, done)
    if found is None:
        verdict, exit_code, output, seconds, reads = audit(tree, stage, timeout)
        if reads is None:
            log(f"{stage}: the unmutated audit stopped before listing what it read ({output[-200:]}); skipped")
            return
        code = code_fingerprint(system_configs(stage), tree, reads, stage)
        record(results, f"baseline:{stage}:{code}", {
            "system": system, "stage": stage, "baseline": True, "verdict": verdict, "exit": exit_code,
            "seconds": round(seconds, 1), "output": output, "code": code, "reads": reads})
        done = load(results)
    else:
        code, reads = found
    baseline = done[f"baseline:{stage}:{code}"]
    if baseline["verdict"] != "pass":
        log(f"{stage}: the unmutated code does not PASS its audit ({baseline['output'][-200:]}); skipped")
        return
    broad = code_fingerprint(system_configs(stage), tree)
    index, count = shard
    todo = mutants(system, tree)[index::count]
    if before:  # only the mutants every earlier stage let pass
        earlier = dict(system_results(system, done, tree, before))
        todo = [m for m in todo if m in earlier and earlier[m]["verdict"] == "pass"]
    log(f"{stage}: {len(todo)} mutants to run; baseline PASS; its audit reads {len(reads)} Python files")
    for number, mutant in enumerate(todo, 1):
        key = mutant.fingerprint(code)
        if key in done and still_valid(done[key], tree, broad):
            continue
        path = tree / mutant.file
        original = path.read_text()
        try:
            path.write_text(mutant.source)
            verdict, exit_code, output, seconds, mutant_reads = audit(tree, stage, timeout)
        finally:
            path.write_text(original)
        extra = None if mutant_reads is None else {
            name: file_digest(tree, name) for name in sorted(set(mutant_reads) - set(reads) - {mutant.file})}
        entry = {"system": system, "stage": stage, "file": mutant.file, "line": mutant.line,
                 "operator": mutant.operator, "occurrence": mutant.occurrence, "verdict": verdict, "exit": exit_code,
                 "seconds": round(seconds, 1), "diff": mutant.diff, "output": output, "code": code,
                 "extra_reads": extra, "code_all": broad}
        record(results, key, entry)
        done[key] = entry
        log(f"{stage} {number}/{len(todo)} {mutant.file}:{mutant.line} {mutant.operator}: {verdict} ({seconds:.0f} s)")


def system_results(system: str, results: dict, tree: Path = ROOT, only: tuple | None = None) -> list[tuple]:
    """(mutant, result) for each in-scope mutant of ``system`` with a result that holds for ``tree``: the first
    stage's (of ``only``, default all of ``stages(system)``) that killed it, else the last stage's pass; a mutant
    missing a result at some stage it reached is left out (untested), and none is listed while a stage has no
    recorded baseline for ``tree``."""
    keys = []
    for stage in only or stages(system):
        found = system_code(stage, tree, results)
        if found is None:
            return []
        keys.append((found[0], code_fingerprint(system_configs(stage), tree)))
    out = []
    for mutant in mutants(system, tree):
        row = None
        for code, broad in keys:
            row = results.get(mutant.fingerprint(code))
            if row is None or not still_valid(row, tree, broad) or row["verdict"] != "pass":
                break
        if row is not None and still_valid(row, tree, broad):
            out.append((mutant, row))
    return out


def current(results: dict, tree: Path = ROOT) -> dict[str, list[dict]]:
    """The results of the current code's mutants, per system (a result of other inputs is left out)."""
    return {system: [row for _, row in system_results(system, results, tree)] for system in SCOPE}


CATEGORIES = ("equivalent", "equal-in-law", "post-processing", "more-noise", "data-independent", "within-bound",
              "input-only", "recalibrated", "refuses")


def summary(results: dict, checks: dict, tree: Path = ROOT) -> str:
    """Markdown: per system, the mutants in scope, tested, killed by VIOLATION, killed by a broken run, and
    the survivors by their checked category (``mutation_survivors.py``; "unchecked" until it has run)."""
    head = ("| system | in scope | tested | killed: VIOLATION | killed: run broke | "
            + " | ".join(c.replace("-", " ") for c in CATEGORIES) + " | missed | unchecked | privacy-relevant killed |")
    lines = [head, "|---" * (len(CATEGORIES) + 8) + "|"]
    survivors, total = [], dict.fromkeys(("scope", "tested", "violation", "broken", "missed", "unchecked"), 0)
    later: Counter = Counter()  # (stage, verdict) of the kills by a stage after the first
    for system in ORDER:
        checked = check_fingerprint(tree, system)  # survivor checks: keyed by the release code and the check scripts
        scope = mutants(system, tree)
        rows = system_results(system, results, tree)
        count = dict.fromkeys(("violation", "broken", *CATEGORIES, "missed", "unchecked"), 0)
        for mutant, row in rows:
            if row["verdict"] != "pass":
                count[row["verdict"]] += 1
                if row.get("stage", system) != system:
                    later[row["stage"], row["verdict"]] += 1
                continue
            check = checks.get(mutant.fingerprint(checked))
            category = check["category"] if check else "unchecked"
            count[category] += 1
            survivors.append((mutant, category, check))
        killed = count["violation"] + count["broken"]
        relevant = killed + count["missed"] + count["unchecked"]
        lines.append(f"| {system} | {len(scope)} | {len(rows)} | {count['violation']} | {count['broken']} | "
                     + " | ".join(str(count[c]) for c in CATEGORIES)
                     + f" | {count['missed']} | {count['unchecked']} | {killed}/{relevant} |")
        for key, value in (("scope", len(scope)), ("tested", len(rows)), ("violation", count["violation"]),
                           ("broken", count["broken"]), ("missed", count["missed"]),
                           ("unchecked", count["unchecked"])):
            total[key] += value
    killed = total["violation"] + total["broken"]
    relevant = killed + total["missed"] + total["unchecked"]
    share = f" = {killed / relevant:.1%}; by VIOLATION {total['violation'] / relevant:.1%}" if relevant else ""
    lines.append(f"| all | {total['scope']} | {total['tested']} | {total['violation']} | {total['broken']} | "
                 + "| " * len(CATEGORIES) + f"{total['missed']} | {total['unchecked']} | {killed}/{relevant}{share} |")
    if later:
        kinds = "; ".join(f"{stage}: " + ", ".join(f"{n} {verdict}" for (s, verdict), n in sorted(later.items())
                                                   if s == stage)
                          for stage in sorted({stage for stage, _ in later}))
        lines += ["", f"Killed by a later stage of their system's audit (counted above): {kinds}."]
    lines += ["", "| system | mutant | category | evidence (configurations that differ, of those run) |",
              "|---|---|---|---|"]
    for mutant, category, check in survivors:
        lines.append(f"| {mutant.system} | {mutant.file}:{mutant.line} `{_change(mutant)}` | {category} | "
                     f"{_evidence(check)} |".replace("||", "| |"))
    return "\n".join(lines)


def _change(mutant) -> str:
    return " / ".join(line[1:].strip() for line in mutant.diff.splitlines()
                      if line[:1] in "+-" and not line.startswith(("+++", "---")))


def _evidence(check: dict | None) -> str:
    if not check:
        return "not yet checked"
    parts = [f"{name.replace('_', ' ')}: {len(check[name])}" for name in
             ("released_differs", "description_differs", "breaks", "other_messages_differ") if check[name]]
    parts.append(f"of {check['configurations']}")
    if check.get("fkm_noise") == "input-only":
        parts.append("agents' uploads isolated and finite, server unchanged")
    elif check.get("fkm_noise") == "recalibrated":
        parts.append("only the mechanism's clip changed, its release path the same")
    elif check.get("fkm_noise") == "post-processing":
        parts.append("the original's releases and inputs, only what follows them changed")
    elif check.get("fkm_noise") is not None:
        parts.append(f"noise of every release: {check['fkm_noise']} draw")
    if check.get("law"):
        tally = {}
        for category in check["law"].values():
            tally[str(category)] = tally.get(str(category), 0) + 1
        parts.append("mechanism checks per configuration: "
                     + ", ".join(f"{name} {n}" for name, n in sorted(tally.items())))
    first = (check["released_differs"] or check["description_differs"] or check["breaks"] or [""])[0]
    return ", ".join(parts) + (f" (first: `{first}`)" if first else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default=",".join(ORDER))
    parser.add_argument("--results", default=str(RESULTS), help="the resumable JSON file of results")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per audit before it counts as broken")
    parser.add_argument("--shard", default="0/1", metavar="K/N", help="run only every N-th mutant from the K-th "
                        "(0-based): one of N processes, each with its own --results file, to merge afterwards")
    parser.add_argument("--count", action="store_true", help="count the mutants in scope; run nothing")
    parser.add_argument("--summarise", metavar="CHECKS", help="print the table of --results with the survivor "
                        "checks of CHECKS (mutation_survivors.json); run nothing")
    args = parser.parse_args(argv)
    try:
        shard = tuple(int(part) for part in args.shard.split("/"))
        if len(shard) != 2 or not 0 <= shard[0] < shard[1]:
            raise ValueError
    except ValueError:
        parser.error(f"--shard: expected K/N with 0 <= K < N, got {args.shard!r}")
    if args.summarise:
        print(summary(load(Path(args.results)), load(Path(args.summarise))))
        return 0
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in SCOPE]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SCOPE)}")
    if args.count:
        for system in systems:
            print(f"{system}: {len(mutants(system))} mutants in scope")
        return 0
    results = Path(args.results).resolve()
    with tempfile.TemporaryDirectory(prefix="mutation-tree-") as work:
        tree = Path(work) / "tree"  # the audit's list of what it read goes beside it, in this process's own folder
        copy_tree(tree)
        for system in systems:
            run_system(system, tree, results, args.timeout, log=lambda text: print(text, flush=True), shard=shard)
    return 0


if __name__ == "__main__":
    sys.exit(main())
