"""Run a user's own DP-SGD training as written (``train = "path/file.py:function"``), observed where it calls opacus.

The function is the user's training: their loop, their loader and ``collate_fn``, their optimizers, their epochs.
It takes no arguments (an argparse ``main`` is run with ``argv`` as ``sys.argv[1:]``, and the file's folder first on
``sys.path``, as ``python file.py ARGV`` runs it); what it returns is ignored.
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

DEFAULT_FUNCTION = "main"  # ``--train file.py`` runs the file's main()


@dataclass
class ObservedTraining:
    """One run of the user's training: ``log`` (``dpfed.dpsgd.opacus_log.OpacusLog``), ``record`` (its JSON-ready
    form) and the wall time."""

    spec: str
    argv: tuple
    log: object
    record: dict
    seconds: float
    canaries: object = None

    @property
    def datasets(self) -> list:
        return [loader.dataset for loader in self.log.loaders if getattr(loader, "dataset", None) is not None]


@contextlib.contextmanager
def _as_a_script(spec: str, argv):
    """``sys.argv`` and ``sys.path[0]`` as ``python file.py ARGV`` sets them (its folder first on the path, so
    that it imports the modules beside it), for the duration of the block."""
    from pathlib import Path

    path = spec.rpartition(":")[0] if ".py:" in spec else spec
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    sys.path.insert(0, str(Path(path).resolve().parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def run_user_training(spec: str, argv=(), field: str = "train", canaries=None) -> ObservedTraining:
    """Import ``spec``'s file, call its function with ``argv`` as the command line, and return what opacus ran;
    ``canaries`` (``dpfed.dpsgd.loop_canaries.LoopCanaries``) join its private steps and are scored."""
    from attacks.opacus_checks.batches import one_line
    from attacks.opacus_checks.load import load_function
    from dpfed.dpsgd.observe import observing_opacus

    argv = tuple(str(a) for a in argv)
    with _as_a_script(spec, argv):
        try:
            function = load_function(spec, default=DEFAULT_FUNCTION, role="training function")
        except ConfigurationError as exc:
            raise ConfigurationError(field, str(exc).split(": ", 1)[-1]) from None
    started = time.perf_counter()
    with observing_opacus(canaries) as log, _as_a_script(spec, argv), warnings.catch_warnings():
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
    return ObservedTraining(spec, argv, log, log.to_dict(), time.perf_counter() - started, canaries)
