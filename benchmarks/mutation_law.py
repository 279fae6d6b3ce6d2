"""Checks, per surviving mutant of the shared mechanism module, that it releases nothing more than the original.

``law_outputs(tree)`` runs ``LAW_SCRIPT`` in ``tree`` (the original or a mutated copy): every release of
``accounting.mechanisms`` (Gaussian, Laplace, subsampled Gaussian: Poisson and fixed-size, plain, weighted,
weighted and rescaled) over clips and sensitivities 0.5, 2 and 3.7, noise multipliers 0.5, 1 and 3, seeds 5 and 11,
on two different data sets, each with three generators of the same seed: the plain one, a *mirrored* one (every
Gaussian and Laplace draw reflected about its location, every uniform draw unchanged: the same joint law, since
those laws are symmetric) and a *noiseless* one (every Gaussian and Laplace draw at its location: the release's
signal under the same sample). ``law_categories(original, mutant)`` names, per configuration, the first of these
that holds there (each a check that fails on a mutant it does not describe):

- ``equivalent``: the mutant's releases equal the original's up to rounding (1e-9 relative), masks identical;
- ``equal-in-law``: they equal the original's under the mirrored generator (a sign flip of symmetric noise);
- ``data-independent``: they are identical for the two data sets where the original's are not;
- ``post-processing``: they are ``a * original + b`` with ``a`` and ``b`` the same for both data sets and both
  seeds of a configuration (a public affine map of the original's release);
- ``more-noise``: the signal (noiseless release) and the sample are the original's and the noise is the original's
  draw times a factor of absolute value >= 1, per element, the same for both data sets and both seeds.

``law_category`` names the survivor: None (a privacy-relevant survivor) if some configuration passes no check (or
the mutant breaks where the original does not), else the last category of that list some configuration needed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mutation_release import run_script

LAW_SCRIPT = r'''
import json, sys
import numpy as np
from accounting.mechanisms import Gaussian, Laplace, SubsampledGaussian

class Mirrored(np.random.Generator):
    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return -super().standard_normal(size, dtype=dtype, out=out)
    def normal(self, loc=0.0, scale=1.0, size=None):
        return 2.0 * np.asarray(loc) - super().normal(loc, scale, size)
    def laplace(self, loc=0.0, scale=1.0, size=None):
        return 2.0 * np.asarray(loc) - super().laplace(loc, scale, size)

class Noiseless(np.random.Generator):
    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return 0.0 * super().standard_normal(size, dtype=dtype, out=out)
    def normal(self, loc=0.0, scale=1.0, size=None):
        return 0.0 * super().normal(loc, scale, size) + np.asarray(loc)
    def laplace(self, loc=0.0, scale=1.0, size=None):
        return 0.0 * super().laplace(loc, scale, size) + np.asarray(loc)

GENERATORS = {"plain": np.random.Generator, "mirrored": Mirrored, "noiseless": Noiseless}

def run(f, kind, seed):
    try:
        value = f(GENERATORS[kind](np.random.PCG64(seed)))
        if isinstance(value, tuple):
            return {"values": np.asarray(value[0], dtype=float).ravel().tolist(),
                    "mask": np.asarray(value[1], dtype=bool).ravel().tolist()}
        return {"values": np.asarray(value, dtype=float).ravel().tolist(), "mask": None}
    except Exception as exc:
        return f"error: {type(exc).__name__}"

out = {}
def record(config, seed, release, data):
    out.setdefault(config, {})[str(seed)] = {kind: [run(lambda g: release(d, g), kind, seed) for d in data]
                                             for kind in GENERATORS}

points = np.linspace(-4.0, 4.0, 9)
for s in (0.5, 2.0, 3.7):
    for z in (0.5, 1.0, 3.0):
        for seed in (5, 11):
            g, l = Gaussian(z, s), Laplace(z, s)
            data = (points, 1.3 - 0.7 * points)
            record(f"gaussian s={s} z={z}", seed, lambda d, r: g.release(d, r), data)
            record(f"laplace s={s} z={z}", seed, lambda d, r: l.release(d, r), data)
            for n in (3, 6):
                data = tuple(np.random.default_rng(k + n).normal(0.0, 2.0 * s, size=(4, n, 2)) for k in (7, 57))
                w1 = np.random.default_rng(n).random(n)
                wk = np.random.default_rng(n + 1).random((3, n))
                mechanisms = [SubsampledGaussian(q, z, s) for q in (0.1, 0.35, 1.0)]
                mechanisms.append(SubsampledGaussian(0.5, z, s, "fixed-size", population=n))
                for m in mechanisms:
                    key = f"subsampled {m.sampling.value} q={m.rate} z={z} clip={s} n={n}"
                    record(key + " plain", seed, lambda d, r: m.release(d, r, return_mask=True), data)
                    record(key + " weights (n,)", seed,
                           lambda d, r: m.release(d, r, weights=w1, return_mask=True), data)
                    record(key + " weights (k,n), scale 1/q", seed,
                           lambda d, r: m.release(d, r, weights=wk, scale=1.0 / m.rate, return_mask=True), data)
json.dump(out, sys.stdout)
'''

TOLERANCE = 1e-9


def law_outputs(tree: Path) -> dict:
    """{configuration: {seed: {generator: [output on data set A, on data set B]}}} of ``tree``'s mechanisms."""
    return run_script(LAW_SCRIPT, tree)


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= TOLERANCE * (1.0 + np.abs(b))))


def _runs(original: dict, mutant: dict, config: str):
    """(seed, data set, original's outputs by generator, mutant's outputs by generator) of one configuration;
    ValueError where the original's script failed or the mutant's output is missing."""
    for seed, runs in original[config].items():
        after = mutant.get(config, {}).get(seed)
        if not isinstance(runs, dict) or not isinstance(after, dict):
            raise ValueError("missing")
        for d in (0, 1):
            yield seed, d, {k: v[d] for k, v in runs.items()}, {k: v[d] for k, v in after.items()}


def _matches(before, now) -> bool:
    """Both outputs the same error, or the same sample (mask) and values equal up to rounding."""
    if isinstance(before, str) or isinstance(now, str):
        return before == now
    return before["mask"] == now["mask"] and _close(now["values"], before["values"])


def _same_as(original: dict, mutant: dict, config: str, kind: str) -> bool:
    return all(_matches(before[kind], now["plain"]) for _, _, before, now in _runs(original, mutant, config))


def _data_independent(outputs: dict, config: str) -> bool:
    return all(runs["plain"][0] == runs["plain"][1] for runs in outputs[config].values())


def affine_fit(before, after) -> bool:
    """Whether ``after`` = a * ``before`` + b (element for element, nested lists flattened) for one pair (a, b)."""
    x, y = np.ravel(np.asarray(before, dtype=float)), np.ravel(np.asarray(after, dtype=float))
    if x.shape != y.shape:
        return False
    if x.size == 0:
        return True
    (a, b), *_ = np.linalg.lstsq(np.stack([x, np.ones_like(x)], axis=1), y, rcond=None)
    return _close(a * x + b, y)


def _affine(original: dict, mutant: dict, config: str) -> bool:
    """mutant = a * original + b, one (a, b) for both data sets and both seeds, the same sample."""
    xs, ys = [], []
    for _, _, before, now in _runs(original, mutant, config):
        before, now = before["plain"], now["plain"]
        if isinstance(before, str) or isinstance(now, str):
            if before != now:
                return False
            continue
        if before["mask"] != now["mask"]:
            return False
        xs += before["values"]
        ys += now["values"]
    return affine_fit(xs, ys)


def _more_noise(original: dict, mutant: dict, config: str) -> bool:
    """The same signal (noiseless release) and sample; the noise the original's draw times a factor of absolute
    value >= 1, per element, one factor for both data sets and both seeds."""
    seen = None
    for _, _, before, now in _runs(original, mutant, config):
        outputs = (before["plain"], before["noiseless"], now["plain"], now["noiseless"])
        if any(isinstance(v, str) for v in outputs):
            if outputs[:2] != outputs[2:]:
                return False
            continue
        plain, quiet, now_plain, now_quiet = outputs
        if now_plain["mask"] != plain["mask"] or not _close(now_quiet["values"], quiet["values"]):
            return False
        signal = np.asarray(quiet["values"])
        noise = np.asarray(plain["values"]) - signal
        noise_now = np.asarray(now_plain["values"]) - np.asarray(now_quiet["values"])
        drawn = np.abs(noise) > TOLERANCE * (1.0 + np.abs(signal))
        if noise.shape != noise_now.shape or not _close(noise_now[~drawn], np.zeros((~drawn).sum())):
            return False
        factor = np.where(drawn, noise_now / np.where(drawn, noise, 1.0), np.nan)
        if np.any(np.abs(factor[drawn]) < 1.0 - TOLERANCE):
            return False
        if seen is not None:
            both = ~np.isnan(seen) & ~np.isnan(factor)
            if not _close(factor[both], seen[both]):
                return False
        seen = factor
    return True


#: the checks, in the order tried per configuration (a survivor is named by the last one any configuration needed)
CATEGORIES = ("equivalent", "equal-in-law", "data-independent", "post-processing", "more-noise")


def _configuration_category(original: dict, mutant: dict, config: str) -> str | None:
    checks = {
        "equivalent": lambda: _same_as(original, mutant, config, "plain"),
        "equal-in-law": lambda: _same_as(original, mutant, config, "mirrored"),
        "data-independent": lambda: _data_independent(mutant, config) and not _data_independent(original, config),
        "post-processing": lambda: _affine(original, mutant, config),
        "more-noise": lambda: _more_noise(original, mutant, config),
    }
    for name in CATEGORIES:
        try:
            if checks[name]():
                return name
        except (ValueError, KeyError, TypeError):
            continue
    return None


def law_categories(original: dict, mutant: dict) -> dict[str, str | None]:
    """{configuration: the first check of ``CATEGORIES`` that holds there, or None}."""
    if "script" in original:
        raise RuntimeError(f"the original's mechanism script failed: {original['script']}")
    if "script" in mutant:
        return {config: None for config in original}
    return {config: _configuration_category(original, mutant, config) for config in original}


def law_category(categories: dict[str, str | None]) -> str | None:
    """The survivor's category: None if some configuration has none (privacy-relevant), else the last of
    ``CATEGORIES`` that some configuration needed (each configuration is a mechanism of its own: a mutant that is
    equal in law in one and data-independent in another releases nothing more than the original in either)."""
    if not categories or any(c is None for c in categories.values()):
        return None
    return max(categories.values(), key=CATEGORIES.index)
