"""The adaptive wrappers' clipped-count noise under each neighbouring relation.

Flower's adaptive wrappers (``compute_adaptive_noise_params``, flwr 1.42) split the user's z into the update's
multiplier z_u and the clipped count's std sigma_b by z^-2 = z_u^-2 + (2 sigma_b)^-2: the count of Andrew et al.
(2021), a sum of centred bits b - 1/2, whose sensitivity is 1/2 under add/remove. Flower sums 0/1 bits
(``int(norm_bit)``) and adds N(0, sigma_b^2) to that sum: one client changes it by 1 under add/remove (it adds a
bit 1) and under replace-one (a bit 0 becomes 1). The release (update sum and count) is one Gaussian of GDP

- replace-one (update sensitivity 2C, count 1): mu^2 = (2 / z_u)^2 + sigma_b^-2 = (2 / z)^2, so z holds;
- add/remove (update sensitivity C, count 1): mu^2 = z_u^-2 + sigma_b^-2 > z^-2: the effective multiplier
  1 / mu is below z (the centred count's 1/2 would give exactly z).

Flower divides the noisy count by the round's number of replies; under fixed-size sampling that is the sample m.
"""

from __future__ import annotations

import dataclasses
import math

from attacks.flower_checks.findings import FlowerFinding

ADD_REMOVE_CLAIMS = ("no-amplification", "poisson")  # the claims accounted under add/remove (sensitivity C)


def effective_multipliers(update_z: float, count_std: float) -> dict:
    """``{"assumed", "replace-one", "add-remove"}``: the combined multiplier Flower's split assumes (centred bits,
    add/remove), and the effective one of a 0/1-bit count under each relation (in units of that relation's update
    sensitivity: 2C replace-one, C add/remove). ``count_std`` 0 or inf: no count noise term."""
    if not count_std or math.isinf(count_std):
        return {"assumed": update_z, "replace-one": update_z, "add-remove": update_z}
    assumed = (update_z ** -2 + (2.0 * count_std) ** -2) ** -0.5
    replace_mu = math.sqrt((2.0 / update_z) ** 2 + count_std ** -2)
    add_remove_mu = math.sqrt(update_z ** -2 + count_std ** -2)
    return {"assumed": assumed, "replace-one": 2.0 / replace_mu, "add-remove": 1.0 / add_remove_mu}


def count_noise_finding(config, delta: float, claims=()) -> FlowerFinding | None:
    """For an adaptive ``config`` (``FlowerDpConfig``), the count noise's effective multipliers; medium where an
    add/remove claim is made (its epsilon at Flower's z understates what that relation spends: given at the
    effective multiplier), info otherwise. None for fixed clipping."""
    from dpfed.flower.config import CLAIM_ACCOUNTANTS, epsilon_of

    if not config.kind.endswith("adaptive") or config.update_noise_multiplier is None:
        return None
    z, z_u = float(config.noise_multiplier), float(config.update_noise_multiplier)
    rest = z ** -2 - z_u ** -2
    sigma_b = 0.5 / math.sqrt(rest) if rest > 0 else math.inf
    multipliers = effective_multipliers(z_u, sigma_b)
    values = {"noise_multiplier": z, "update_noise_multiplier": z_u, "clipped_count_stddev": sigma_b,
              "assumed_count_sensitivity": 0.5, "count_sensitivity": 1.0,
              "effective_noise_multiplier_replace_one": multipliers["replace-one"],
              "effective_noise_multiplier_add_remove": multipliers["add-remove"]}
    head = (f"adaptive clipping: Flower splits z = {z:.4g} into z_u = {z_u:.4g} on the update and sigma_b = "
            f"{sigma_b:.4g} on the clipped count for a count of sensitivity 1/2 (centred bits), but it sums 0/1 bits "
            f"(sensitivity 1): under replace-one (what Flower's sampler runs, accounted here) the split holds "
            f"(effective z {multipliers['replace-one']:.4g}); under add/remove the effective multiplier is "
            f"{multipliers['add-remove']:.4g}")
    made = [c for c in claims if c in ADD_REMOVE_CLAIMS]
    if not made:
        return FlowerFinding("adaptive-count-noise", "info", head, values)
    effective = dataclasses.replace(config, noise_multiplier=multipliers["add-remove"], update_noise_multiplier=None)
    spent = {c: epsilon_of(effective.claim(c), CLAIM_ACCOUNTANTS[c], delta) for c in made}
    values["add_remove_epsilons"] = spent
    words = ", ".join(f"{c} {e:.4g}" for c, e in spent.items())
    return FlowerFinding("adaptive-count-noise", "medium",
                         f"{head}: the add/remove claim(s) made, accounted at z, spend at that multiplier epsilon "
                         f"{words}", values)
