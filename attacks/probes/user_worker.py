"""User mechanisms run in a worker process, so that their faults stay theirs.

A user's ``f(dataset, rng)`` is arbitrary code: it may call ``sys.exit``, hang, crash the interpreter,
call ``os._exit`` or print. ``UserCodeWorker`` imports and calls it in a child Python process
(``user_child.py``) and talks to it over two pipes; in the parent each of those faults becomes one
``ConfigurationError`` naming ``mechanism`` (exit 2), and a call that takes longer than ``timeout``
seconds is stopped. The child's standard output goes to standard error, so what the mechanism prints
cannot corrupt ``--format json``.

The generator is sent with each call and its state returned, so outputs are bit-for-bit those of an
in-process call with the same generator.
"""

from __future__ import annotations

import os
import subprocess
import sys
import weakref
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError

CHILD_SCRIPT = Path(__file__).with_name("user_child.py")


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
        self._process = subprocess.Popen(
            [sys.executable, str(CHILD_SCRIPT), str(child_reads), str(child_writes)],
            pass_fds=(child_reads, child_writes),
            stdin=subprocess.DEVNULL,
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
