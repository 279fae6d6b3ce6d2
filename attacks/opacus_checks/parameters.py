"""Parameters the model trains that the private optimizer does not hold.

opacus clips and noises only the parameters in the optimizer given to ``make_private``. A parameter of the
model that requires gradients but is in none of its param groups (left out of that optimizer, e.g. to be
trained by a second, plain optimizer) gets no clipping and no noise: if any optimizer updates it, its
update carries the exact gradient sum of the batch, and no epsilon covers the training. Read from the
model and the optimizer only (nothing is run); a parameter with ``requires_grad`` off is frozen and fine.
"""

from __future__ import annotations

from dataclasses import dataclass

from attacks.opacus_checks.findings import OpacusFinding

WRAPPER_PREFIX = "_module."  # opacus's GradSampleModule holds the user's model as ``_module``


@dataclass(frozen=True)
class OutsideParameter:
    """A parameter that requires gradients and is not in the private optimizer (name as in the user's model)."""

    name: str
    numel: int
    parameter: object


def parameters_outside(model, optimizer) -> list[OutsideParameter]:
    """The model's parameters that require gradients and are in none of ``optimizer``'s param groups."""
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    named = model.named_parameters() if hasattr(model, "named_parameters") else ()
    return [OutsideParameter(name[len(WRAPPER_PREFIX):] if name.startswith(WRAPPER_PREFIX) else name,
                             int(p.numel()), p)
            for name, p in named if p.requires_grad and id(p) not in held]


def outside_findings(outside: list[OutsideParameter]) -> list[OpacusFinding]:
    """One critical ``parameter-outside-private-optimizer`` finding naming every such parameter."""
    if not outside:
        return []
    names = ", ".join(f"{p.name} ({p.numel} values)" for p in outside)
    return [OpacusFinding(
        "parameter-outside-private-optimizer", "critical",
        f"the model trains {len(outside)} parameter{'s' if len(outside) > 1 else ''} that the private optimizer "
        f"does not hold: {names}; an optimizer updating {'them' if len(outside) > 1 else 'it'} applies the batch's "
        "gradient with no clipping and no noise, so no epsilon covers the training (give make_private an "
        "optimizer over every trained parameter, or set requires_grad=False on the ones not trained)",
        {"parameters": [p.name for p in outside], "values": sum(p.numel for p in outside),
         "corrected_epsilon": float("inf")})]
