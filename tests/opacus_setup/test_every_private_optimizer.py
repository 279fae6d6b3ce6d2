"""Every private optimizer class opacus can hand back is observed (``dpfed.dpsgd.observe``): the test walks
opacus's own dispatch table (``opacus.optimizers.get_optimizer_class`` over every clipping, distribution and
grad-sample mode it accepts) and, for each class it returns, takes one step of an instance inside
``observing_opacus`` and requires the step counted once and the noise it added measured.

The noise reference is the closed form: one step's noise over n coordinates has measured std / (z C) distributed as
sqrt(chi2(n) / n); n = 40 here, so the measured ratio lies in [0.5, 1.6] with probability above 1 - 1e-4 (scipy's
chi2; adaptive clipping adds more noise to the gradient by design, Andrew et al.'s Theorem 1, and is held to that
larger figure). Each instance is seeded, so the outcome is the same every run. The distributed classes run in a
one-process gloo group (rank 0, world size 1). The clipping of each step is verified from its per-sample gradients
(``dpfed.dpsgd.clip_check``) except under ghost clipping, which keeps none.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
optimizers = pytest.importorskip("opacus.optimizers")

CLIPPINGS = ("flat", "per_layer", "adaptive")
MODES = (None, "hooks", "functorch", "ew", "ghost", "ghost_fsdp")
Z, C, BATCH = 1.0, 1.0, 4


def dispatched_classes() -> list:
    """Every class opacus's ``get_optimizer_class`` returns for some arguments it accepts."""
    found = []
    for clipping, distributed, mode in itertools.product(CLIPPINGS, (False, True), MODES):
        try:
            cls = optimizers.get_optimizer_class(clipping, distributed, mode)
        except ValueError:
            continue
        if cls not in found:
            found.append(cls)
    return found


@pytest.fixture(scope="module")
def one_process_group(tmp_path_factory):
    import torch.distributed as dist

    started = not dist.is_initialized()
    if started:  # a file store: no port to collide with
        store = tmp_path_factory.mktemp("group") / "store"
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    if started:
        dist.destroy_process_group()


def _instance(cls):
    torch.manual_seed(0)
    weight, bias = torch.nn.Parameter(torch.zeros(4, 8)), torch.nn.Parameter(torch.zeros(8))
    params = [weight, bias]
    kwargs = {"noise_multiplier": Z, "max_grad_norm": C, "expected_batch_size": BATCH}
    if issubclass(cls, optimizers.DPPerLayerOptimizer):
        kwargs["max_grad_norm"] = [C / 2 ** 0.5] * 2  # flat norm C
    if issubclass(cls, optimizers.AdaClipDPOptimizer):
        kwargs.update(target_unclipped_quantile=0.5, clipbound_learning_rate=0.2, max_clipbound=10.0,
                      min_clipbound=0.1, unclipped_num_std=2.0)
    optimizer = cls(torch.optim.SGD(params, lr=0.1), generator=torch.Generator().manual_seed(1), **kwargs)
    return optimizer, params


def _gradients(optimizer, params) -> None:
    """One batch's gradients as the class expects them: per-sample (``grad_sample``), or, for ghost clipping, the
    clipped sum already in ``grad`` (opacus's loss wrapper puts it there)."""
    ghost = isinstance(optimizer, optimizers.DPOptimizerFastGradientClipping)
    for p in params:
        sample = torch.randn(BATCH, *p.shape) * 5.0
        if ghost:
            p.grad = sample.sum(0) / BATCH * 0.01  # a mean loss's clipped sum (per-sample norms far below C)
        else:
            p.grad_sample = sample
            p.grad = sample.mean(0)


def _expected_ratio(optimizer) -> float:
    if isinstance(optimizer, optimizers.AdaClipDPOptimizer):  # Theorem 1: the gradient's noise is raised
        return (Z ** -2 - (2 * optimizer.unclipped_num_std) ** -2) ** -0.5 / Z
    return 1.0


def test_the_table_is_walked_and_holds_opacus_documented_paths():
    """The walk finds at least the classes opacus documents (ghost, adaptive, per-layer, distributed, FSDP)."""
    names = {cls.__name__ for cls in dispatched_classes()}
    assert {"DPOptimizer", "DPOptimizerFastGradientClipping", "AdaClipDPOptimizer", "DPPerLayerOptimizer",
            "DistributedDPOptimizer", "FSDPOptimizerFastGradientClipping"} <= names, names


@pytest.mark.parametrize("cls", dispatched_classes(), ids=lambda cls: cls.__name__)
def test_each_class_opacus_dispatches_on_is_observed(cls, one_process_group):
    from dpfed.dpsgd.observe import observing_opacus

    optimizer, params = _instance(cls)
    with observing_opacus() as log:
        for name in ("pre_step", "add_noise"):  # whatever class in its MRO defines them: observed
            assert hasattr(getattr(cls, name), "__wrapped__"), f"{cls.__name__}.{name} is not observed"
        _gradients(optimizer, params)
        optimizer.step()
    record = log.to_dict()
    assert [s["count"] for s in record["steps"]] == [1], f"{cls.__name__}: {record['steps']}"
    [noise] = record["noise"]
    assert noise["count"] == sum(p.numel() for p in params) and noise["expected_std"] == pytest.approx(Z * C)
    ratio = (noise["sum_squares"] / noise["count"]) ** 0.5 / noise["expected_std"]
    assert 0.5 * _expected_ratio(optimizer) < ratio < 1.6 * _expected_ratio(optimizer), (cls.__name__, ratio)
    ghost = isinstance(optimizer, optimizers.DPOptimizerFastGradientClipping)  # keeps no per-sample gradients
    assert record["clipping"]["unverified" if ghost else "verified"] == 1, record["clipping"]
    for name in ("pre_step", "add_noise"):  # restored on leaving the block
        assert not hasattr(getattr(cls, name), "__wrapped__")


@pytest.mark.parametrize("scale, status, share", [(1.0, "verified", None), (3.0, "exceeded", 3.0),
                                                  (0.5, "unverified", 0.5)])
def test_a_record_share_of_the_clipped_sum_is_solved_against_the_clip(scale, status, share):
    """Every per-sample gradient of norm far above C, clipped by opacus at ``scale`` C: the sum matches C's clipping
    (verified), or each record's share is solved as ``scale`` C (closed form): above C is exceeded, below C (a
    stricter clip than accounted) is not a violation."""
    from dpfed.dpsgd.clip_check import check_clipping

    optimizer, params = _instance(optimizers.DPOptimizer)
    _gradients(optimizer, params)
    optimizer.max_grad_norm = scale * C
    optimizer.clip_and_accumulate()
    got, ratio = check_clipping(optimizer, C, after_skip=False)
    assert got == status and (ratio == pytest.approx(share, rel=1e-3) if share else ratio is None)
    assert check_clipping(optimizer, C, after_skip=True) == ("unverified", None)  # a sum over skipped steps


@pytest.mark.parametrize("mode", ["hooks", "functorch", "ew", "ghost"])
def test_each_grad_sample_mode_through_make_private_is_observed(mode):
    """``make_private(grad_sample_mode=...)`` on a tiny model, 8 Poisson steps: each step counted once at the rate
    opacus's accountant hook is given (1/8), the noise over 8 x 210 coordinates at z C (ratio within 0.9-1.1: a
    chi-square of 1680 degrees of freedom leaves it with probability below 1e-6), and the clipping verified at every
    step except under ghost clipping (no per-sample gradients kept)."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from dpfed.dpsgd.observe import observing_opacus

    torch.manual_seed(0)
    x, y = torch.randn(256, 10), torch.randint(0, 2, (256,))
    model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    criterion = torch.nn.CrossEntropyLoss()
    with observing_opacus() as log:
        made = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=Z, max_grad_norm=C,
            data_loader=DataLoader(TensorDataset(x, y), batch_size=32), grad_sample_mode=mode,
            **({"criterion": criterion} if mode == "ghost" else {}))
        model, optimizer, loader = (made[0], made[1], made[3]) if mode == "ghost" else made
        criterion = made[2] if mode == "ghost" else criterion
        for xb, yb in loader:
            optimizer.zero_grad()
            criterion(model(xb), yb).backward()
            optimizer.step()
    record = log.to_dict()
    [steps] = record["steps"]
    assert steps["count"] == 8 and steps["sample_rate"] == pytest.approx(1 / 8)
    [noise] = record["noise"]
    assert noise["count"] == 8 * 210 and 0.9 < (noise["sum_squares"] / noise["count"]) ** 0.5 / (Z * C) < 1.1
    assert record["clipping"]["unverified" if mode == "ghost" else "verified"] == 8


def _patched() -> list[str]:
    """The observed methods that still carry an observer's wrapper."""
    from dpfed.dpsgd.observe import OBSERVED_METHODS

    return [f"{cls.__name__}.{name}" for cls in dispatched_classes() for name in OBSERVED_METHODS
            if hasattr(getattr(cls, name), "__wrapped__")]


def test_blocks_left_out_of_order_leave_no_patch_and_log_only_while_open():
    """Two observing blocks entered A then B and left A first (as two threads may): after A is left, a step is
    logged by B only; after both, no wrapper is left on any class."""
    from dpfed.dpsgd.observe import observing_opacus

    optimizer, params = _instance(optimizers.DPOptimizer)
    first, second = observing_opacus(), observing_opacus()
    log_a, log_b = first.__enter__(), second.__enter__()
    first.__exit__(None, None, None)
    _gradients(optimizer, params)
    optimizer.step()
    second.__exit__(None, None, None)
    assert not log_a.steps and sum(log_b.steps.values()) == 1
    assert _patched() == []


def test_an_install_that_fails_leaves_no_patch(monkeypatch):
    from dpfed.dpsgd import provenance
    from dpfed.dpsgd.observe import observing_opacus

    def fail(self):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(provenance.DataProvenance, "install", fail)
    with pytest.raises(RuntimeError, match="planted failure"), observing_opacus():
        pass
    assert _patched() == []


def test_two_threads_blocks_each_log_their_own_steps_and_leave_no_patch():
    """Two observing blocks open at once in two threads (as a legacy Flower server's client threads): each logs
    only the step its own thread took, and leaving them in either order leaves no wrapper."""
    import threading

    from dpfed.dpsgd.observe import observing_opacus

    logs, opened, step_now, done = {}, threading.Barrier(2), threading.Barrier(2), threading.Barrier(2)

    def client(name, steps):
        optimizer, params = _instance(optimizers.DPOptimizer)
        with observing_opacus() as log:
            opened.wait()
            step_now.wait()
            for _ in range(steps):
                optimizer.zero_grad()
                _gradients(optimizer, params)
                optimizer.step()
            done.wait()
        logs[name] = log

    threads = [threading.Thread(target=client, args=("a", 1)), threading.Thread(target=client, args=("b", 2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sum(logs["a"].steps.values()) == 1 and sum(logs["b"].steps.values()) == 2
    assert _patched() == []
