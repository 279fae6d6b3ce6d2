"""client-clipping: a Flower app written without dpfed-audit (client-side clipping, Message API)."""
