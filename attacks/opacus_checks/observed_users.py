"""The user-level epsilon of an observed DP-SGD training (claim unit ``user``):

- ``user-level-epsilon``: the records per user (named by ``user_key``, else identical records taken as one person's)
  give a group of k records each in a Poisson batch independently: a mixture of Gaussians with shifts jC,
  j ~ Binomial(k, q) (dp-accounting's mixture PLD); critical when the claim is below it.
"""

from __future__ import annotations

from collections import Counter

from accounting.errors import ConfigurationError
from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.findings import OpacusFinding
from attacks.opacus_checks.records import find_duplicates


def user_ids(dataset, user_key: str):
    """Each record's user: ``user_key`` a field of dict records, an index of tuple records, or ``file.py:function``
    called with the dataset."""
    if ".py:" in str(user_key):
        from attacks.opacus_checks.load import load_function

        try:
            ids = list(load_function(user_key, default="user_ids", role=None)(dataset))
        except ConfigurationError as exc:
            raise ConfigurationError("user_key", str(exc).split(": ", 1)[-1]) from None
    else:
        key = int(user_key) if str(user_key).isdigit() else user_key
        try:
            ids = [dataset[i][key] for i in range(len(dataset))]
        except (KeyError, IndexError, TypeError) as exc:
            raise ConfigurationError("user_key", f"records have no field {user_key!r} ({type(exc).__name__})") from None
    if len(ids) != len(dataset):
        raise ConfigurationError("user_key", f"{len(ids)} user ids for {len(dataset)} records")
    return [i.item() if hasattr(i, "item") else i for i in ids]


def user_findings(training, rows: dict, claim: float | None, delta: float, user_key: str | None) -> list:
    datasets = training.datasets
    if not datasets or not rows["sample_rates"]:
        return []
    if user_key is not None:
        group, how = max(Counter(user_ids(datasets[0], user_key)).values()), f"records per user ({user_key})"
    else:
        duplicates = find_duplicates(datasets[0])
        group, how = duplicates.max_copies, f"identical records taken as one user's ({duplicates.note})"
    if group <= 1:
        return [OpacusFinding("user-level", "info", f"one record per user ({how}): the record-level epsilon holds "
                              "per user", {"max_records": group})]
    user_epsilon, analysis = eps.group_poisson_epsilon(group, max(rows["sample_rates"]), min(rows["noise_multipliers"]),
                                                       rows["steps"], delta)
    severity = "critical" if claim is not None and claim < user_epsilon else "info"
    return [OpacusFinding("user-level-epsilon", severity,
                          f"a user holds up to {group} records ({how}): the user-level epsilon is {user_epsilon:.4g} "
                          f"({analysis}) against the record-level {rows['epsilon']:.4g}",
                          {"max_records": group, "user_epsilon": user_epsilon, "record_epsilon": rows["epsilon"]})]
