"""Sampler against accountant for a user's opacus (DP-SGD) set-up.

``load`` imports the user's set-up function, ``sampler`` reads what the data loader really does,
``noise`` measures the noise the optimizer really adds, ``epsilons`` accounts what runs with our
accountants, and ``check`` turns the differences from what opacus's accountant was told into findings
with corrected epsilons. torch and opacus are imported inside functions only.
"""
