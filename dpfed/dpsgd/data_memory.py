"""The memory a data set's records occupy, to tell whether some data is (or shares records with) a private data set.

Used by ``dpfed.dpsgd.provenance``: a tensor is private when it lies in the bytes of the private data sets' held
tensors and arrays (a ``Subset``'s only at its rows, through ``Subset``, ``ConcatDataset`` and wrappers'
``.dataset``), or was copied (``torch.tensor``/``from_numpy``) from an array there, as far as the provenance's
function mode saw it made (each tensor it marks carries its sources in the attribute ``SOURCES``).
"""

from __future__ import annotations

SOURCES = "_dpaudit_sources"  # the attribute holding a tensor's sources (``dpfed.dpsgd.provenance``)


def tensor_range(t) -> tuple[int, int] | None:
    """The bytes a tensor (or view) spans: ``(first, past the last)``; None where it has no plain memory."""
    try:
        if t.numel() == 0:
            return None
        start = t.data_ptr()
        span = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=True)) + 1
        return (start, start + span * t.element_size()) if start else None
    except Exception:  # noqa: BLE001 - a functorch/meta/sparse tensor: no plain memory
        return None


def array_range(a) -> tuple[int, int] | None:
    import numpy as np

    try:
        low, high = np.byte_bounds(a)
        return (low, high) if high > low else None
    except Exception:  # noqa: BLE001
        return None


def overlaps(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def overlaps_any(r, ranges) -> bool:
    return r is not None and any(overlaps(r, m) for m in ranges)


def private_memory(datasets) -> list:
    """Byte ranges of everything the private data sets hold (tensors, arrays, and the arrays tensors were copied
    from, as far as the mode saw them made); a ``Subset``'s only at its rows."""
    out = []
    for dataset in datasets:
        out += data_ranges(dataset)
    return merged_ranges(out)


def data_ranges(dataset, rows=None, depth: int = 0) -> list:
    """The memory of a data set's records: its held tensors and arrays (at ``rows`` of their first dimension where a
    ``Subset`` names them), through ``Subset``, ``ConcatDataset`` and wrappers' ``.dataset``."""
    import torch
    from torch.utils.data import Subset

    if depth > 8:
        return []
    if isinstance(dataset, Subset):
        indices = [int(i) for i in dataset.indices]
        inner = indices if rows is None else [indices[int(r)] for r in rows]
        return data_ranges(dataset.dataset, inner, depth + 1)
    out = []
    for inner in (getattr(dataset, "datasets", None) or ()):
        out += data_ranges(inner, None, depth + 1)
    wrapped = getattr(dataset, "dataset", None)
    if wrapped is not None:
        out += data_ranges(wrapped, None, depth + 1)
    length = dataset_length(dataset)
    for value in held_arrays(dataset):
        whole = tensor_range(value) if isinstance(value, torch.Tensor) else array_range(value)
        if rows is not None and whole is not None and value.ndim >= 1 and str(value.shape[0]) == length:
            step = (value.stride(0) * value.element_size() if isinstance(value, torch.Tensor) else value.strides[0])
            width = (whole[1] - whole[0]) // max(1, value.shape[0]) if step > 0 else 0
            if step > 0 and width > 0:
                out += [(whole[0] + r * step, whole[0] + r * step + width) for r in rows]
                continue
        out.append(whole)
        for source in (getattr(value, SOURCES, None) or ()) if isinstance(value, torch.Tensor) else ():
            if getattr(source, "origin", None) is not None:  # a provenance Source copied from an array
                out.append(source.origin)
    return [r for r in out if r is not None]


def merged_ranges(ranges) -> list:
    out = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def held_arrays(obj):
    import numpy as np
    import torch

    for value in getattr(obj, "__dict__", {}).values():
        if isinstance(value, (torch.Tensor, np.ndarray)):
            yield value
        elif isinstance(value, (list, tuple)) and len(value) <= 16:
            yield from (v for v in value if isinstance(v, (torch.Tensor, np.ndarray)))


def same_data(dataset, private, memory) -> bool:
    """``dataset`` is (or shares records with) a private one: the same object, or holding records in the memory of
    the private ones' records (a view, a ``Subset`` with common rows, a ``ConcatDataset`` or wrapper of one)."""
    if any(dataset is d for d in private):
        return True
    return any(overlaps_any(r, memory) for r in data_ranges(dataset))


def dataset_length(dataset) -> str:
    try:
        return str(len(dataset))
    except Exception:  # noqa: BLE001
        return "?"
