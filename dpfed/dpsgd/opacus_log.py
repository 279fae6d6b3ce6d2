"""The record of what opacus ran inside one ``dpfed.dpsgd.observe.observing_opacus`` block (``OpacusLog``): the
engines made, the private steps and the noise they added, the epsilons asked for, every optimizer's steps and the
parameters they updated, and the plain (non-private) steps grouped by the data their gradients were computed from
(``dpfed.dpsgd.provenance``). ``to_dict`` makes it JSON-ready, with each engine's accountant history as opacus holds
it at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OpacusLog:
    """What opacus ran inside one ``observing_opacus`` block (JSON-ready lists and dicts)."""

    engines_made: list = field(default_factory=list)
    steps: dict = field(default_factory=dict)  # (engine, z, C, q) -> count
    noise: dict = field(default_factory=dict)  # (engine, expected std) -> [sum of squares, count]
    epsilons: list = field(default_factory=list)
    engines: dict = field(default_factory=dict)  # engine id -> the engine object (until ``to_dict``)
    optimizers: dict = field(default_factory=dict)  # id(optimizer) -> {"private", "steps", "params": {id: tensor}}
    private_optimizers: set = field(default_factory=set)  # ids of the optimizers DPOptimizers wrap
    names: dict = field(default_factory=dict)  # id(parameter) -> its name in a module given to make_private
    private_grads: dict = field(default_factory=dict)  # id(parameter) -> (id, version) of its last private gradient
    loaders: list = field(default_factory=list)  # the data loaders make_private returned (their datasets)
    passes: dict = field(default_factory=dict)  # id(parameter) -> its version at each backward pass since its step
    batches_drawn: int | None = None  # batches opacus's Poisson samplers yielded (None: none iterated)
    clipping: dict = field(default_factory=lambda: {"verified": 0, "unverified": 0, "exceeded": 0,
                                                    "worst_ratio": None})  # dpfed.dpsgd.clip_check, per add_noise
    provenance: object = None  # dpfed.dpsgd.provenance.DataProvenance: the plain steps and their data

    def _name(self, pid, tensor) -> str:
        return self.names.get(pid, f"a parameter of shape {tuple(tensor.shape)} outside make_private")

    def plain_steps(self) -> list[dict]:
        """Steps of optimizers not private at that moment, grouped by optimizer, phase (before or after the first
        ``make_private``) and data (``private``, ``other``, ``not established``), with their parameters' names."""
        if self.provenance is None:
            return []
        groups = {}
        for step in self.provenance.judge():
            key = (step["optimizer"], step["before_private"], step["data"])
            group = groups.setdefault(key, {"optimizer": step["class"], "before_make_private": step["before_private"],
                                            "private_later": step["optimizer"] in self.private_optimizers,
                                            "data": step["data"], "steps": 0, "parameters": {}, "sources": set()})
            group["steps"] += step["count"]
            group["parameters"].update({pid: self._name(pid, t) for pid, t in step["params"].items()})
            group["sources"].update(step["words"])
        return [{**g, "parameters": sorted(set(g["parameters"].values())), "sources": sorted(g["sources"])}
                for g in groups.values()]

    def updated_outside(self) -> list[str]:
        """Parameters a plain (non-private) optimizer step updated from the private data set's records (named where
        make_private's module has them, else by shape): trained with no clipping and no noise."""
        return sorted({p for g in self.plain_steps() if g["data"] == "private" for p in g["parameters"]})

    def to_dict(self) -> dict:
        """JSON-ready record, with each engine's accountant history at this moment."""
        histories = {}
        for key, engine in self.engines.items():
            accountant = getattr(engine, "accountant", None)
            histories[key] = {"mechanism": type(accountant).__name__,
                              "history": [[float(z), float(q), int(n)] for z, q, n in getattr(accountant, "history",
                                                                                              [])]}
        return {"engines_made": list(self.engines_made),
                "optimizers": [{"private": key in self.private_optimizers, "steps": e["steps"],
                                "parameters": len(e["params"])} for key, e in self.optimizers.items()],
                "updated_outside": self.updated_outside(), "plain_steps": self.plain_steps(),
                "steps": [{"engine": e, "noise_multiplier": z, "clip": c, "sample_rate": q, "count": n,
                           "accumulated": k, "moved": moved} for (e, z, c, q, k, moved), n in self.steps.items()],
                "noise": [{"engine": e, "expected_std": s, "sum_squares": v[0], "count": v[1]}
                          for (e, s), v in self.noise.items()],
                "epsilons": list(self.epsilons), "accountants": histories, "batches_drawn": self.batches_drawn,
                "clipping": dict(self.clipping)}

