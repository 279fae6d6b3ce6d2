"""dp-accounting's RDP accountant as a peer (the one place fixed-size sampling is analysed: Wang,
Balle, Kasiviswanathan 2019, replace-one). Its multipliers are relative to the L2 sensitivity of the
released sum, ``2 * clip`` under replace-one (``accounting.peers``). dp-accounting 0.6.0 drops orders
it cannot evaluate with a logged warning; we report those orders instead of hiding them."""

from __future__ import annotations

import logging

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Neighbouring, Sampling, SubsampledGaussian


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


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
        handler = _Collect()
        root = logging.getLogger()
        saved, root.handlers = root.handlers, [handler]  # collect its warnings instead of printing them
        try:
            accountant.compose(event)
        finally:
            root.handlers = saved
        self.last_details = {"warnings": handler.messages}
        return accountant

    def epsilon(self, composition: Composition, delta: float) -> float:
        accountant = self._accountant(composition)
        with_warnings = logging.getLogger()
        saved, with_warnings.handlers = with_warnings.handlers, [_Collect()]
        try:
            return accountant.get_epsilon(delta)
        finally:
            with_warnings.handlers = saved

    def delta(self, composition: Composition, epsilon: float) -> float:
        return self._accountant(composition).get_delta(epsilon)
