"""inner-strategy: a Flower app written without dpfed-audit (linear regression in NumPy, a DP wrapper around a
strategy of the run config's choice)."""
