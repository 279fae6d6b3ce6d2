"""The shipped example configs/opacus_breast_cancer.py: every function builds a valid opacus set-up and its
loader has the scheme its docstring promises (the full check of each runs in BENCHMARKS.md; the README
test runs two of them through the CLI)."""

import pytest

from attacks.opacus_checks.load import build_setup
from attacks.opacus_checks.sampler import read_loader

EXAMPLE = "configs/opacus_breast_cancer.py"
SCHEMES = {"make_setup": "poisson", "make_weighted_sampler_setup": "with-replacement",
           "make_shuffled_setup": "shuffled", "make_realised_normalisation_setup": "poisson",
           "make_halved_noise_setup": "poisson", "make_step_mismatch_setup": "poisson"}


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_shipped_setup_builds_and_reads(name):
    setup = build_setup(f"{EXAMPLE}:{name}")
    facts = read_loader(setup.data_loader)
    assert facts.scheme == SCHEMES[name]
    assert facts.population == (40 if name == "make_realised_normalisation_setup" else 569)


def test_default_function_is_make_setup():
    assert build_setup(EXAMPLE).epochs == 3
