"""``dpfed.dpsgd.provenance`` on plain torch loops (no opacus): which data each plain optimizer step's gradient was
computed from. The expected classes follow from how each loop is written (which tensors feed which loss)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset

from dpfed.dpsgd.provenance import OTHER, PRIVATE, UNKNOWN, DataProvenance


def _run(loop, private_dataset):
    """Run ``loop(step)`` observed; ``step(model, optimizer, loss)`` backpropagates and steps a plain optimizer."""
    provenance = DataProvenance()
    provenance.install()
    provenance.enter_mode()
    try:
        def step(model, optimizer, loss):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            provenance.plain_step(optimizer, {id(p): p for p in model.parameters() if p.grad is not None})

        loop(step)
        provenance.made_private(DataLoader(private_dataset))
    finally:
        provenance.exit_mode()
        provenance.uninstall()
    judged = provenance.judge()
    assert all(s["count"] == 1 for s in judged)  # each step its own (different sources or data)
    return [s["data"] for s in judged]


def _data(seed, n=32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=g), torch.randint(0, 2, (n,), generator=g)


def test_loader_batches_of_the_private_set_and_of_another():
    torch.manual_seed(0)
    private, public = TensorDataset(*_data(1)), TensorDataset(*_data(2))
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def loop(step):
        for dataset in (public, private):
            x, y = next(iter(DataLoader(dataset, batch_size=8)))
            step(model, optimizer, nn.functional.cross_entropy(model(x), y))

    assert _run(loop, private) == [OTHER, PRIVATE]


def test_views_subsets_and_a_frozen_model():
    """A slice of the private tensor is private; a disjoint Subset of the same base is not; a frozen model's outputs
    on public inputs are other data, on private inputs private (the frozen model was run under no_grad)."""
    torch.manual_seed(0)
    x, y = _data(1, n=64)
    base = TensorDataset(x, y)
    private, disjoint = Subset(base, range(32)), Subset(base, range(32, 64))
    teacher, student = nn.Linear(4, 2), nn.Linear(4, 2)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    public_x, _ = _data(2)

    def loop(step):
        step(student, optimizer, nn.functional.cross_entropy(student(x[:8]), y[:8]))  # private tensor, sliced
        xs, ys = next(iter(DataLoader(disjoint, batch_size=8)))
        step(student, optimizer, nn.functional.cross_entropy(student(xs), ys))
        for inputs in (public_x[:8], x[:8]):
            with torch.no_grad():
                target = teacher(inputs).softmax(-1)
            step(student, optimizer, nn.functional.cross_entropy(student(torch.randn(8, 4)), target))

    assert _run(loop, private) == [PRIVATE, OTHER, OTHER, PRIVATE]


def test_python_values_are_not_established_and_generated_data_is_other():
    torch.manual_seed(0)
    private = TensorDataset(*_data(1))
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def loop(step):
        rows = [[0.1, 0.2, 0.3, 0.4]] * 8
        step(model, optimizer, model(torch.tensor(rows)).sum())
        step(model, optimizer, model(torch.randn(8, 4)).sum())

    assert _run(loop, private) == [UNKNOWN, OTHER]
