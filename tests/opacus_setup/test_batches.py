"""Batches in the forms users' loaders yield them (issues 39 item 5, 40 item 3): ``attacks.opacus_checks.batches``
splits a batch into the model's input(s) and the label, and opacus-check builds its batches with the loader's
own ``collate_fn``. The set-ups (tests/opacus_setup/batch_setups.py) use fixed seeds throughout; the same
records as tuples and as dicts give the same batches, so the same numbers (not merely the same verdict)."""

import pytest
import torch
from torch import nn

from accounting.errors import ConfigurationError
from attacks.opacus_checks.batches import BatchReader, ModelBatch, check_keys, forward_parameters, split_batch
from attacks.opacus_checks.check import check_opacus_setup

SETUPS = "tests/opacus_setup/batch_setups.py"
X, Y = torch.arange(12.0).reshape(4, 3), torch.tensor([0, 1, 0, 1])


class Named(nn.Module):
    def forward(self, pixels, *, mask=None):
        return pixels if mask is None else pixels * mask


# ----- the split -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [(X, Y), [X, Y]])
def test_tuples_and_lists_are_input_then_label(batch):
    out = split_batch(batch, nn.Linear(3, 2))
    assert out.args == (X,) and out.kwargs == {} and out.label is Y


def test_a_tensor_is_the_input_without_label():
    out = split_batch(X, nn.Linear(3, 2))
    assert out.args == (X,) and out.label is None and len(out) == 4


@pytest.mark.parametrize("key", ["img", "image", "x", "input", "inputs", "input_ids", "pixel_values", "features"])
@pytest.mark.parametrize("label", ["label", "labels", "y", "target", "targets"])
def test_dicts_with_usual_names(key, label):
    out = split_batch({key: X, label: Y, "id": torch.arange(4)}, nn.Linear(3, 2))
    assert len(out.args) + len(out.kwargs) == 1 and out.label is Y
    args, kwargs = out.call(lambda *a, **k: (a, k))
    assert [*args, *kwargs.values()] == [X] and set(kwargs) <= {key}


def test_forward_parameter_names_come_first_and_go_by_name_after_the_leading_ones():
    model = Named()
    out = split_batch({"image": Y, "pixels": X, "mask": X, "label": Y}, model)
    assert out.args == (X,) and set(out.kwargs) == {"mask"} and out.label is Y  # "image" is not forward's
    both = split_batch({"pixels": X, "mask": X}, lambda pixels, mask: pixels)  # leading parameters: positional
    assert both.args == (X, X) and both.kwargs == {} and both.label is None
    assert torch.equal(out.call(model), X * X)
    assert "named like a parameter of the model's forward" in out.form


def test_forward_is_read_through_opacus_grad_sample_module():
    from opacus import GradSampleModule

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, pixels):
            return self.lin(pixels)

    assert forward_parameters(GradSampleModule(Net())) == (("pixels",), ("pixels",))
    assert split_batch({"pixels": X, "label": Y}, GradSampleModule(Net())).args == (X,)


def test_explicit_keys_win_and_a_list_of_keys_passes_several_inputs():
    out = split_batch({"a": X, "b": Y, "x": Y}, nn.Linear(3, 2), input_key="a", label_key="b")
    assert out.args == (X,) and out.label is Y
    model = Named()
    out = split_batch({"p": X, "mask": X, "y": Y}, model, input_key=["p", "mask"])
    assert out.args == (X,) and list(out.kwargs) == ["mask"] and out.label is Y


@pytest.mark.parametrize("batch, keys, words", [
    ({"a": X, "b": Y}, {}, "it is a dict with keys 'a', 'b'; no key names the input"),
    ({"a": X, "b": Y}, {"input_key": "img"}, "input_key 'img' is not a key of the batches"),
    ({"img": X, "b": Y}, {"label_key": "label"}, "label_key 'label' is not a key"),
    ((X, Y), {"input_key": "img"}, "input_key names a key of dict batches, but a batch is a tuple"),
    ((), {}, "it is a tuple of 0 elements"),
    ("text", {}, "it is a str; expected a tensor"),
    (None, {}, "it is a NoneType"),
])
def test_unreadable_batches_say_what_was_found(batch, keys, words):
    with pytest.raises(ConfigurationError) as caught:
        split_batch(batch, nn.Linear(3, 2), **keys)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    if isinstance(batch, dict) and not keys:
        assert "input_key" in str(caught.value) and "label_key" in str(caught.value)


@pytest.mark.parametrize("input_key, label_key", [(5, None), ("", None), ([], None), (["a", "a"], None),
                                                  (None, ["b"]), ("a", "a"), (["a", "b"], "b")])
def test_bad_keys_are_refused(input_key, label_key):
    with pytest.raises(ConfigurationError, match="input_key|label_key"):
        check_keys(input_key, label_key)


def test_physical_split_matches_tensor_split_and_cuts_every_field():
    batch = ModelBatch((X,), {"mask": X}, Y)
    for parts in (1, 2, 3, 4):
        pieces = batch.split(parts)
        assert [len(p) for p in pieces] == [len(t) for t in torch.tensor_split(X, parts)]
        assert torch.equal(torch.cat([p.kwargs["mask"] for p in pieces]), X)
        assert torch.equal(torch.cat([p.label for p in pieces]), Y)


def test_the_reader_uses_the_loaders_collate_fn_and_an_empty_batch_keeps_the_padded_shape():
    from torch.utils.data import DataLoader

    from tests.opacus_setup.batch_setups import Names, padded_collate

    reader = BatchReader(DataLoader(Names(), batch_size=4, collate_fn=padded_collate), nn.Linear(3, 2))
    lengths = [len(reader.dataset[i][0]) for i in range(5)]
    batch = reader.batch(range(5))
    assert batch.args[0].shape == (5, max(lengths)) and batch.label.shape == (5,)
    assert reader.batch([]).args[0].shape == (0, len(reader.dataset[0][0]))


def test_a_failing_collate_fn_is_said_as_such():
    from torch.utils.data import DataLoader, TensorDataset

    def broken(rows):
        raise ValueError("no padding here")

    reader = BatchReader(DataLoader(TensorDataset(X, Y), batch_size=2, collate_fn=broken))
    with pytest.raises(ConfigurationError, match=r"its collate_fn \(broken\) failed on 2 records.*no padding here"):
        reader.batch([0, 1])


# ----- opacus-check on the set-ups ----------------------------------------------------------------------------------
def _same(a: dict, b: dict) -> None:
    """Two checks agree on everything but how the batches were read."""
    a_noise, b_noise = dict(a["noise"]), dict(b["noise"])
    a_noise.pop("batch_form"), b_noise.pop("batch_form")
    assert a_noise == b_noise
    assert a["findings"] == b["findings"] and a["rows"] == b["rows"] and a["sampler"] == b["sampler"]
    assert a["verdict"] == b["verdict"] and a["unit"] == b["unit"]


@pytest.fixture(scope="module")
def tuples():
    return check_opacus_setup(f"{SETUPS}:tuples")


@pytest.mark.parametrize("name, form", [
    ("dicts", "a dict: input 'img' (a usual input name), label 'label'"),
    ("dicts_named_by_forward", "a dict: input 'pixels' (named like a parameter of the model's forward), label "
                               "'labels'"),
    ("explicit_keys", "a dict: input 'a' (named), label 'b'"),
])
def test_dict_batches_give_the_findings_of_the_same_records_as_tuples(tuples, name, form):
    out = check_opacus_setup(f"{SETUPS}:{name}")
    assert tuples["verdict"] == "PASS" and tuples["noise"]["batch_form"].startswith("a list: element 0 the input")
    assert out["noise"]["batch_form"] == form
    _same(out, tuples)


def test_variable_length_sequences_are_padded_by_the_loaders_collate_fn():
    """Stacking the records (what opacus-check did before) fails on sequences of 2 to 9 tokens; the loader's own
    collate_fn pads them. As tuples and as dicts of the user's collate_fn: the same check."""
    out = check_opacus_setup(f"{SETUPS}:padded_sequences")
    assert out["verdict"] == "PASS" and not out["noise"]["noise_flagged"]
    assert out["noise"]["effective_noise_multiplier"] == pytest.approx(1.0, rel=0.15)
    _same(check_opacus_setup(f"{SETUPS}:padded_dicts"), out)


@pytest.mark.parametrize("name, words", [
    ("unknown_keys", "data_loader: cannot read the model's input from a batch: it is a dict with keys 'a', 'b'"),
    ("wrong_input_key", "input_key: input_key 'image' is not a key of the batches"),
    ("object_batches", "data_loader: cannot read the model's input from a batch: it is a Box"),
])
def test_unreadable_setups_are_one_line_exit_2(capsys, name, words):
    from reports.cli import main

    assert main(["opacus-check", "--setup", f"{SETUPS}:{name}"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
