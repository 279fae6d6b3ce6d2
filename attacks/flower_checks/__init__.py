"""Checks of one observed run of a Flower app (``run_checks``): each DP strategy's configuration as built against
the accounting (``check``), the recorded transcript against what the accountant assumes (``transcript_check``,
with ``release_checks`` and ``sampler_check``), the clients' own DP-SGD composed over their rounds (``client_dp``)
and Flower's ``LocalDpMod`` (``local_dp``). The app, the observers, the recorders and the canary mod that produce
what these checks read stay in ``dpfed.flower``."""
