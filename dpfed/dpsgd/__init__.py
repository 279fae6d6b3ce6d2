"""DP-SGD on opacus with canaries: the training a DP-SGD audit attacks.

``setup.DpsgdSetup`` describes one private training (the user's model factory, data and per-sample loss,
or the bundled example: logistic regression on scikit-learn's breast-cancer data); ``train`` runs it
through opacus's ``PrivacyEngine`` with gradient canaries (one model coordinate each, read back from the
parameter updates opacus produced) or with an input-space canary (the final model returned);
``planted`` holds the planted bug (noise scaled down behind opacus's back). torch and opacus are imported
here, so import this package only where DP-SGD is wanted.
"""

from dpfed.dpsgd.setup import DpsgdSetup, breast_cancer_setup

__all__ = ["DpsgdSetup", "breast_cancer_setup"]
