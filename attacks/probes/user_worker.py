"""User mechanisms run in a worker process, so that their faults stay theirs.

A user's ``f(dataset, rng)`` is arbitrary code: it may call ``sys.exit``, hang, crash the interpreter,
call ``os._exit`` or print. ``UserCodeWorker`` imports and calls it in a child Python process and talks
to it over a pipe; in the parent each of those faults becomes one ``ConfigurationError`` naming
``mechanism`` (exit 2), and a call that takes longer than ``timeout`` seconds is stopped. The child's
standard output goes to standard error, so what the mechanism prints cannot corrupt ``--format json``.

The generator is sent with each call and its state returned, so outputs are bit-for-bit those of an
in-process call with the same generator. Run as ``python -m attacks.probes.user_worker R W``.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def as_outputs(raw, expected: int | None, batched: bool) -> np.ndarray:
    """A mechanism's return value as a (trials, output size) float array of finite numbers."""
    try:
        out = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ConfigurationError("mechanism", f"returned non-numeric output {str(raw)[:60]!r}") from None
    try:
        out = out.reshape(expected, -1) if batched else out.reshape(1, -1)
    except ValueError:
        raise ConfigurationError("mechanism", f"returned {out.size} numbers for {expected} trials") from None
    if out.shape[1] == 0 or not np.all(np.isfinite(out)):
        raise ConfigurationError("mechanism", "returned empty or non-finite output")
    return out


def import_callable(spec: str):
    """Import ``"module:function"`` (ConfigurationError naming ``mechanism`` if it cannot be)."""
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        raise ConfigurationError("mechanism", f"importing {module_name!r} called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ConfigurationError("mechanism", f"cannot import module {module_name!r} ({detail})") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigurationError("mechanism", f"{module_name!r} has no callable {attr!r}")
    return function


def call_mechanism(spec: str, function, dataset, trials: int, rng) -> np.ndarray:
    """``trials`` outputs of ``function`` on ``dataset``, shape (trials, output size)."""
    try:
        if getattr(function, "batched", False):
            return as_outputs(function(dataset, rng, int(trials)), int(trials), True)
        rows = [as_outputs(function(dataset, rng), None, False) for _ in range(int(trials))]
    except ConfigurationError:
        raise
    except SystemExit as exc:
        raise ConfigurationError(
            "mechanism", f"{spec} called sys.exit({exc.code!r}); a mechanism must return its output"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a crash in user code is reported in one line
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise ConfigurationError("mechanism", f"{spec} raised {detail}") from None
    if len({r.shape for r in rows}) > 1:
        raise ConfigurationError("mechanism", "returned outputs of different sizes")
    return np.concatenate(rows)


# ----- the child ----------------------------------------------------------------------------------


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
        except ConfigurationError as exc:
            replies.send(("error", exc.field, str(exc).split(": ", 1)[-1]))


def main(argv: list[str]) -> None:
    requests = Connection(int(argv[0]), writable=False)
    replies = Connection(int(argv[1]), readable=False)
    os.dup2(2, 1)  # whatever the mechanism prints goes to stderr, never into our stdout
    sys.stdout = sys.stderr
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    serve(requests, replies)


# ----- the parent ---------------------------------------------------------------------------------


def _describe_exit(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


class UserCodeWorker:
    """A child process that imports ``spec`` and computes its outputs on the two ``datasets``."""

    def __init__(self, spec: str, datasets: tuple, timeout: float | None = None):
        self.spec, self.timeout = spec, timeout
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        path = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "attacks.probes.user_worker", str(child_reads), str(child_writes)],
            pass_fds=(child_reads, child_writes), stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path},
        )
        os.close(child_reads)
        os.close(child_writes)
        self._requests = Connection(parent_writes, readable=False)
        self._replies = Connection(parent_reads, writable=False)
        self._finalizer = weakref.finalize(self, _stop, self._process, self._requests, self._replies)
        load_timeout = None if timeout is None else max(timeout, 60.0)  # imports may take a while
        self._call(("load", spec, list(sys.path), datasets), "importing it", load_timeout)

    def outputs(self, world: int, trials: int, rng) -> np.ndarray:
        """Outputs of ``trials`` runs on dataset ``world``; ``rng`` advances as if called here."""
        outputs, state = self._call(("run", world, trials, rng), f"computing {trials} trials", self.timeout)
        rng.bit_generator.state = state
        return outputs

    def close(self) -> None:
        self._finalizer()

    def _call(self, message, what: str, timeout: float | None):
        """Send one request and return its answer; a fault of the child becomes a ConfigurationError."""
        if not self._finalizer.alive:
            raise ConfigurationError("mechanism", f"the worker running {self.spec} has stopped")
        try:
            self._requests.send(message)
            if not self._replies.poll(timeout):
                self.close()
                raise ConfigurationError(
                    "mechanism", f"{self.spec} did not finish {what} within {timeout:g} s (--timeout); stopped it"
                )
            reply = self._replies.recv()
        except (EOFError, OSError):
            code = self._process.wait()
            self.close()
            raise ConfigurationError(
                "mechanism", f"{self.spec} ended its worker process while {what} ({_describe_exit(code)})"
            ) from None
        if reply[0] == "error":
            raise ConfigurationError(reply[1], reply[2])
        return reply[1]


def _stop(process, *connections) -> None:
    for connection in connections:
        connection.close()
    if process.poll() is None:
        process.kill()
    process.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
