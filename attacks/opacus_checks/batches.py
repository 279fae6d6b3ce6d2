"""Read a user's batches as the training loop sees them: the model's input(s) and the label.

A batch is built from dataset records by the data loader's own ``collate_fn`` (padding of variable-length
sequences and the like included; opacus's empty-batch wrapper is looked through), then split:

- a tensor: the model's input, no label;
- a tuple or list: the first element is the input, the second (if any) the label;
- a dict (Hugging Face / flwr-datasets rows collated by ``default_collate``): the label is ``label_key`` if
  given, else the first of ``LABEL_NAMES`` present; the input(s) are ``input_key`` (a key or a list of keys)
  if given, else the keys named like parameters of the model's ``forward``, else the first of
  ``INPUT_NAMES`` present. A key named like a ``forward`` parameter is passed by keyword (the leading ones
  positionally), any other positionally. Keys that are neither are ignored (ids, raw text).

A batch that cannot be read so is a ``ConfigurationError`` naming what was found (type, keys) and how to
name the keys (``input_key``/``label_key`` in the set-up dict, or in the dp-sgd target's parameters).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field

from accounting.errors import ConfigurationError

MESSAGE_LIMIT = 200  # characters of an error raised by the user's code, in the one-line message


def one_line(text) -> str:
    """``text`` on one line, cut to ``MESSAGE_LIMIT`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."

INPUT_NAMES = ("img", "image", "x", "input", "inputs", "input_ids", "pixel_values", "features")
LABEL_NAMES = ("label", "labels", "y", "target", "targets")
HOW_TO_NAME = ("name them with input_key (a key or a list of keys) and label_key, in the set-up dict or the "
               "dp-sgd target's parameters")


def _is_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


@dataclass(frozen=True)
class ModelBatch:
    """One batch split for the model: ``model(*args, **kwargs)``; ``label`` (None if none); ``form``: how it was
    read, in words."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    label: object = None
    form: str = ""

    def call(self, model):
        return model(*self.args, **self.kwargs)

    def _values(self):
        return [*self.args, *self.kwargs.values()]

    def __len__(self) -> int:
        """Records in the batch: the leading size of its first input tensor (of the label if no input is one)."""
        for value in [*self._values(), self.label]:
            if _is_tensor(value) and value.dim() > 0:
                return int(value.shape[0])
        for value in self._values():
            if isinstance(value, (list, tuple)):
                return len(value)
        return 0

    def _map(self, function) -> ModelBatch:
        return ModelBatch(tuple(function(v) for v in self.args), {k: function(v) for k, v in self.kwargs.items()},
                          function(self.label) if self.label is not None else None, self.form)

    def to(self, device) -> ModelBatch:
        return self._map(lambda v: v.to(device) if _is_tensor(v) else v)

    def rows(self, start: int, stop: int) -> ModelBatch:
        """Records ``start:stop`` (tensors and lists of the batch's length are sliced on their first axis)."""
        n = len(self)

        def cut(value):
            if _is_tensor(value) and value.dim() > 0 and value.shape[0] == n:
                return value[start:stop]
            if isinstance(value, (list, tuple)) and len(value) == n:
                return type(value)(value[start:stop])
            return value

        return self._map(cut)

    def split(self, parts: int) -> list[ModelBatch]:
        """``parts`` consecutive pieces of sizes as ``torch.tensor_split`` (``numpy.array_split``) makes them."""
        n = len(self)
        parts = max(1, min(int(parts), max(n, 1)))
        base, extra = divmod(n, parts)
        bounds, start = [], 0
        for i in range(parts):
            stop = start + base + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
        return [self.rows(a, b) for a, b in bounds]


def _describe(batch) -> str:
    if isinstance(batch, Mapping):
        return f"a {type(batch).__name__} with keys {', '.join(repr(k) for k in batch) or '(none)'}"
    if isinstance(batch, (list, tuple)):
        return f"a {type(batch).__name__} of {len(batch)} element{'s' if len(batch) != 1 else ''}"
    return f"a {type(batch).__name__}"


def _unreadable(batch, why: str) -> ConfigurationError:
    return ConfigurationError("data_loader", f"cannot read the model's input from a batch: it is {_describe(batch)}"
                              f"; {why}")


def forward_parameters(model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names of the model's ``forward`` parameters, those of them that can be passed positionally, in order),
    looking through opacus's ``GradSampleModule`` (``_module``); empty where there is no signature."""
    inner = model
    for _ in range(8):  # GradSampleModule, DPDDP and the like hold the user's model
        nested = getattr(inner, "_module", None)
        if nested is None:
            break
        inner = nested
    target = getattr(inner, "forward", inner)
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return (), ()
    named = [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
    positional = [p.name for p in named if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return tuple(p.name for p in named), tuple(positional)


def check_keys(input_key, label_key) -> tuple[object, str | None]:
    """The user's ``input_key`` (None, a key, or a non-empty list of distinct keys: a tuple) and ``label_key``
    (None or a key), checked (ConfigurationError naming the setting)."""
    if input_key is not None:
        keys = [input_key] if isinstance(input_key, str) else input_key
        if (not isinstance(keys, (list, tuple)) or not keys or not all(isinstance(k, str) and k for k in keys)
                or len(set(keys)) != len(keys)):
            raise ConfigurationError("input_key", f"input_key must be a key (a non-empty string) or a list of "
                                     f"distinct keys, got {input_key!r}")
        input_key = input_key if isinstance(input_key, str) else tuple(keys)
    if label_key is not None and not (isinstance(label_key, str) and label_key):
        raise ConfigurationError("label_key", f"label_key must be a key (a non-empty string), got {label_key!r}")
    if label_key is not None and input_key is not None and label_key in ([input_key] if isinstance(
            input_key, str) else input_key):
        raise ConfigurationError("label_key", f"label_key {label_key!r} is also the input_key")
    return input_key, label_key


def split_batch(batch, model=None, input_key=None, label_key=None) -> ModelBatch:
    """The model's input(s) and the label of ``batch`` (see the module docstring)."""
    if isinstance(batch, Mapping):
        return _from_mapping(batch, model, input_key, label_key)
    if input_key is not None or label_key is not None:
        setting = "input_key" if input_key is not None else "label_key"
        raise ConfigurationError(setting, f"{setting} names a key of dict batches, but a batch is "
                                 f"{_describe(batch)} (leave it out: the first element is the input, the second "
                                 "the label)")
    if _is_tensor(batch):
        return ModelBatch((batch,), {}, None, "a tensor: the input, no label")
    if isinstance(batch, (list, tuple)):
        if not batch:
            raise _unreadable(batch, "it holds no input (make the loader's collate_fn return (input, label))")
        label = batch[1] if len(batch) > 1 else None
        return ModelBatch((batch[0],), {}, label, f"a {type(batch).__name__}: element 0 the input"
                          + (", element 1 the label" if len(batch) > 1 else ", no label"))
    raise _unreadable(batch, "expected a tensor, an (input, label) tuple or list, or a dict of them (make the "
                      "loader's collate_fn return one of these)")


def _from_mapping(batch: Mapping, model, input_key, label_key) -> ModelBatch:
    keys = list(batch)
    chosen = None if input_key is None else ([input_key] if isinstance(input_key, str) else list(input_key))
    for setting, names in (("input_key", chosen or []), ("label_key", [label_key] if label_key else [])):
        missing = [k for k in names if k not in batch]
        if missing:
            raise ConfigurationError(setting, f"{setting} {missing[0]!r} is not a key of the batches (a batch is "
                                     f"{_describe(batch)})")
    if label_key is None:
        label_key = next((k for k in LABEL_NAMES if k in batch and k not in (chosen or [])), None)
    forward, positional = forward_parameters(model) if model is not None else ((), ())
    how = "named"
    if chosen is None:
        chosen = [k for k in keys if k in forward and k != label_key]
        how = "named like a parameter of the model's forward"
        if not chosen:
            chosen = [k for k in INPUT_NAMES if k in batch and k != label_key][:1]
            how = "a usual input name"
    if not chosen:
        known = ", ".join(INPUT_NAMES)
        parameters = f" ({', '.join(forward)})" if forward else ""
        raise _unreadable(batch, f"no key names the input: none is a parameter of the model's forward{parameters} "
                          f"or one of {known}; {HOW_TO_NAME}")
    keyword = [k for k in chosen if k in forward]
    args = [k for k in chosen if k not in forward]
    if not args:  # the leading forward parameters go positionally (hooks on a bare layer see positional input)
        for name in positional:
            if name not in keyword:
                break
            args.append(name)
            keyword.remove(name)
    form = (f"a dict: input {', '.join(repr(k) for k in chosen)} ({how}), "
            + (f"label {label_key!r}" if label_key is not None else "no label"))
    return ModelBatch(tuple(batch[k] for k in args), {k: batch[k] for k in keyword},
                      batch[label_key] if label_key is not None else None, form)


def loader_collate(data_loader):
    """The function the data loader builds its batches with: its ``collate_fn`` (inside opacus's empty-batch
    wrapper, the user's own), else torch's ``default_collate``."""
    from torch.utils.data import default_collate

    collate = getattr(data_loader, "collate_fn", None)
    if hasattr(collate, "wrapped_collator_fn"):  # opacus's CollateFnWithEmpty: stateful, so look through it
        collate = collate.wrapped_collator_fn
    return collate or default_collate


class BatchReader:
    """Batches of chosen records of a loader's dataset, built by its ``collate_fn`` and split for ``model``.

    ``data``: a ``DataLoader`` (its dataset and collate function) or a dataset (``default_collate``)."""

    def __init__(self, data, model=None, input_key=None, label_key=None):
        from torch.utils.data import DataLoader, default_collate

        if isinstance(data, DataLoader):
            self.dataset, self.collate_fn = data.dataset, loader_collate(data)
        else:
            self.dataset, self.collate_fn = data, default_collate
        self.model = model
        self.input_key, self.label_key = check_keys(input_key, label_key)

    def raw(self, indices) -> object:
        """The batch of records ``indices`` as the loader would yield it."""
        try:
            items = [self.dataset[int(i)] for i in indices]
        except Exception as exc:  # noqa: BLE001 - the user's dataset
            raise ConfigurationError("data_loader", f"reading a record of the dataset failed: {type(exc).__name__}: "
                                     f"{one_line(exc)}") from None
        try:
            return self.collate_fn(items)
        except Exception as exc:  # noqa: BLE001 - the user's collate function
            name = getattr(self.collate_fn, "__name__", type(self.collate_fn).__name__)
            raise ConfigurationError("data_loader", f"its collate_fn ({name}) failed on {len(items)} records of "
                                     f"the dataset: {type(exc).__name__}: {one_line(exc)}") from None

    def batch(self, indices) -> ModelBatch:
        """Records ``indices`` as a ``ModelBatch`` (none: record 0's batch cut to no rows)."""
        indices = list(indices)
        if not indices:
            return self.batch([0]).rows(0, 0)
        return split_batch(self.raw(indices), self.model, self.input_key, self.label_key)
