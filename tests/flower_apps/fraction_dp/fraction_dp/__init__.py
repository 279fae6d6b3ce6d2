"""fraction-dp: a Flower app written without dpfed-audit (linear regression in NumPy, FedAvg over a fraction)."""
