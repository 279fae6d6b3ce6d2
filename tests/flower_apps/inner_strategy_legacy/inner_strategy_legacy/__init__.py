"""inner-strategy-legacy: a Flower app written without dpfed-audit (linear regression in NumPy, the legacy API, a
DP wrapper around a strategy of the run config's choice)."""
