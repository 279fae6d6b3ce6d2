"""Mechanisms and accountants: the shared subsampled-Gaussian module every other package builds on."""

from accounting.base import AccountingResult, run_accountant
from accounting.calibration import (
    analytic_gaussian_noise_multiplier,
    calibrate_gaussian,
    check_classic_calibration,
    classic_gaussian_noise_multiplier,
)
from accounting.errors import ConfigurationError
from accounting.exact import gaussian_delta, gaussian_epsilon
from accounting.mechanisms import (
    Composition,
    Gaussian,
    Laplace,
    Mechanism,
    Neighbouring,
    Sampling,
    SubsampledGaussian,
    as_composition,
    as_generator,
)
from accounting.registry import ACCOUNTANTS, account_all, get_accountant

__all__ = [
    "ACCOUNTANTS", "AccountingResult", "Composition", "ConfigurationError", "Gaussian", "Laplace",
    "Mechanism", "Neighbouring", "Sampling", "SubsampledGaussian", "account_all",
    "analytic_gaussian_noise_multiplier", "as_composition", "as_generator", "calibrate_gaussian",
    "check_classic_calibration", "classic_gaussian_noise_multiplier", "gaussian_delta",
    "gaussian_epsilon", "get_accountant", "run_accountant",
]
