"""Run a user's own DP-SGD training as written (``train = "path/file.py:function"``), observed where it calls opacus.

The function is the user's training: their loop, their loader and ``collate_fn``, their optimizers, their epochs.
It takes no arguments (an argparse ``main`` is run with ``argv`` as ``sys.argv[1:]``); what it returns is ignored.
While it runs, ``dpfed.dpsgd.observe.observing_opacus`` records every engine made, every private step, the noise
actually added, each epsilon asked for and every other optimizer's updates. Naming the file is the opt-in to
running its code. Every failure is one line: a function that needs arguments is refused before it runs, an
argparse exit names the arguments, any other error of the user's code is cut to one line.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from dataclasses import dataclass

from accounting.errors import ConfigurationError


@dataclass
class ObservedTraining:
    """One run of the user's training: ``log`` (``dpfed.dpsgd.observe.OpacusLog``), ``record`` (its JSON-ready
    form) and the wall time."""

    spec: str
    argv: tuple
    log: object
    record: dict
    seconds: float

    @property
    def datasets(self) -> list:
        return [loader.dataset for loader in self.log.loaders if getattr(loader, "dataset", None) is not None]


@contextlib.contextmanager
def _arguments(spec: str, argv):
    saved = sys.argv
    sys.argv = [spec.rpartition(":")[0] or spec, *argv]
    try:
        yield
    finally:
        sys.argv = saved


def run_user_training(spec: str, argv=(), field: str = "train") -> ObservedTraining:
    """Import ``spec``'s file, call its function with ``argv`` as the command line, and return what opacus ran."""
    from attacks.opacus_checks.batches import one_line
    from attacks.opacus_checks.load import _require_no_arguments, load_function
    from dpfed.dpsgd.observe import observing_opacus

    argv = tuple(str(a) for a in argv)
    try:
        function = load_function(spec)
        _require_no_arguments(function, spec)
    except ConfigurationError as exc:
        raise ConfigurationError(field, str(exc).split(": ", 1)[-1]) from None
    started = time.perf_counter()
    with observing_opacus() as log, _arguments(spec, argv), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            function()
        except SystemExit as exc:  # argparse, or the script's own exit
            if exc.code not in (0, None):
                raise ConfigurationError(field, f"{spec} exited with {exc.code!r} on the arguments "
                                                f"{list(argv)} (check argv)") from None
        except ConfigurationError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's training, reported in one line
            raise ConfigurationError(field, f"{spec} raised {type(exc).__name__}: {one_line(exc)}") from None
    return ObservedTraining(spec, argv, log, log.to_dict(), time.perf_counter() - started)
