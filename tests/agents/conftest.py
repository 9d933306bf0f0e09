"""The agents tests need the ``rl`` extra; they are skipped, with the reason, without it."""

import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
pytest.importorskip("torch_geometric", reason="the rl extra is not installed")
