"""The child side of ``attacks/probes/user_worker.py``: imports a user's mechanism and runs it.

Run as a script (``python user_child.py R W``, file descriptors of two pipes) so that it imports only
numpy and the user's code, not this project's packages. Every fault of the user's code that Python can
catch is answered as ``("error", field, message)``; faults it cannot catch end the process, and the
parent says so. What the user's code prints goes to stderr: our stdout may carry JSON.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from multiprocessing.connection import Connection

import numpy as np


class MechanismFault(Exception):
    """A fault of the user's mechanism: ``field`` and a one-line ``message`` for the parent."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def as_outputs(raw, expected: int | None, batched: bool) -> np.ndarray:
    """A mechanism's return value as a (trials, output size) float array of finite numbers."""
    try:
        out = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise MechanismFault("mechanism", f"returned non-numeric output {str(raw)[:60]!r}") from None
    try:
        out = out.reshape(expected, -1) if batched else out.reshape(1, -1)
    except ValueError:
        raise MechanismFault("mechanism", f"returned {out.size} numbers for {expected} trials") from None
    if out.shape[1] == 0 or not np.all(np.isfinite(out)):
        raise MechanismFault("mechanism", "returned empty or non-finite output")
    return out


def import_callable(spec: str):
    """Import ``"module:function"`` (MechanismFault naming ``mechanism`` if it cannot be)."""
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        raise MechanismFault("mechanism", f"importing {module_name!r} called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise MechanismFault("mechanism", f"cannot import module {module_name!r} ({detail})") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise MechanismFault("mechanism", f"{module_name!r} has no callable {attr!r}")
    return function


def call_mechanism(spec: str, function, dataset, trials: int, rng) -> np.ndarray:
    """``trials`` outputs of ``function`` on ``dataset``, shape (trials, output size)."""
    try:
        if getattr(function, "batched", False):
            return as_outputs(function(dataset, rng, int(trials)), int(trials), True)
        rows = [as_outputs(function(dataset, rng), None, False) for _ in range(int(trials))]
    except MechanismFault:
        raise
    except SystemExit as exc:
        raise MechanismFault(
            "mechanism", f"{spec} called sys.exit({exc.code!r}); a mechanism must return its output"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a crash in user code is reported in one line
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise MechanismFault("mechanism", f"{spec} raised {detail}") from None
    if len({r.shape for r in rows}) > 1:
        raise MechanismFault("mechanism", "returned outputs of different sizes")
    return np.concatenate(rows)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def serve(requests: Connection, replies: Connection) -> None:
    """The child's loop: ``("load", spec, path, datasets)`` then ``("run", world, trials, rng)`` calls."""
    spec = function = datasets = None
    while True:
        try:
            message = requests.recv()
        except EOFError:
            return
        try:
            if message[0] == "load":
                _, spec, sys.path[:], datasets = message
                function = import_callable(spec)
                replies.send(("ok", None))
            else:
                _, world, trials, rng = message
                outputs = call_mechanism(spec, function, datasets[world], trials, rng)
                replies.send(("ok", (outputs, rng.bit_generator.state)))
        except MechanismFault as exc:
            replies.send(("error", exc.field, exc.message))


def main(argv: list[str]) -> None:
    requests = Connection(int(argv[0]), writable=False)
    replies = Connection(int(argv[1]), readable=False)
    os.dup2(2, 1)  # whatever the mechanism prints goes to stderr, never into our stdout
    sys.stdout = sys.stderr
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    serve(requests, replies)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the parent reports it
        os._exit(130)
