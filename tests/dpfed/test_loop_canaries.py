"""Gradient canaries through a private optimizer (``dpfed.dpsgd.loop_canaries``), on stand-in parameters whose
clipped gradient sum and noise are made here: the score is the log-likelihood ratio of one canary's releases, so an
included canary's mean score is positive and an excluded one's is exactly the null's mean (closed form below), and a
null run (coins drawn, nothing inserted) gives one-run bounds of 0. Seeds fixed; the null bound's false-failure
probability is below 1e-3 (confidence 0.999)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpfed.dpsgd.loop_canaries import LoopCanaries


class Param:
    def __init__(self, n):
        self.data = torch.zeros(n)
        self.summed_grad = None
        self.grad = None

    def numel(self):
        return self.data.numel()


def run(canaries: LoopCanaries, steps: int, rate: float, clip: float, std: float, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    params = [Param(3000), Param(2000)]
    for _ in range(steps):
        for p in params:  # other records' clipped sum: arbitrary, known to the white-box auditor
            p.summed_grad = torch.randn(p.numel(), generator=gen)
        clean = canaries.before_noise(params, clip, rate)
        for p in params:
            p.grad = p.summed_grad + std * torch.randn(p.numel(), generator=gen)
        canaries.after_noise(params, clean, std, clip, rate)
    return canaries


def test_scores_separate_included_canaries_and_the_absent_mean_is_the_closed_form():
    canaries = run(LoopCanaries(2000, seed=3), steps=40, rate=0.5, clip=1.0, std=1.0)
    included, scores = canaries.included, canaries.scores
    assert scores[included].mean() > scores[~included].mean() + 1.0
    # absent: o ~ N(0, 1), score per step log(1 - q + q exp(o - 1/2)); E = E log(0.5 + 0.5 exp(o - 1/2))
    o = np.random.default_rng(0).normal(size=2_000_000)
    per_step = np.mean(np.log(0.5 + 0.5 * np.exp(o - 0.5)))
    sd = math.sqrt(np.var(np.log(0.5 + 0.5 * np.exp(o - 0.5))) * 40 / (~included).sum())
    assert scores[~included].mean() == pytest.approx(40 * per_step, abs=5 * sd)


def test_a_null_run_bounds_nothing():
    from attacks.estimators import estimate_one_run

    canaries = run(LoopCanaries(2000, seed=5, insert=False), steps=20, rate=0.5, clip=1.0, std=0.5)
    bounds = estimate_one_run(canaries.scores, canaries.included, 1e-5, 0.999)
    assert all(b.epsilon == 0 for b in bounds if b.rigorous), [(b.method, b.epsilon) for b in bounds]


def test_an_inserted_run_at_little_noise_bounds_a_large_epsilon():
    from attacks.estimators import estimate_one_run

    canaries = run(LoopCanaries(2000, seed=5), steps=20, rate=0.5, clip=1.0, std=0.25)
    bounds = estimate_one_run(canaries.scores, canaries.included, 1e-5, 0.95)
    assert max(b.epsilon for b in bounds if b.rigorous) > 3


def test_more_canaries_than_coordinates_are_refused():
    from accounting.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="need as many coordinates"):
        run(LoopCanaries(6000, seed=1), steps=1, rate=0.5, clip=1.0, std=1.0)
