"""The unit the guarantee protects: one record of the dataset, and records that are copies of each other.

DP-SGD's epsilon is for one record (one index of ``data_loader.dataset``). When one person contributes
several records, that person is protected only as a group. Identical records (every field of
``dataset[i]`` equal: the model's input and its label; a dict record's fields by name) are the detectable
case: a ``TensorDataset`` is compared whole; any other dataset is read record by record, up to
``MAX_RECORDS_READ`` (records made differently at each read, e.g. by random augmentation, cannot be matched).
Copies that differ in any field are not found: none found does not mean each person has one record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.findings import OpacusFinding

MAX_RECORDS_READ = 20_000  # records read one by one (not a TensorDataset) when looking for copies


@dataclass(frozen=True)
class DuplicateFacts:
    """Identical records in a dataset.

    records : records in the dataset; checked : records compared (all, or the first ``MAX_RECORDS_READ``).
    duplicated : records identical to an earlier one; groups : distinct records that appear more than once;
    max_copies : the most times one record appears; note : how they were compared, or why not.
    """

    records: int
    checked: int
    duplicated: int
    groups: int
    max_copies: int
    note: str

    def to_dict(self) -> dict:
        return asdict(self)


def _keys(dataset) -> tuple[list, str]:
    from torch.utils.data import TensorDataset

    if isinstance(dataset, TensorDataset):
        columns = [[row.tobytes() for row in t.detach().cpu().numpy().reshape(len(t), -1)] for t in dataset.tensors]
        return list(zip(*columns, strict=True)), "every field of every record compared"
    n = min(len(dataset), MAX_RECORDS_READ)
    keys = []
    for i in range(n):
        item = dataset[i]
        if isinstance(item, Mapping):  # a dict record (Hugging Face / flwr-datasets rows): its fields by name
            keys.append(tuple((str(k), _field_key(item[k])) for k in sorted(item, key=str)))
            continue
        fields = item if isinstance(item, (tuple, list)) else (item,)
        keys.append(tuple(_field_key(f) for f in fields))
    part = "every record" if n == len(dataset) else f"the first {n} of {len(dataset)} records"
    return keys, f"every field of {part} compared"


def _field_key(field) -> tuple:
    value = field.detach().cpu().numpy() if hasattr(field, "detach") else np.asarray(field)
    return (str(value.dtype), value.shape, value.tobytes())


def find_duplicates(dataset) -> DuplicateFacts:
    """Count identical records in ``dataset`` (a dataset that cannot be read so is reported as not checked)."""
    records = len(dataset)
    try:
        keys, note = _keys(dataset)
    except Exception as exc:  # noqa: BLE001 - the user's dataset: not comparable is said, never fatal
        return DuplicateFacts(records, 0, 0, 0, 1, f"not checked: reading the records failed ({type(exc).__name__})")
    counts = Counter(keys)
    repeated = [c for c in counts.values() if c > 1]
    return DuplicateFacts(records, len(keys), sum(c - 1 for c in repeated), len(repeated), max(repeated, default=1),
                          note)


def unit_line(duplicates: DuplicateFacts) -> str:
    """One line: the unit protected and what the duplicate search found."""
    if duplicates.note.startswith("not checked"):
        found = "identical records " + duplicates.note
        return f"protects one record (one index of the dataset), not one person; {found}"
    found = (f"{duplicates.duplicated} records are copies of others" if duplicates.duplicated else
             "no identical records found")
    return (f"protects one record (one index of the dataset), not one person; {found} "
            f"({duplicates.note})")


def duplicate_findings(duplicates: DuplicateFacts, scheme: str, rate: float | None, noise_multiplier: float,
                       steps: int, delta: float) -> list[OpacusFinding]:
    """A ``duplicate-records`` finding (medium: the epsilon is right per record, not per person) when records
    repeat; under Poisson sampling with the epsilon of a person holding the most copies."""
    if not duplicates.duplicated:
        return []
    k = duplicates.max_copies
    values = {"duplicated": duplicates.duplicated, "groups": duplicates.groups, "max_copies": k}
    if scheme == "poisson" and rate is not None:
        group, how = eps.group_poisson_epsilon(k, rate, noise_multiplier, steps, delta)
        person = (f"a person with {k} identical records has epsilon {group:.3g} ({how}; {steps} steps, noise "
                  f"multiplier {noise_multiplier:.4g})")
        values.update(group_epsilon=group, group_analysis=how)
    else:
        person = (f"a person with {k} records is covered only by group privacy (at most {k} x epsilon, with delta "
                  f"{k} exp(({k}-1) epsilon) delta)")
    return [OpacusFinding(
        "duplicate-records", "medium",
        f"{duplicates.duplicated} of {duplicates.records} records are identical copies of another "
        f"({duplicates.groups} records appear {'twice' if k == 2 else f'2 to {k} times'}): the epsilon is per "
        f"record, not per person; if the copies are one person's, {person}", values)]
