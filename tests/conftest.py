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
    ``SB3_LOGDIR`` too: a model built with SB3 directly (the README's plain route) logs there
    instead of leaving an ``SB3-<date>`` folder per ``learn`` in the temporary directory.

    Subprocesses (vector-env workers, the README test) inherit them through the environment.
    """
    folders = {"PLACERL_CACHE": "placerl-cache", "SB3_LOGDIR": "sb3-logs"}
    saved = {name: os.environ.get(name) for name in folders}
    for name, folder in folders.items():
        os.environ[name] = str(tmp_path_factory.mktemp(folder))
    yield
    for name, value in saved.items():
        if value is None:
            del os.environ[name]
        else:
            os.environ[name] = value
