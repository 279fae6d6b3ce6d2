"""Flower's own INFO log (each round, each sampling, its mods' notes) is progress: ``--no-progress`` leaves it out.

``quiet_flower_log(on)`` marks the runs made inside it (``dpfed.flower.run.run_app``) as quiet; such a run raises
the ``flwr`` logger to WARNING in this process while it runs (``flower_log_level``) and in each ClientApp process
(``dpfed.flower.client_observer.ClientObserver``, ``quiet_here``). Warnings and errors are still shown. Imports
nothing from flwr.
"""

from __future__ import annotations

import contextlib
import logging

LOGGER = "flwr"
_STATE = {"quiet": False}


@contextlib.contextmanager
def quiet_flower_log(on: bool = True):
    """Runs of a Flower app made inside this block log no INFO (``on`` False: as they would anyway)."""
    previous = _STATE["quiet"]
    _STATE["quiet"] = previous or bool(on)
    try:
        yield
    finally:
        _STATE["quiet"] = previous


def is_quiet() -> bool:
    return _STATE["quiet"]


def quiet_here() -> None:
    """Flower's INFO log off in this process (a ClientApp's worker, where the observer runs)."""
    logging.getLogger(LOGGER).setLevel(logging.WARNING)


@contextlib.contextmanager
def flower_log_level(quiet: bool):
    """While a run runs: Flower's INFO log off in this process when ``quiet`` (restored afterwards)."""
    if not quiet:
        yield
        return
    logger = logging.getLogger(LOGGER)
    previous = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)
