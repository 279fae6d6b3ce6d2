"""What an accountant will cost before it runs, a time budget, and progress while a long one runs.

No accountant may block for more than about ``BUDGET_SECONDS`` without saying so:

- ``estimate_seconds`` predicts the cost of dp-accounting's PLD from its grid (points of one release's
  privacy-loss support at the discretisation interval used, times the releases, times the sampling
  rate that thins the subsampled support); fitted on this project's measurements (BENCHMARKS.md,
  "Accountant cost guard": within a factor of about 3 from 60 to 10^4 releases), plus, where one release's
  PMF is sparse (large noise), the exact integer power ``size ** count`` dp-accounting computes first
  (superlinear in the releases: minutes at 1e8). Compositions the PLD
  analyses as one Gaussian (``accounting.shortcuts``) cost one release. The closed-form accountants
  (exact, rdp, moments, dpa-rdp) cost milliseconds. Opacus's PRV runs in a worker process and is given
  a real time limit instead (``accounting.prv``).
- ``account_all`` skips an accountant whose estimate exceeds the budget, with the reason ("would take
  about N s; `--accountants pld` insists"), unless the caller insists on it by name; then it runs, and
  ``announce_if_slow`` prints a line on stderr before it and every ``EVERY_SECONDS`` while it runs.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time

BUDGET_SECONDS = 10.0
EVERY_SECONDS = 10.0
PLD_SECONDS_PER_POINT = 1.2e-7  # one grid point of one release, thinned by the sampling rate
PLD_FIXED_SECONDS = 0.3


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _rate(mechanism) -> float:
    from accounting import peers
    from accounting.mechanisms import Sampling, SubsampledGaussian

    if not isinstance(mechanism, SubsampledGaussian) or peers.is_unsampled(mechanism):
        return 1.0
    if mechanism.sampling is Sampling.POISSON:
        return float(mechanism.rate)
    return mechanism.batch_size / mechanism.population


def pld_seconds(composition) -> tuple[float, str]:
    """Predicted seconds of dp-accounting's PLD on ``composition`` and what drives them."""
    from accounting.base import Unsupported
    from accounting.pld import discretisation_interval, loss_range
    from accounting.shortcuts import collapsed

    target, note = collapsed(composition)
    try:
        interval = discretisation_interval(target)
    except Unsupported:
        return 0.0, "refused before any work"
    work = sum(c * loss_range(m) / interval * _rate(m) for m, c in target.parts)
    what = f"dp-accounting's PLD over {composition.total_count} releases" + (" as one Gaussian" if note else "")
    power = sum(_sparse_power_seconds(m, c, interval) for m, c in target.parts)
    if power > 1.0:
        what += f"; {power:.0f} s of that an exact integer power, its sparse PMF's size bound"
    return PLD_FIXED_SECONDS + PLD_SECONDS_PER_POINT * work + power, what


SPARSE_POINTS = 1000  # dp-accounting keeps a release's PMF sparse up to this many points (pld_pmf)
BIGINT_SECONDS = 1.15e-11  # seconds per bits**1.585 of Python's Karatsuba power (size**count, measured here)


def _sparse_power_seconds(mechanism, count: int, interval: float) -> float:
    """Seconds dp-accounting spends on ``size ** count`` as a Python integer before self-composing a
    sparse PMF of ``size`` points (a bound it computes exactly: 2.8e8 bits per PMF, about 8 minutes for
    both by this fit, for 1e8 releases of 7 points, holding the interpreter's lock all along); 0 where the
    PMF is dense. Reads dp-accounting's PLD internals; if they move, this term is left out."""
    from accounting.mechanisms import Composition
    from accounting.pld import _accountant, loss_range

    if count < 2 or loss_range(mechanism) / interval > 20 * SPARSE_POINTS:
        return 0.0  # one release, or a support far too wide to be sparse (not worth building to check)
    try:
        from dp_accounting.pld.pld_pmf import SparsePLDPmf

        pld = _accountant(Composition.of(mechanism, 1), interval)._pld  # one release: milliseconds
        pmfs = [pld._pmf_remove] + ([] if pld._symmetric else [pld._pmf_add])
        sizes = [pmf.size for pmf in pmfs if isinstance(pmf, SparsePLDPmf)]
    except Exception:  # dp-accounting's internals moved: no estimate of this term
        return 0.0
    return sum(BIGINT_SECONDS * (count * math.log2(max(size, 2))) ** 1.585 for size in sizes)


def estimate_seconds(name: str, composition) -> tuple[float, str]:
    """Predicted seconds of accountant ``name`` on ``composition`` (0 where it is negligible or limited
    by a real timeout instead), and a few words on what drives them."""
    if name == "pld":
        try:
            return pld_seconds(composition)
        except Exception:  # an estimate never stops accounting; the accountant says what is wrong
            return 0.0, "no estimate"
    if name == "prv":
        return 0.0, "opacus's PRV in its worker process, stopped at the time limit unless named"
    return 0.0, ""


@contextlib.contextmanager
def announce_if_slow(name: str, what: str, progress, after: float = BUDGET_SECONDS, every: float = EVERY_SECONDS):
    """While the block runs: after ``after`` seconds, and every ``every`` seconds from then, a line on
    ``progress`` saying that accountant ``name`` is still running and why it takes long."""
    done = threading.Event()
    start = time.perf_counter()

    def watch():
        wait = after
        while not done.wait(wait):
            elapsed = time.perf_counter() - start
            progress(f"{name}: still running after {elapsed:.0f} s ({what or 'no estimate'})")
            wait = every

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join(timeout=1.0)
