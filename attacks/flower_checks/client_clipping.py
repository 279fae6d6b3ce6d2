"""Client-side clipping checked where it happens: in the ClientApp's mods, whatever this run's update norms.

Flower's client-side wrappers (``DifferentialPrivacyClientSide{Fixed,Adaptive}Clipping``) only put the clip in
the training config; the ClientApp clips when it runs Flower's ``fixedclipping_mod`` or ``adaptiveclipping_mod``
(``dpfed.flower.mods`` reads its mod chains, outermost first). Per training function:

- ``client-clipping-missing`` (critical): no clipping mod and no mod of the app's own that calls one: nothing in the
  ClientApp bounds a client's update, however small this run's updates were (a clip in the training code itself
  is not seen);
- ``client-clipping-unverified`` (high): no Flower clipping mod, but a mod of the app's own refers to one (it may
  clip some replies or all: not known from the code; ``reply-above-clip`` checks this run's replies);
- ``client-clipping-order`` (high): a mod listed before the clipping mod runs on the reply after the clip; unless it
  is one of Flower's that keep the update (size logs, secure aggregation), nothing bounds what it sends;
- ``client-clipping-unread`` (high): the ClientApp's mods could not be read: the premise was not tested;
- ``client-clipping`` (info): Flower's clipping mod is the last to change every training reply.
"""

from __future__ import annotations

from attacks.flower_checks.findings import FlowerFinding
from dpfed.flower.mods import CLIPPING_MODS

CLIENT_KINDS = ("client-fixed", "client-adaptive")
EXPECTED_MOD = {"client-fixed": "fixedclipping_mod", "client-adaptive": "adaptiveclipping_mod"}


def _names(chain) -> list[str]:
    return [m.name for m in chain]


def chain_findings(function: str, chain, kind: str) -> list:
    """Findings of one training function's mod chain (``ModInfo``, outermost first) under a ``kind`` wrapper."""
    where, expected = f"the ClientApp's {function}", EXPECTED_MOD[kind]
    values = {"function": function, "mods": _names(chain), "expected_mod": expected}
    clipping = [i for i, m in enumerate(chain) if m.clips]
    if not clipping:
        calls = [m.name for m in chain if set(m.refers_to) & set(CLIPPING_MODS)]
        if calls:
            return [FlowerFinding("client-clipping-unverified", "high",
                                  f"{where} runs no Flower clipping mod itself, but its own mod(s) {calls} call one: "
                                  "whether every reply is clipped is not known from the code (this run's replies are "
                                  "checked against the clip)", {**values, "calling": calls})]
        shown = ", ".join(values["mods"]) or "none"
        return [FlowerFinding("client-clipping-missing", "critical",
                              f"the {kind} DP wrapper only sends the clip in the training config, and {where} has no "
                              f"{expected} (its mods: {shown}): nothing in the ClientApp bounds a client's update, "
                              "whatever this run's norms; the noise is calibrated for updates of norm at most C",
                              values)]
    first = clipping[0]
    after = [m.name for m in chain[:first] if not m.keeps_update]
    if after:
        return [FlowerFinding("client-clipping-order", "high",
                              f"{where} lists {after} before {chain[first].name}: Flower applies mods from the first "
                              "(outermost), so they run on the reply after the clip and may change the clipped update "
                              "(this run's replies are checked against the clip)", {**values, "after_clip": after})]
    return [FlowerFinding("client-clipping", "info",
                          f"{where} runs {chain[first].name} as the last mod to change the update (mods, outermost "
                          f"first: {', '.join(values['mods'])})", values)]


def client_clipping_findings(chains, kind: str) -> list:
    """Findings of the ClientApp's training mod chains (``dpfed.flower.mods.train_chains``; None: unread) under a
    client-side ``kind`` wrapper; none for a server-side one."""
    if kind not in CLIENT_KINDS:
        return []
    if chains is None:
        return [FlowerFinding("client-clipping-unread", "high",
                              f"the {kind} DP wrapper relies on the ClientApp to clip, and its mods could not be read: "
                              "whether every client clips was not tested (this run's replies are checked against the "
                              "clip)", {})]
    return [f for function, chain in sorted(chains.items()) for f in chain_findings(function, chain, kind)]
