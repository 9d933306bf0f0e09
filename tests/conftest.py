"""Test-wide settings: no network, no wandb, a private cache, quick hypothesis profiles."""

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("WANDB_MODE", "disabled")
# One torch thread per test process and its subprocesses (set before anything imports torch):
# the tests' models are tiny, so a second thread only spins. Measured on 2 cores: the learning
# tests take 4% more wall time and 34% less CPU time.
os.environ.setdefault("OMP_NUM_THREADS", "1")

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Point ``PLACERL_CACHE`` at a session temp folder: tests never touch ~/.cache/placerl.

    Subprocesses (vector-env workers, the README test) inherit it through the environment.
    """
    saved = os.environ.get("PLACERL_CACHE")
    os.environ["PLACERL_CACHE"] = str(tmp_path_factory.mktemp("placerl-cache"))
    yield
    if saved is None:
        del os.environ["PLACERL_CACHE"]
    else:
        os.environ["PLACERL_CACHE"] = saved
