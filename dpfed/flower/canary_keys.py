"""The keys the audit's canaries use in Flower messages (shared by the Message-API and the legacy canaries)."""

CLIP_KEY = "dpaudit.canary-clip"  # the round's clip, put in training configs by the audit's host or recorder
MARKER = "dpaudit.canary"  # a canary's index, in its reply's metrics
