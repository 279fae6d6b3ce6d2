"""Our per-order RDP against independent references: mpmath quadrature of the Renyi divergence
between the two output distributions, and opacus's RDP analysis."""

import mpmath
import numpy as np
import pytest

from accounting.rdp_curves import poisson_gaussian_rdp, replace_one_gaussian_rdp


def quad_rdp(q, sigma, order, mean_p, mean_q, base_p=True):
    """Renyi divergence D_order(P || Q) by mpmath quadrature, P and Q mixtures (or Gaussians)."""
    mpmath.mp.dps = 30
    s = mpmath.mpf(sigma)

    def pdf(x, mean):
        return mpmath.exp(-((x - mean) ** 2) / (2 * s * s)) / (s * mpmath.sqrt(2 * mpmath.pi))

    def mix(x, mean):
        return (1 - q) * pdf(x, 0) + q * pdf(x, mean) if mean is not None else pdf(x, 0)

    def integrand(x):
        return mix(x, mean_p) ** order * mix(x, mean_q) ** (1 - order)

    peak = float(order) * 2 + 1
    value = mpmath.quad(integrand, [-mpmath.inf, -1, 0, 1, peak, mpmath.inf])
    return float(mpmath.log(value) / (order - 1))


CASES = [(0.35, 1.0), (0.01, 0.8), (0.2, 2.0), (0.5, 0.5)]


@pytest.mark.parametrize("q, sigma", CASES)
@pytest.mark.parametrize("order", [1.3, 1.7, 2.0, 2.5, 4.0, 7.3])
def test_add_remove_rdp_matches_quadrature(q, sigma, order):
    # add/remove: D(mixture || N(0)) is the larger direction (Mironov, Talwar, Zhang 2019).
    ours = poisson_gaussian_rdp(q, sigma, [order])[0]
    ref = quad_rdp(q, sigma, order, 1.0, None)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-10)


@pytest.mark.parametrize("q, sigma", [(0.35, 1.0), (0.1, 2.0)])
@pytest.mark.parametrize("order", [1.5, 2.0, 3.7])
def test_replace_one_rdp_matches_quadrature(q, sigma, order):
    ours = replace_one_gaussian_rdp(q, sigma, [order])[0]
    ref = quad_rdp(q, sigma, order, 1.0, -1.0)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-10)


@pytest.mark.parametrize("q, sigma", [(0.35, 1.0), (0.01, 1.1), (0.2, 3.0), (1.0, 1.0)])
def test_rdp_matches_opacus(q, sigma):
    from opacus.accountants.analysis.rdp import compute_rdp

    orders = [2.0, 3.0, 5.0, 10.0, 32.0, 63.0, 2.5, 4.5]
    if q < 0.3:  # opacus's fractional-order series converges here (not at q = 0.35, z = 1)
        orders += [1.5, 1.8]
    ref = compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=orders)
    ours = poisson_gaussian_rdp(q, sigma, orders)
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-12)
