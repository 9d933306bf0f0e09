"""Policies for the placement envs: SB3 feature extractors, heads, ``make_agent``.

* :mod:`~placerl.agents.extractors` - ``GnnExtractor`` (PyG layers, two-way message passing),
  ``LstmExtractor`` (bidirectional LSTM over the traversal order), ``MlpExtractor``.
* :mod:`~placerl.agents.heads` - device-equivariant action and value heads.
* :mod:`~placerl.agents.factory` - ``make_agent(algo, env, extractor, **hyperparams)``.
* :mod:`~placerl.agents.episodes` - greedy masked rollouts, best of sampled rollouts.
* :mod:`~placerl.agents.imitation` - behaviour-cloning warm start from a baseline placer.
* :mod:`~placerl.agents.placer` - a trained policy as the ``policy`` placer.

Names load on first access, so that ``placerl.agents.placer`` (imported by the placer
registry) does not pull in SB3 and PyG.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EXTRACTORS": "placerl.agents.extractors",
    "GNN_LAYERS": "placerl.agents.extractors",
    "GnnExtractor": "placerl.agents.extractors",
    "LstmExtractor": "placerl.agents.extractors",
    "MlpExtractor": "placerl.agents.extractors",
    "ALGORITHMS": "placerl.agents.factory",
    "make_agent": "placerl.agents.factory",
    "DevicePolicy": "placerl.agents.heads",
    "MaskableDevicePolicy": "placerl.agents.heads",
    "rollout": "placerl.agents.episodes",
    "best_rollout": "placerl.agents.episodes",
    "Rollout": "placerl.agents.episodes",
    "behaviour_clone": "placerl.agents.imitation",
    "policy_placer": "placerl.agents.placer",
    "load_model": "placerl.agents.placer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'placerl.agents' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
