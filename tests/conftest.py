"""Test-wide settings: no network, no wandb, quick hypothesis profiles."""

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("WANDB_MODE", "disabled")

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
