"""Audit of Flower (flwr) apps: configuration check, recorded transcripts and their check.

Only ``recorder`` and ``read`` touch flwr, and they import it lazily inside their functions, so the
rest of this subpackage (and all of ``dpfed``) works without the ``flower`` extra installed.
"""
