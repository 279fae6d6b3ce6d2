"""dp-accounting's RDP accountant as a peer (the one place fixed-size sampling is analysed: Wang,
Balle, Kasiviswanathan 2019, replace-one). Its multipliers are relative to the L2 sensitivity of the
released sum, ``2 * clip`` under replace-one (``accounting.peers``). dp-accounting 0.6.0 drops orders
it cannot evaluate with a logged warning; we report those orders instead of hiding them."""

from __future__ import annotations

import contextlib
import logging
import threading

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Neighbouring, Sampling, SubsampledGaussian


class _ThreadWarnings(logging.Filter):
    """Filter on absl's logger: records logged by a thread that is collecting are kept in that
    thread's list and not printed; other threads' records pass unchanged."""

    def __init__(self):
        super().__init__()
        self.local = threading.local()

    def filter(self, record):
        collected = getattr(self.local, "messages", None)
        if collected is None:
            return True
        collected.append(record.getMessage())
        return False


_FILTER = _ThreadWarnings()
_USERS = 0
_USERS_LOCK = threading.Lock()


@contextlib.contextmanager
def collected_warnings():
    """Collect dp-accounting's (absl) warnings of this thread instead of printing them. The filter
    sits on absl's logger only while some thread collects; root handlers are never touched."""
    global _USERS
    absl_logger = logging.getLogger("absl")
    with _USERS_LOCK:
        if _USERS == 0:
            absl_logger.addFilter(_FILTER)
        _USERS += 1
    _FILTER.local.messages = messages = []
    try:
        yield messages
    finally:
        _FILTER.local.messages = None
        with _USERS_LOCK:
            _USERS -= 1
            if _USERS == 0:
                absl_logger.removeFilter(_FILTER)


class DpaRdpAccountant:
    name = "dpa-rdp"

    def __init__(self):
        self.last_details: dict = {}

    def _accountant(self, composition: Composition):
        from dp_accounting import rdp

        relation = peers.composition_relation(composition)
        for mechanism, _ in composition.parts:
            if isinstance(mechanism, SubsampledGaussian) and not peers.is_unsampled(mechanism):
                fixed = mechanism.sampling is Sampling.FIXED_SIZE
                if fixed and relation is not Neighbouring.REPLACE_ONE:
                    raise Unsupported("fixed-size sampling is only analysed under replace-one")
                if not fixed and relation is Neighbouring.REPLACE_ONE:
                    raise Unsupported("dp-accounting's RDP has no Poisson replace-one analysis")
        accountant = rdp.RdpAccountant(neighboring_relation=peers.dpa_relation(relation))
        event = peers.dp_event(composition, peers.PeerScale.SENSITIVITY, relation)
        with collected_warnings() as messages:
            accountant.compose(event)
        self.last_details = {"warnings": messages}
        return accountant

    def epsilon(self, composition: Composition, delta: float) -> float:
        accountant = self._accountant(composition)
        with collected_warnings():
            return accountant.get_epsilon(delta)

    def delta(self, composition: Composition, epsilon: float) -> float:
        accountant = self._accountant(composition)
        with collected_warnings():
            return accountant.get_delta(epsilon)
