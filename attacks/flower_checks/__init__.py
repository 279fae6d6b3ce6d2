"""Checks of a Flower app's run: its strategy's configuration against the accounting (``check``), the recorded
transcript against what the accountant assumes (``transcript_check``, with ``release_checks`` and
``sampler_check``), and opacus inside its clients (``opacus_check``). The app, the recorder and the canary mod
that produce what these checks read stay in ``dpfed.flower``."""
