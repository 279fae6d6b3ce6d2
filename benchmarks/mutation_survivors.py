"""Why each surviving mutant survives, checked for that mutant (no pattern rules).

Run: ``python benchmarks/mutation_survivors.py [--results FILE] [--checks FILE]`` after (or while)
``mutation_score.py`` runs. For every mutant of the current code that PASSed its audit, the original and the
mutant run their release code on the same seeds over ``mutation_release.CONFIGURATIONS`` (clip bounds and
sensitivities 0.5, 2 and 3.7, several noise multipliers, sampling rates and units; the strings from argv),
and the outputs are compared bit for bit:

- ``equivalent``: every configuration's transcript (every message of run 0) and privacy description identical;
- ``post-processing``: the released values and the description identical in every configuration, only other
  messages differ; for DP-FKM also when the released losses differ but the noise added to each (released
  minus the loss clipped to the original's [-B, B]) is the same draw in every configuration (within 1e-9
  relative: the subtraction rounds) and the description is unchanged (the learner chose other points; each
  release is still the clipped loss plus the configured noise);
- ``more-noise`` (DP-FKM): the noise of every release is the original's draw times a factor >= 1 (B = 0.5,
  1.5, 2 and 3.7: 2 ** B is below 2 B between 1 and 2), the loss clipped the same way;
- ``data-independent`` (DP-FKM): the releases are identical for two different data sets (loss families)
  under the same noise draws in every configuration, where the original's are not (nothing about the data
  is released);
- ``within-bound`` (DP-FKM): each release is a value in the original's [-B, B] plus the original's noise draw for
  that release, at the same noise scale, in every configuration (the loss is clipped to another value or range
  inside [-B, B]: one event moves it by at most 2 B, the sensitivity the noise is calibrated to);
- the mechanism module (``mutation_law.py``, per configuration of its own script, two data sets, two seeds):
  ``equivalent`` up to rounding, ``equal-in-law`` (the original's release under a generator whose Gaussian and
  Laplace draws are reflected), ``data-independent``, ``post-processing`` (a public affine map of the original's
  release) or ``more-noise`` (the original's signal plus its noise draw times a factor of absolute value >= 1);
- ``input-only`` (DP-FTS-DE, ``mutation_fts.py``): the server's code is the original's, every agent's first-round
  upload is finite and reads no other agent's data (the release is the original server's clip and noise of
  uploads each of which is a function of one agent's data);
- ``recalibrated`` (DP-DUETS, ``mutation_duets.py``): only the epoch mechanism's clip bound changes (positive and
  finite; at reward level, where nothing is clipped, at least the original's), with the original's rate, noise
  multiplier, sampling and neighbouring relation, and the release still goes through that mechanism;
- ``post-processing`` also (DP-DUETS, DP-FTS-DE): the mechanism's parameters are the original's and its releases
  (DP-FTS-DE: the first-round broadcasts, with the agents' uploads unchanged) are one public affine map of the
  original's per configuration on two data sets (a changed rescaling after the noise);
- DP-FedZero (``mutation_fedzero.py``): ``post-processing`` when every release call has the original's mechanism,
  the first call the original's input and output, and every published value is a release output (the change is in
  what is done with the released values); ``recalibrated`` when only the calls' clip differs;
- ``refuses``: the only change is that some configurations now exit with an error (nothing is released);
- ``missed``: anything else (released values or the privacy description change): a privacy-relevant
  survivor, a bug the bundled audit does not catch.

Each verdict is written, with the configurations that differ, to ``--checks`` (JSON keyed by the mutant's
fingerprint with the release code and these check scripts, ``check_fingerprint``; atomically, resumable like the
results).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_duets import recalibrated, recalibration, rescaled  # noqa: E402
from mutation_fedzero import after_release, release_calls  # noqa: E402
from mutation_fts import input_only, isolation, rescaled_broadcast, server_digests  # noqa: E402
from mutation_law import law_categories, law_category, law_outputs  # noqa: E402
from mutation_mutants import ROOT, SCOPE, check_fingerprint, tracked_files  # noqa: E402
from mutation_release import compare, release_outputs, run_script  # noqa: E402
from mutation_score import RESULTS, load, record, system_results  # noqa: E402

CHECKS = ROOT / "benchmarks" / "mutation_survivors.json"
FKM_NOISE_SCRIPT = r'''
import json, sys
import numpy as np
import dpfed.fkm.private as private
from dpfed.fkm import FKMConfig, event_mechanism, make_losses, run_dp_fkm
seen = []
observe = private.EventLevelFeedback.observe
def recording(self, t, points, rng):
    value, released = observe(self, t, points, rng)
    seen.append([np.asarray(value, dtype=float).tolist(), np.asarray(released, dtype=float).tolist()])
    return value, released
private.EventLevelFeedback.observe = recording
out = {}
for radius in (0.5, 1.5, 2.0, 3.7):
    for epsilon, z in ((0.5, None), (2.0, None), (None, 3.0)):
        config = FKMConfig(dim=5, horizon=30, radius=radius, exploration=0.25, step=1e-3)
        for seed in (5, 11):
            seen.clear()
            try:
                mechanism = event_mechanism(config, epsilon, 1e-5, z)
                run_dp_fkm(config, seed, mechanism=mechanism, runs=2)
                bound = make_losses(config, 0, count=1).bound
                observed = list(seen)
                releases = []  # two data sets (loss families of seeds seed, seed + 100), the same noise draws
                for data in (seed, seed + 100):
                    seen.clear()
                    run_dp_fkm(config, data, mechanism=mechanism, runs=2, privacy_rng=seed)
                    releases.append([r for _, r in seen])
                out[f"radius={radius} epsilon={epsilon} z={z} seed={seed}"] = {
                    "bound": bound, "scale": mechanism.noise_scale, "observed": observed,
                    "data_independent": releases[0] == releases[1]}
            except Exception as exc:
                out[f"radius={radius} epsilon={epsilon} z={z} seed={seed}"] = {"error": repr(exc)}
json.dump(out, sys.stdout)
'''


def fkm_noise(tree: Path) -> dict:
    return run_script(FKM_NOISE_SCRIPT, tree)


def fkm_noise_change(original: dict, mutant: dict) -> str | None:
    """"same" if the noise of every release (released minus the loss clipped to the original's B) is the
    same draw in every configuration; "more" if it is that draw times a factor >= 1 (the noise scale's ratio,
    > 1 somewhere); else None."""
    import numpy as np

    grew = False
    for key, before in original.items():
        after = mutant.get(key, {"error": "missing"})
        if "error" in after or "error" in before or len(after["observed"]) != len(before["observed"]):
            return None
        ratio = after["scale"] / before["scale"]
        if not ratio >= 1.0:
            return None
        grew |= ratio > 1.0
        bound = before["bound"]  # the original's B
        for (v0, r0), (v1, r1) in zip(before["observed"], after["observed"], strict=True):
            n0 = (np.asarray(r0) - np.clip(np.asarray(v0), -bound, bound)) * ratio
            n1 = np.asarray(r1) - np.clip(np.asarray(v1), -bound, bound)
            if n0.shape != n1.shape or not np.allclose(n0, n1, rtol=1e-9, atol=1e-9 * bound * ratio):
                return None
    return "more" if grew else "same"


def within_bound(original: dict, mutant: dict) -> bool:
    """Whether, in every configuration, each of the mutant's releases is a value in the original's [-B, B] plus the
    original's noise draw for that release (the same noise scale and count of releases): whatever value the
    mutant clips the loss to, one event moves it by at most 2 B, the sensitivity the noise is calibrated to."""
    import numpy as np

    for key, before in original.items():
        after = mutant.get(key, {"error": "missing"})
        if "error" in after or "error" in before or len(after["observed"]) != len(before["observed"]):
            return False
        if after["scale"] != before["scale"]:
            return False
        bound = before["bound"]
        for (v0, r0), (_, r1) in zip(before["observed"], after["observed"], strict=True):
            noise = np.asarray(r0) - np.clip(np.asarray(v0), -bound, bound)
            value = np.asarray(r1) - noise
            if value.shape != noise.shape or not np.all(np.abs(value) <= bound * (1 + 1e-9)):
                return False
    return True


def data_independent(outputs: dict) -> bool:
    """Whether every configuration released the same values for two different data sets (same noise)."""
    return all(o.get("data_independent") is True for o in outputs.values())


def classify(system: str, difference: dict, noise: str | None, law: str | None = None) -> str:
    """The category of a survivor from its comparison (and, for DP-FKM, from ``fkm_noise_change``; for the
    mechanism module, from ``mutation_law.law_category``)."""
    released, described = difference["released_differs"], difference["description_differs"]
    if not (released or described or difference["breaks"] or difference["other_messages_differ"]):
        return "equivalent"
    if not (released or described):
        return "post-processing" if difference["other_messages_differ"] else "refuses"
    if system == "fkm" and noise == "same" and not described and not difference["breaks"]:
        return "post-processing"
    if system == "fkm" and noise == "more" and not difference["breaks"]:
        return "more-noise"
    if system == "fkm" and noise == "data-independent" and not difference["breaks"]:
        return "data-independent"
    if system == "fkm" and noise == "within-bound" and not difference["breaks"]:
        return "within-bound"
    if system == "mechanism" and law is not None:
        return law
    if system == "fts" and noise == "input-only" and not (described or difference["breaks"]):
        return "input-only"
    if system == "duets" and noise == "recalibrated" and not difference["breaks"]:
        return "recalibrated"
    if system in ("duets", "fts") and noise == "rescaled" and not difference["breaks"]:
        return "post-processing"
    if system == "fedzero" and noise in ("post-processing", "recalibrated") and not difference["breaks"]:
        return noise
    return "missed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--checks", default=str(CHECKS))
    parser.add_argument("--systems", default=",".join(SCOPE))
    args = parser.parse_args(argv)
    results, checks = load(Path(args.results)), Path(args.checks).resolve()
    with tempfile.TemporaryDirectory(prefix="mutation-check-") as work:
        tree = Path(work) / "tree"
        for name in tracked_files(ROOT):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
        for system in args.systems.split(","):
            code = check_fingerprint(tree, system)  # a check is keyed by all of the code it runs
            survivors = [m for m, row in system_results(system, results, tree)
                         if row["verdict"] == "pass" and m.fingerprint(code) not in load(checks)]
            if not survivors:
                continue
            original = release_outputs(system, tree, Path(work) / "run")
            original_noise = fkm_noise(tree) if system == "fkm" else None
            original_law = law_outputs(tree) if system == "mechanism" else None
            original_agents = isolation(tree) if system == "fts" else None
            original_epochs = recalibration(tree) if system == "duets" else None
            original_calls = release_calls(tree) if system == "fedzero" else None
            server = server_digests(tree)
            for mutant in survivors:
                path = tree / mutant.file
                text = path.read_text()
                try:
                    path.write_text(mutant.source)
                    difference = compare(system, original, release_outputs(system, tree, Path(work) / "run"))
                    noise, law = None, None
                    if system == "mechanism":
                        law = law_categories(original_law, law_outputs(tree))
                    if system == "fts" and (difference["released_differs"] or difference["description_differs"]):
                        agents = isolation(tree)
                        noise = "input-only" if input_only(server, tree, original_agents, agents, difference) else (
                            "rescaled" if rescaled_broadcast(original_agents, agents, difference) else None)
                    if system == "duets" and (difference["released_differs"] or difference["description_differs"]):
                        epochs = recalibration(tree)
                        noise = "recalibrated" if recalibrated(original_epochs, epochs, difference) else (
                            "rescaled" if rescaled(original_epochs, epochs, difference) else None)
                    if system == "fedzero" and (difference["released_differs"] or difference["description_differs"]):
                        noise = after_release(original_calls, release_calls(tree), difference)
                    if system == "fkm":
                        outputs = fkm_noise(tree)
                        noise = fkm_noise_change(original_noise, outputs)
                        if noise is None and data_independent(outputs) and not data_independent(original_noise):
                            noise = "data-independent"
                        elif noise is None and within_bound(original_noise, outputs):
                            noise = "within-bound"
                finally:
                    path.write_text(text)
                category = classify(system, difference, noise, law and law_category(law))
                record(checks, mutant.fingerprint(code), {**difference, "category": category, "fkm_noise": noise,
                                                          "law": law,
                                                          "system": system, "file": mutant.file, "line": mutant.line,
                                                          "diff": mutant.diff})
                print(f"{system} {mutant.file}:{mutant.line} {mutant.operator}: {category}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
