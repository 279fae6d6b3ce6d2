"""The sensitivity of what a Flower DP wrapper noises, measured by replaying its inner strategy round by round.

Flower's central-DP wrappers clip the replies (or have the clients clip them), call the inner strategy's
aggregation and add N(0, (z C / m)^2) to its output: the noise is calibrated for a mean of m clipped updates, which
one client moves by at most C / m when its update leaves the fixed-m sum and by 2 C / m when it is replaced. An
inner strategy that is not that mean (a server optimizer, a median, a user's subclass) may move further.

``RoundReplay`` is made just before the wrapper calls the inner aggregation: it deep-copies the inner strategy in
the state it has then (``copy.deepcopy``) and keeps the output the real call returns. After the call it replays a
fresh copy's aggregation (``dpfed.flower.replay_runners``) on the round's replies as the inner strategy received them
(clipped by the wrapper, or by the clients), first unchanged (the replay must give the real output, to float32
rounding, else nothing is measured), then with one client's reply changed (``dpfed.flower.neighbours``):

- ``zero``: its update taken out of the fixed-m mean (its reply is the round's model), against C / m;
- ``replace``: its reply replaced by another within the clip, against 2 C / m (``REPLACEMENTS``, ``SEARCHED``);
- ``removed``: its reply left out (m - 1 replies); information only, as a mean over the replies that came then
  moves by (u_i - mean of the rest) / m.

The largest change found is a lower bound on the inner strategy's sensitivity at the round (a neighbour not tried
may move it further); one above the accounted bound is a witness against it. The state the round's worst neighbour
leaves in the strategy (``dpfed.flower.state_chain``: FedAvgM's momentum, FedOpt's moments, a model the strategy steps
from) is carried into the following rounds and their outputs replayed with it (``carried``). A round's replays stay
within ``REPLAY_BUDGET`` (``replay_plan``). Python's and NumPy's global generators are restored after the replays, so
the run draws the same noise and sample as without them.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import random

import numpy as np

from dpfed.flower import neighbours, state_chain

FLOAT32_UNIT = 2.0 ** -23


def flower_base(strategy) -> str:
    """The Flower strategy class ``strategy`` is or subclasses (its own class name when it is Flower's)."""
    for cls in type(strategy).__mro__:
        if cls.__module__.startswith("flwr."):
            return cls.__name__
    return type(strategy).__name__


def strategy_name(strategy) -> str:
    """``FedAdam``, or ``MyAdam (a FedAdam)`` for a user's subclass."""
    own, base = type(strategy).__name__, flower_base(strategy)
    return own if own == base else f"{own} (a {base})"


@contextlib.contextmanager
def _quiet_and_same_draws():
    """Flower's log at ERROR (each replayed aggregation logs) and the global generators restored afterwards."""
    logger = logging.getLogger("flwr")
    level, py_state, np_state = logger.level, random.getstate(), np.random.get_state()
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
        random.setstate(py_state)
        np.random.set_state(np_state)


def slack(*norms: float) -> float:
    """Float32 rounding a replayed change may carry: the replies and outputs are float32 models, rounded by at
    most 2^-24 of their norms each; 64 such roundings allowed for."""
    return 64 * FLOAT32_UNIT * float(sum(norms))


class RoundReplay:
    """One round's replay of ``inner`` (the DP wrapper's inner strategy), made before the wrapper calls
    ``inner.<method>(server_round, replies, ...)``: ``with replay.watching(): wrapper.aggregate...`` keeps a copy of
    the replies as the inner strategy receives them (``copy_replies``; a strategy may consume them, Flower's
    FedMedian does) and its real output; then ``measure(...)``. ``runner(replies)`` is the API's adapter
    (``message_runner``, ``legacy_runner``): ``run(snapshot, changes)``, a fresh copy's aggregation of fresh copies
    of the replies with ``changes`` ({index: update, or None to leave the reply out}), as a flat float64 output."""

    def __init__(self, inner, method: str, copy_replies):
        self.inner, self.method, self.name = inner, method, strategy_name(inner)
        self.copy_replies = copy_replies
        self.real, self.received, self.reason, self.chains = [], None, None, []
        try:
            self.snapshot = copy.deepcopy(inner)
        except Exception as exc:  # noqa: BLE001 - any failure to copy means: no replay
            self.snapshot = None
            self.reason = f"the inner strategy could not be copied ({type(exc).__name__}: {str(exc)[:120]})"

    @contextlib.contextmanager
    def watching(self):
        """While the wrapper runs the round: the replies the inner strategy receives and its output are kept."""
        if self.snapshot is None:
            yield
            return
        own = vars(self.inner).get(self.method) if hasattr(self.inner, "__dict__") else None
        original = getattr(self.inner, self.method)

        def kept(server_round, replies, *args, **kwargs):
            replies = list(replies)
            try:
                self.received = self.copy_replies(replies)
            except Exception as exc:  # noqa: BLE001 - replies that cannot be copied: no replay
                self.reason = f"the replies could not be copied ({type(exc).__name__})"
            out = original(server_round, replies, *args, **kwargs)
            self.real.append(out)
            return out

        try:
            setattr(self.inner, self.method, kept)
        except Exception as exc:  # noqa: BLE001 - a strategy that refuses attributes: no check of the replay
            self.reason = f"the inner strategy's {self.method} could not be watched ({type(exc).__name__})"
            yield
            return
        try:
            yield
        finally:
            if own is not None:
                setattr(self.inner, self.method, own)
            else:
                delattr(self.inner, self.method)

    def measure(self, runner, real_output, current: np.ndarray, clip: float, server_round: int = 0,
                chains: list | None = None) -> dict:
        """The round's measurement (``untested`` with the reason where no replay could be made). ``runner``:
        ``message_runner`` or ``legacy_runner`` with the server round, the round's model and the flattener bound.
        ``chains``: the state that earlier rounds' worst neighbours left in the strategy (``state_chain.Chain``),
        replayed on this round's replies (``carried``: how far each moves this round's output) and continued in
        ``self.chains``."""
        base = {"strategy": self.name, "flower_strategy": flower_base(self.inner), "clip": float(clip),
                "replies": len(self.received or [])}
        if self.reason is None and len(self.real) != 1:
            self.reason = "the wrapper did not call the inner strategy's aggregation once"
        if self.reason is not None:
            return {**base, "tested": False, "reason": self.reason}
        if real_output is None or not self.received:
            return {**base, "tested": False, "reason": "the inner strategy released nothing this round"}
        with _quiet_and_same_draws():
            try:
                run, updates, ids = runner(self.received, self.copy_replies)
                return {**base, **self._measured(run, real_output, updates, current, clip, ids, server_round,
                                                 chains or [])}
            except Exception as exc:  # noqa: BLE001 - the replay failed: say so, never a verdict
                return {**base, "tested": False,
                        "reason": f"the replay failed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"}

    def _measured(self, run, real_output, updates, current, clip, ids, server_round, chains) -> dict:
        baseline, after = run(self.snapshot, {}, keep=True)
        if baseline is None or baseline.shape != real_output.shape:
            return {"tested": False, "reason": "the replay on the recorded replies released nothing comparable"}
        tolerance = slack(float(np.linalg.norm(current)), float(np.linalg.norm(real_output)), clip)
        off = float(np.linalg.norm(baseline - real_output))
        if not off <= tolerance:
            return {"tested": False, "reason": f"the replay on the recorded replies did not give the round's own "
                                               f"output (off by {off:.3g}): the strategy depends on more than its "
                                               "copy and the replies"}
        norms = np.linalg.norm(updates, axis=1)
        clients, probed = neighbours.replay_plan(*updates.shape)
        order = np.argsort(-norms, kind="stable")[:clients]
        worst = {"replace": (0.0, None, None), "zero": (0.0, None, None), "removed": (0.0, None, None)}
        tried, worst_changes = 0, [None]

        def note(kinds, changes, index, what):
            nonlocal tried
            out = run(self.snapshot, changes)
            tried += 1
            if out is None or out.shape != baseline.shape or not np.all(np.isfinite(out)):
                return
            change = float(np.linalg.norm(out - baseline))
            for kind in kinds:
                if change > worst[kind][0]:
                    worst[kind] = (change, int(ids[index]), what)
                    worst_changes[0] = changes if kind == "replace" else worst_changes[0]

        for position, index in enumerate(order):
            index = int(index)
            note(("zero", "replace"), {index: np.zeros_like(updates[index])}, index, "a zero update")
            if len(updates) > 1:
                note(("removed",), {index: None}, index, "its reply left out")
            found = neighbours.searched(run, self.snapshot, baseline, updates, index, clip) if position < probed else []
            tried += neighbours.PROBE_LEVELS * 2 if position < probed else 0
            for what, replacement in neighbours.neighbours(updates, index, clip) + found:
                note(("replace",), {index: replacement}, index, what)
        carried = self._carried(run, baseline, after, chains)
        if worst_changes[0] is not None:
            _, left = run(self.snapshot, worst_changes[0], keep=True)
            self.chains.append(state_chain.Chain(server_round, *state_chain.state_difference(left, after)).alive())
        self.chains = [c for c in self.chains if c is not None][-state_chain.MAX_CHAINS:]
        return {"tested": True, "neighbours": tried, "clients_changed": len(order), "clients_searched": probed,
                "slack": tolerance,
                "carried": carried,
                **{kind: value for kind, (value, _, _) in worst.items()},
                **{f"{kind}_client": client for kind, (_, client, _) in worst.items()},
                **{f"{kind}_neighbour": what for kind, (_, _, what) in worst.items()}}

    def _carried(self, run, baseline, after, chains) -> list:
        """This round's output replayed with each chain's state in place of the round's own (where the round's
        ``configure`` did not set it afresh): ``[{"origin": round, "change": norm}]``; the chains continued."""
        carried = []
        for chain in chains:
            state = chain.applied(self.snapshot)
            if state is None:
                continue
            out, left = run(state, {}, keep=True)
            if out is None or out.shape != baseline.shape or not np.all(np.isfinite(out)):
                continue
            carried.append({"origin": chain.origin, "change": float(np.linalg.norm(out - baseline))})
            self.chains.append(state_chain.Chain(chain.origin, *state_chain.state_difference(left, after)).alive())
        return carried
