"""Canary SuperNodes for apps on Flower's legacy API (``client_fn`` ClientApps, legacy strategies, SecAgg+).

A legacy canary takes part in the protocol like any SuperNode: the project's own ClientApp runs for it, mods and all
(``secaggplus_mod``, ``fixedclipping_mod``, ...), on the data of a real partition (canary j borrows partition
``j mod real``), so it trains and reports the example count a real client reports (its weight in FedAvg and in
SecAgg+'s weighted sum). Only its update is the canary's: where flwr's message handler calls the client's ``fit``
(``maybe_call_fit``, patched for that call only), the parameters become
``current + s C u`` (``CanaryMod.direction``: the Message-API canaries' directions and secret signs), with C the
round's clip (``clipping_norm`` sent by a client-side wrapper, else the clip the audit's legacy recorder puts in the
config under ``CLIP_KEY``), and its metrics carry ``MARKER`` (its index). Under SecAgg+ the mods then mask it like
any other update.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from dpfed.flower.canary_keys import CLIP_KEY, MARKER

CLIENT_CLIP_KEY = "clipping_norm"  # flwr's KEY_CLIPPING_NORM (client-side wrappers)
_lock = threading.Lock()


def is_legacy(client_app) -> bool:
    """Whether the ClientApp is built on a legacy ``client_fn`` (its messages are ``fitins`` / ``fitres``)."""
    return getattr(client_app, "_call", None) is not None


def _canary_fitres(fitres, current, config: dict, direction_of, index: int):
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

    clip = config.get(CLIENT_CLIP_KEY, config.get(CLIP_KEY))
    if clip is None:
        raise RuntimeError(f"canary {index}: the fit config carries no clip (no audit recorder?)")
    sizes = [np.asarray(p).size for p in current]
    parts = np.split(float(clip) * direction_of(index, sum(sizes)), np.cumsum(sizes)[:-1])
    replies = parameters_to_ndarrays(fitres.parameters)
    fitres.parameters = ndarrays_to_parameters([
        (np.asarray(c, dtype=np.float64) + d.reshape(np.shape(c))).astype(np.asarray(r).dtype)
        for c, d, r in zip(current, parts, replies, strict=True)])
    fitres.metrics = {**(fitres.metrics or {}), MARKER: index}
    return fitres


@contextlib.contextmanager
def canary_reply(direction_of, index: int, config: dict):
    """Within the block, the legacy client's ``fit`` result is canary ``index``'s (its update ``current + s C u``,
    its example count as computed) and its ``evaluate`` result carries ``MARKER``: flwr's message handler calls them
    through ``maybe_call_fit`` / ``maybe_call_evaluate``, patched here (the ClientApp's own wrapper function may be a
    copy in a Ray worker, the handler's module is not)."""
    import flwr.client.message_handler.message_handler as handler
    from flwr.common import parameters_to_ndarrays

    fit, evaluate = handler.maybe_call_fit, handler.maybe_call_evaluate

    def canary_fit(client, fit_ins):
        return _canary_fitres(fit(client, fit_ins), parameters_to_ndarrays(fit_ins.parameters), config, direction_of,
                              index)

    def canary_evaluate(client, evaluate_ins):
        result = evaluate(client, evaluate_ins)
        result.metrics = {**(result.metrics or {}), MARKER: index}
        return result

    with _lock:
        handler.maybe_call_fit, handler.maybe_call_evaluate = canary_fit, canary_evaluate
        try:
            yield
        finally:
            handler.maybe_call_fit, handler.maybe_call_evaluate = fit, evaluate
