"""Small audit configurations shared by the tests: the smallest one with a user's own probe (one Laplace
count mechanism, claim epsilon 1; the README's example, the --allow-code gate and the stale-section rerun),
and one analytic Gaussian with its probe (the resume and saved-section tests)."""

TEMPLATE = """
[[target]]
name = "a user mechanism"
algorithm = "mechanism"
accountants = ["exact"]
[target.parameters]
type = "laplace"
noise_multiplier = 1.0
[target.claim]
epsilon = 1.0
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"
[[target.probes]]
name = "user"
trials = 400
[target.probes.params]
function = "{function}"
datasets = "{datasets}"
"""


def user_mechanism_audit(function: str, datasets) -> str:
    """The configuration's TOML text for the user ``function`` ("module:name") and ``datasets`` file."""
    return TEMPLATE.format(function=function, datasets=datasets)


GAUSSIAN_TEMPLATE = """
title = "{title}"
seed = {seed}
[[target]]
name = "Gaussian, analytic calibration"
algorithm = "mechanism"
accountants = ["exact"]
[target.parameters]
type = "gaussian"
calibration = "analytic"
[target.claim]
epsilon = 1.0
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"
[[target.probes]]
name = "gaussian"
trials = {trials}
"""


def gaussian_audit(title: str, seed: int, trials: int, batch_size: int | None = None) -> str:
    """An analytic Gaussian at epsilon 1 (exact accountant) with one ``gaussian`` probe of ``trials``."""
    text = GAUSSIAN_TEMPLATE.format(title=title, seed=seed, trials=trials)
    return text if batch_size is None else text + f"batch_size = {batch_size}\n"
