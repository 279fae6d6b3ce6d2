"""dp-accounting's RDP accountant as a peer (the one place fixed-size sampling is analysed: Wang,
Balle, Kasiviswanathan 2019, replace-one). dp-accounting 0.6.0 drops orders it cannot evaluate with
a logged warning; we report those orders instead of hiding them."""

from __future__ import annotations

import logging

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
        import dp_accounting
        from dp_accounting import rdp

        relations = {m.neighbouring for m, _ in composition.parts if isinstance(m, SubsampledGaussian)}
        fixed = any(isinstance(m, SubsampledGaussian) and m.sampling is Sampling.FIXED_SIZE
                    for m, _ in composition.parts)
        if len(relations) > 1:
            raise Unsupported("the composition mixes neighbouring relations")
        replace = Neighbouring.REPLACE_ONE in relations
        if fixed and not replace:
            raise Unsupported("fixed-size sampling is only analysed under replace-one")
        if replace and not fixed:
            raise Unsupported("dp-accounting's RDP has no Poisson replace-one analysis")
        relation = (dp_accounting.NeighboringRelation.REPLACE_ONE if replace
                    else dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
        accountant = rdp.RdpAccountant(neighboring_relation=relation)
        handler = _Collect()
        root = logging.getLogger()
        saved, root.handlers = root.handlers, [handler]  # collect its warnings instead of printing them
        try:
            accountant.compose(composition.to_dp_event())
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
