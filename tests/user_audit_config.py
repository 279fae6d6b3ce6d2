"""The smallest audit configuration with a user's own probe (one Laplace count mechanism, claim epsilon 1),
shared by the tests that audit a user mechanism: the README's example, the --allow-code gate and the
stale-section rerun."""

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
