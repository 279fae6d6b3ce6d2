"""The noise test of ``attacks.opacus_checks.noise`` on null worlds: exactly Gaussian noise of the told std.

2000 null repetitions at level 0.05 flag at most 0.05 + 3 binomial standard deviations (0.065) of them;
the upper confidence limit at false-alarm 0.05 covers the true std in at least 1 - 0.065 of them. With
the fixed seed these are deterministic; a correct test fails them with probability below 0.2 % each.
"""

import numpy as np

from attacks.opacus_checks.noise import _test


def test_null_flag_rate_and_upper_limit_coverage():
    rng = np.random.default_rng(0)
    flags = covered = 0
    reps = 2000
    for _ in range(reps):
        values = rng.normal(0.0, 0.3, size=200)
        result = _test(values, 0.3, 8, level=0.05, false_alarm=0.05)
        flags += result.flagged
        covered += result.std_upper >= 0.3
    assert flags / reps <= 0.065
    assert covered / reps >= 1 - 0.065


def test_halved_noise_is_flagged_at_a_tiny_false_alarm():
    values = np.random.default_rng(1).normal(0.0, 0.15, size=200)
    result = _test(values, 0.3, 8, level=1e-6 / 3, false_alarm=1e-6)
    assert result.flagged and result.std_upper < 0.3
