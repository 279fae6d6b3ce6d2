"""legacy-client-clipping-forgotten: a Flower app written without dpfed-audit (no clipping mod)."""
