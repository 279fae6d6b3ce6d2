"""Where the data of each non-private optimizer step came from: private records, other data, or not established.

While a training runs inside ``dpfed.dpsgd.observe.observing_opacus``, a ``torch`` function mode follows data
through every torch operation of the user's forward code: each tensor carries the set of its *sources*, and an
operation's outputs carry the union of its inputs' sources. A source is

- a batch of a data set: every tensor a ``DataLoader`` yields is marked with the loader's data set (whichever the
  loader, before or after ``make_private``);
- a tensor that entered an operation with no sources: made by a factory (``torch.randn``, ``torch.full``: generated
  values; ``torch.tensor``/``from_numpy`` of an array: its data), or made before the block; each is known by the
  memory it occupies (a tensor viewing the private data set's tensors, e.g. ``X[i:j]``, is private).

Parameters (tensors that require gradients) are never sources: the private mechanism's output (its noised
parameters) is post-processed freely. At each ``backward`` the sources of the loss are attributed to the gradient
of every parameter it reaches (cleared by ``zero_grad``); at each step of an optimizer that is not private at that
moment (a second optimizer, or the one later made private, before ``make_private``), the sources of each updated
parameter's gradient are kept. The private data sets are those of the data loaders given to ``make_private``; a
plain step after it is judged when it runs (against the private data sets known then), one before it when the
training is over (its raw sources kept alive until then, up to ``PIN_BYTES``). Each plain step is

- ``private``: a source is the private data set (the same object, a ``Subset``/``ConcatDataset`` sharing it, or a
  data set or tensor sharing memory with its tensors or arrays);
- ``other``: every source is another data set, generated values or another tensor: post-processing;
- ``not established``: a source was data built from Python values, or a tensor freed before the end whose memory
  overlaps the private data set's (memory reused or a view: it cannot be told).

Not seen (documented limits): values taken out of torch and back (``.item()``, ``.tolist()``, numpy copies made
with ``.numpy()``), copies of private records made before the block or outside torch, ``torch.autograd.grad``
(it fills no ``.grad``) and a gradient written to ``.grad`` by hand from data the mode did not see.
"""

from __future__ import annotations

import weakref

ATTR = "_dpaudit_sources"
PIN_BYTES = 1 << 28  # raw sources of plain steps are kept alive (to compare memory at the end) up to this many bytes
DATA_FACTORIES = {"tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "new_tensor"}
LIKE_FACTORIES = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                  "new_zeros", "new_ones", "new_full", "new_empty"}
PRIVATE, OTHER, UNKNOWN = "private", "other", "not established"


def _tensors(obj, depth: int = 0):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item, depth + 1)


def _is_parameter(t) -> bool:
    import torch

    return isinstance(t, torch.nn.Parameter) or (t.is_leaf and t.requires_grad)


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


def _overlaps(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


class Source:
    """One raw source: its kind (``generated``, ``data``, ``python data``, ``earlier``), what made it, its memory."""

    __slots__ = ("kind", "made_by", "range", "ref", "origin", "origin_ref", "pinned", "__weakref__")

    def __init__(self, kind, made_by, tensor, origin=None):
        self.kind, self.made_by, self.range = kind, made_by, tensor_range(tensor)
        self.ref = _weak(tensor)
        self.origin = array_range(origin) if origin is not None else None
        self.origin_ref = _weak(origin) if origin is not None else None
        self.pinned = None

    def alive(self) -> bool:
        return self.pinned is not None or (self.ref is not None and self.ref() is not None)

    def describe(self) -> str:
        what = {"generated": f"values generated by torch.{self.made_by}", "data": f"data given to torch.{self.made_by}",
                "python data": f"Python values given to torch.{self.made_by}",
                "earlier": "a tensor made before the training or outside torch",
                "unseen": "a tensor computed where the observer could not follow"}[self.kind]
        return what


class DatasetSource:
    """A data set whose loader yielded a batch (kept alive, to be compared with the private ones at the end)."""

    __slots__ = ("dataset",)

    def __init__(self, dataset):
        self.dataset = dataset


def _weak(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


class DataProvenance:
    """The function mode, loader and autograd patches of one observed block, and the plain steps they saw."""

    def __init__(self):
        self.datasets: dict = {}  # id(dataset) -> its DatasetSource (the data set kept alive)
        self.private_datasets: list = []
        self.grads: dict = {}  # id(parameter) -> [weakref(grad), frozenset of source indices]
        self.plain_steps: list = []  # steps before make_private, judged at the end: optimizer, params, sources
        self.judged: dict = {}  # steps judged when they ran (after make_private), aggregated with their count
        self.memory: list = []  # byte ranges of the private data sets known so far
        self.pinned_bytes = 0
        self.private_made = False
        self.mode = None
        self.originals = {}
        self.paused = 0  # inside an optimizer's step: its updates are not followed
        self.hooks = []
        self.thread = None  # the thread whose work is followed (the observing block's); others pass through

    def following(self) -> bool:
        """Whether the current thread's work is followed (the class patches are process-wide)."""
        import threading

        return self.thread == threading.get_ident()

    def enter_mode(self) -> None:
        """Start following this thread's torch calls (a torch function mode is per thread: entered and left in the
        observing block's own thread)."""
        import threading

        self.thread = threading.get_ident()
        self.mode.__enter__()

    def exit_mode(self) -> None:
        self.mode.__exit__(None, None, None)
        self.thread = None

    # --- install / uninstall -----------------------------------------------------------------------------------
    def install(self) -> None:
        """Patch what carries data to a plain step: the DataLoader's batches, ``zero_grad``, custom autograd
        Functions; the torch function mode is made here and entered by ``enter_mode``."""
        from torch.overrides import TorchFunctionMode

        provenance = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return provenance.call(func, args, kwargs or {})

        self._patch_loader()
        self._patch_zero_grad()
        self._add_step_hooks()
        self._patch_apply()
        self.mode = _Mode()  # entered by ``enter_mode`` in the observing block's thread

    def _patch_loader(self) -> None:
        """Each batch a DataLoader yields is marked with its data set."""
        from torch.utils.data import dataloader

        provenance, following_next = self, dataloader._BaseDataLoaderIter.__next__
        self.originals["next"] = following_next

        def marked_next(iterator):
            batch = following_next(iterator)
            if provenance.following():
                provenance.mark_batch(batch, getattr(iterator, "_dataset", None))
            return batch

        dataloader._BaseDataLoaderIter.__next__ = marked_next

    def _patch_zero_grad(self) -> None:
        """``zero_grad`` (an optimizer's or a module's) clears its parameters' gradient marks."""
        import torch

        provenance = self
        optimizer_zero_grad = self.originals["optimizer_zero_grad"] = torch.optim.Optimizer.zero_grad
        module_zero_grad = self.originals["module_zero_grad"] = torch.nn.Module.zero_grad

        def optimizer_zeroed(optimizer, *a, **k):
            if provenance.following():
                provenance.forget(p for group in optimizer.param_groups for p in group["params"])
            return optimizer_zero_grad(optimizer, *a, **k)

        def module_zeroed(module, *a, **k):
            if provenance.following():
                provenance.forget(module.parameters())
            return module_zero_grad(module, *a, **k)

        torch.optim.Optimizer.zero_grad = optimizer_zeroed
        torch.nn.Module.zero_grad = module_zeroed

    def _add_step_hooks(self) -> None:
        """Inside an optimizer's own step, its updates are not followed."""
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        provenance = self

        def pause(*_):
            if provenance.following():
                provenance.paused += 1

        def resume(*_):
            if provenance.following():
                provenance.paused = max(0, provenance.paused - 1)

        self.hooks = [register_optimizer_step_pre_hook(pause), register_optimizer_step_post_hook(resume)]

    def _patch_apply(self) -> None:
        """A custom autograd Function's outputs carry its inputs' marks (the mode does not see inside it)."""
        import torch

        provenance, function = self, torch.autograd.function.Function
        self.originals["apply"] = function.__dict__["apply"]
        apply = self.originals["apply"].__func__

        def applied(cls, *args, **kwargs):
            out = apply(cls, *args, **kwargs)
            if not provenance.paused and provenance.following():
                try:
                    provenance._follow("apply", args, kwargs, out)
                except Exception:  # noqa: BLE001
                    pass
            return out

        function.apply = classmethod(applied)

    def uninstall(self) -> None:
        """Restore what ``install`` patched (as far as it got)."""
        import torch
        from torch.utils.data import dataloader

        self.mode = None
        for hook in self.hooks:
            hook.remove()
        self.hooks = []
        owners = {"next": (dataloader._BaseDataLoaderIter, "__next__"),
                  "optimizer_zero_grad": (torch.optim.Optimizer, "zero_grad"),
                  "module_zero_grad": (torch.nn.Module, "zero_grad"),
                  "apply": (torch.autograd.function.Function, "apply")}
        for key, original in self.originals.items():
            owner, name = owners[key]
            setattr(owner, name, original)
        self.originals = {}

    # --- following data ----------------------------------------------------------------------------------------
    def _labels(self, t):
        labels = getattr(t, ATTR, None)
        if labels is not None or _is_parameter(t):
            return labels or frozenset()
        base = getattr(t, "_base", None)
        if base is not None:  # a view made where the mode does not run (a custom autograd Function's output)
            labels = self._labels(base)
        else:
            labels = frozenset((self._add(Source("earlier" if t.grad_fn is None else "unseen", None, t)),))
        _set(t, labels)
        return labels

    @staticmethod
    def _add(source):
        return source  # held only by the tensors that carry it (and the plain steps that read it)

    def call(self, func, args, kwargs):
        import torch

        if self.paused:
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if func is torch.Tensor.backward or func is torch.autograd.backward:
            return self.backward(func, args, kwargs)
        out = func(*args, **kwargs)
        if name == "__get__" and getattr(getattr(func, "__self__", None), "__name__", "") != "data":
            return out  # .grad, .shape and the like: not an operation on the data
        try:
            self._follow(name, args, kwargs, out)
        except Exception:  # noqa: BLE001 - following data never breaks the user's training
            pass
        return out

    def _follow(self, name, args, kwargs, out) -> None:
        outputs = [t for t in _tensors(out) if not _is_parameter(t)]
        inputs = list(_tensors(args)) + list(_tensors(kwargs))
        if name in LIKE_FACTORIES or not inputs:
            if not outputs:
                return
            if name in DATA_FACTORIES:
                origin = args[0] if args else kwargs.get("data")
                import numpy as np

                kind = "data" if isinstance(origin, np.ndarray) else ("generated" if _scalar(origin) else "python data")
                labels = frozenset((self._add(Source(kind, name, outputs[0],
                                                     origin if isinstance(origin, np.ndarray) else None)),))
            else:
                labels = frozenset((self._add(Source("generated", name, outputs[0])),))
        else:
            labels = frozenset().union(*(self._labels(t) for t in inputs))
            if name.endswith("_") or name in ("__setitem__",) or name.startswith("__i"):
                target = inputs[0]
                if not _is_parameter(target):
                    _set(target, labels)
        for t in outputs:
            _set(t, labels)

    def mark_batch(self, batch, dataset) -> None:
        """Every tensor of a loader's batch comes from its data set (whatever made its values)."""
        if dataset is None:
            return
        key = self.datasets.get(id(dataset))
        if key is None or key.dataset is not dataset:
            key = self.datasets[id(dataset)] = DatasetSource(dataset)
        for t in _tensors(batch):
            _set(t, frozenset((key,)))

    def backward(self, func, args, kwargs):
        """The loss's sources attributed to the gradient of every parameter its graph reaches."""
        try:
            roots = list(_tensors(args[:1])) + list(_tensors(kwargs.get("tensors", ())))
            given = [*_tensors(args[1:2]), *_tensors(kwargs.get("gradient"))]
            labels = frozenset().union(*(self._labels(t) for t in roots + given))
            leaves = _leaves(roots)
        except Exception:  # noqa: BLE001 - following data never breaks the user's training
            labels, leaves = None, []
        out = func(*args, **kwargs)
        try:
            self._attribute(leaves, labels)
        except Exception:  # noqa: BLE001
            pass
        return out

    def _attribute(self, leaves, labels) -> None:
        for p in leaves:
            try:
                grad = p.grad
            except Exception:  # noqa: BLE001 - a tensor subclass (opacus's ExpandedWeight) that hides its .grad
                continue
            if grad is None:
                continue
            entry = self.grads.get(id(p))
            if entry is not None and entry[0]() is grad and entry[1] is not None:
                entry[1] = None if labels is None else entry[1] | labels
            else:
                self.grads[id(p)] = [weakref.ref(grad), labels]

    def forget(self, parameters) -> None:
        for p in parameters:
            self.grads.pop(id(p), None)

    # --- plain steps -------------------------------------------------------------------------------------------
    def plain_step(self, optimizer, params: dict) -> None:
        """An optimizer step outside the private mechanism: ``params`` (id -> tensor) updated, and their sources.
        After ``make_private`` it is judged at once (against the private data sets known then, every source still
        alive); before it, kept (its raw sources pinned, up to ``PIN_BYTES``) and judged at the end."""
        labels, seen = set(), True
        for pid, p in params.items():
            entry = self.grads.get(pid)
            if entry is not None and entry[0]() is p.grad and entry[1] is not None:
                labels |= entry[1]
            elif getattr(p.grad, ATTR, None) is not None:  # a gradient written by the user's own torch code
                labels |= getattr(p.grad, ATTR)
            else:
                seen = False
        step = {"optimizer": id(optimizer), "class": type(optimizer).__name__, "before_private": not self.private_made,
                "params": dict(params), "sources": frozenset(labels), "seen": seen}
        if self.private_datasets:
            self._aggregate(self.judged, self._judge_one(step, self.memory))
            return
        for source in labels:
            if isinstance(source, Source) and source.pinned is None and source.ref is not None:
                t = source.ref()
                size = 0 if t is None or source.range is None else source.range[1] - source.range[0]
                if t is not None and self.pinned_bytes + size <= PIN_BYTES:
                    source.pinned, self.pinned_bytes = t, self.pinned_bytes + size
        self.plain_steps.append(step)

    def made_private(self, data_loader) -> None:
        self.private_made = True
        dataset = getattr(data_loader, "dataset", None)
        if dataset is not None and all(d is not dataset for d in self.private_datasets):
            self.private_datasets.append(dataset)
            self.memory = private_memory(self.private_datasets)

    # --- judging -----------------------------------------------------------------------------------------------
    def judge(self) -> list[dict]:
        """The plain steps by optimizer, phase, data (``private``, ``other`` or ``not established``) and sources
        described, each with its ``count`` of steps."""
        memory = private_memory(self.private_datasets)
        out = {key: dict(value) for key, value in self.judged.items()}
        for step in self.plain_steps:
            self._aggregate(out, self._judge_one(step, memory))
        return list(out.values())

    @staticmethod
    def _aggregate(into: dict, step: dict) -> None:
        key = (step["optimizer"], step["before_private"], step["data"], tuple(step["words"]), tuple(step["params"]))
        entry = into.setdefault(key, {**step, "count": 0})
        entry["count"] += 1

    def _judge_one(self, step: dict, memory) -> dict:
        kinds, words = set(), set()
        for source in step["sources"]:
            kind, word = self._classify(source, memory)
            kinds.add(kind)
            words.add(word)
        if not step["seen"]:
            kinds.add(UNKNOWN)
            words.add("a gradient the observer did not see computed")
        data = PRIVATE if PRIVATE in kinds else (UNKNOWN if UNKNOWN in kinds else OTHER)
        if not words:
            words.add("no data (the parameters alone)")
        return {"optimizer": step["optimizer"], "class": step["class"], "before_private": step["before_private"],
                "params": step["params"], "data": data, "words": sorted(words)}

    def _classify(self, source, memory) -> tuple[str, str]:
        if isinstance(source, DatasetSource):
            dataset = source.dataset
            name = f"{type(dataset).__name__} of {_length(dataset)} records"
            if same_data(dataset, self.private_datasets, memory):
                return PRIVATE, f"batches of the private data set ({name})"
            return OTHER, f"batches of another data set ({name})"
        hit = _overlaps_any(source.range, memory) or _overlaps_any(source.origin, memory)
        origin_alive = source.origin_ref is not None and source.origin_ref() is not None
        if hit and (source.alive() or (source.origin is not None and origin_alive)):
            return PRIVATE, f"the private data set's tensors ({source.describe()})"
        if hit:
            return UNKNOWN, f"{source.describe()}, freed before the end, in memory the private data set now holds"
        if source.kind in ("python data", "unseen"):
            return UNKNOWN, source.describe()
        return OTHER, source.describe()


def _overlaps_any(r, ranges) -> bool:
    return r is not None and any(_overlaps(r, m) for m in ranges)


def private_memory(datasets) -> list:
    """Byte ranges of everything the private data sets hold (tensors, arrays, and the arrays tensors were copied
    from, as far as the mode saw them made); a ``Subset``'s only at its rows."""
    out = []
    for dataset in datasets:
        out += data_ranges(dataset)
    return _merged(out)


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
    length = _length(dataset)
    for value in _held(dataset):
        whole = tensor_range(value) if isinstance(value, torch.Tensor) else array_range(value)
        if rows is not None and whole is not None and value.ndim >= 1 and str(value.shape[0]) == length:
            step = (value.stride(0) * value.element_size() if isinstance(value, torch.Tensor) else value.strides[0])
            width = (whole[1] - whole[0]) // max(1, value.shape[0]) if step > 0 else 0
            if step > 0 and width > 0:
                out += [(whole[0] + r * step, whole[0] + r * step + width) for r in rows]
                continue
        out.append(whole)
        for source in (getattr(value, ATTR, None) or ()) if isinstance(value, torch.Tensor) else ():
            if isinstance(source, Source) and source.origin is not None:
                out.append(source.origin)
    return [r for r in out if r is not None]


def _merged(ranges) -> list:
    out = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _held(obj):
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
    return any(_overlaps_any(r, memory) for r in data_ranges(dataset))


def _length(dataset) -> str:
    try:
        return str(len(dataset))
    except Exception:  # noqa: BLE001
        return "?"


def _scalar(value) -> bool:
    return isinstance(value, (int, float, bool, complex))


def _set(t, labels) -> None:
    try:
        setattr(t, ATTR, labels)
    except Exception:  # noqa: BLE001 - a tensor that takes no attributes (functorch wrappers): not followed
        pass


def _leaves(roots) -> list:
    """The leaf tensors (parameters) whose ``.grad`` a backward from ``roots`` fills."""
    out, seen = [], set()
    stack = [t.grad_fn for t in roots if getattr(t, "grad_fn", None) is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            out.append(variable)
        stack.extend(n for n, _ in node.next_functions)
    return out
