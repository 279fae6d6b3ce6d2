"""A trial axis for the algorithms: K independent runs drawn from K independent random streams at once.

``TrialStreams`` holds one ``numpy.random.Generator`` per trial and is itself a ``Generator`` whose
draws split on the leading axis: ``streams.random((K, a, b))`` returns ``stack([g.random((a, b)) for g
in generators])``. Code written for one run (draw ``shape``, compute) therefore runs K runs in one
vectorised computation by drawing ``(K,) + shape``, and trial k sees exactly the numbers a
one-at-a-time run seeded with generator k would see. Only the draws the algorithms use are supported
(``random``, ``standard_normal``, ``normal``, ``uniform``, ``binomial``); every other ``Generator``
method raises, so no draw can silently come from a shared stream.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import as_generator


def _per_trial(method_name: str):
    def draw(self, *args, size=None, **kwargs):
        args, size = _split_size(method_name, args, size)
        shape = _trial_shape(self, size)
        if method_name in _FILLS_OUT and len(shape) > 1 and not args and not kwargs:
            out = np.empty(shape)
            for g, row in zip(self.generators, out, strict=True):
                getattr(g, method_name)(out=row)
            return out
        return np.stack([getattr(g, method_name)(*args, size=shape[1:], **kwargs) for g in self.generators])

    draw.__name__ = method_name
    draw.__doc__ = f"Per-trial ``Generator.{method_name}``: ``size[0]`` must be the number of trials."
    return draw


_FILLS_OUT = ("random", "standard_normal")  # float64 draws that can fill a preallocated row in place
# positional index of ``size`` in each supported Generator method
_SIZE_POSITION = {"random": 0, "standard_normal": 0, "normal": 2, "uniform": 2, "binomial": 2}


def _split_size(method_name, args, size):
    position = _SIZE_POSITION[method_name]
    if len(args) > position:
        size, args = args[position], args[:position] + args[position + 1 :]
    return args, size


def _trial_shape(streams, size) -> tuple[int, ...]:
    shape = (size,) if np.ndim(size) == 0 and size is not None else tuple(size or ())
    if not shape or shape[0] != len(streams.generators):
        raise ValueError(
            f"a draw from {len(streams.generators)} trial streams needs size[0] = "
            f"{len(streams.generators)}, got size {size!r}"
        )
    return tuple(int(s) for s in shape)


class TrialStreams(np.random.Generator):
    """One random stream per trial, drawn together along a leading trial axis (see module docstring)."""

    def __init__(self, generators: Sequence[np.random.Generator]):
        super().__init__(np.random.PCG64(0))  # never drawn from: every supported draw is per trial
        self.generators = [as_generator(g) for g in generators]

    def __len__(self) -> int:
        return len(self.generators)

    def subset(self, trials) -> TrialStreams:
        """The streams of the trials selected by ``trials`` (indices or a boolean mask)."""
        index = np.arange(len(self.generators))[np.asarray(trials)]
        return TrialStreams([self.generators[k] for k in index])

    random = _per_trial("random")
    standard_normal = _per_trial("standard_normal")
    normal = _per_trial("normal")
    uniform = _per_trial("uniform")
    binomial = _per_trial("binomial")


def _unsupported(name: str):
    def refuse(self, *args, **kwargs):
        raise NotImplementedError(f"TrialStreams does not support Generator.{name}; draw per trial")

    refuse.__name__ = name
    return refuse


for _name in dir(np.random.Generator):
    if not _name.startswith("_") and _name not in _SIZE_POSITION and _name != "bit_generator":
        setattr(TrialStreams, _name, _unsupported(_name))


def split_streams(rngs: Sequence, count: int) -> list[TrialStreams]:
    """Spawn ``count`` independent streams from each trial's seed or generator, grouped by stream.

    ``split_streams([seed_0, ..., seed_{K-1}], 3)[s].generators[k]`` is
    ``as_generator(seed_k).spawn(3)[s]``: exactly the streams a one-at-a-time run seeded with
    ``seed_k`` spawns, so a batch reproduces the one-at-a-time runs.
    """
    if len(rngs) == 0:
        raise ConfigurationError("trials", "a batch needs at least one trial seed")
    spawned = [as_generator(r).spawn(int(count)) for r in rngs]
    return [TrialStreams([streams[s] for streams in spawned]) for s in range(int(count))]
