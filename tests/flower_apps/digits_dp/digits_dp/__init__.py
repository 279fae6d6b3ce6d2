"""digits-dp: a Flower app written without dpfed-audit (softmax regression in NumPy on digits)."""
