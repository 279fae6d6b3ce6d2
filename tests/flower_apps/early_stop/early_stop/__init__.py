"""early-stop: a Flower app written without dpfed-audit (a main that stops before its configured rounds)."""
