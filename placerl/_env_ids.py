"""The Gymnasium ids of placerl's environments, registered by string entry point.

``import placerl`` registers them without importing :mod:`placerl.envs` (and with it the
simulator and numba): Gymnasium imports an env's module only when ``gymnasium.make`` builds it.
The ``Measured`` ids are the same envs with ``objective="measured"`` on this machine's CPU
workers (:mod:`placerl.measure`); Gymnasium marks them nondeterministic.
"""

from __future__ import annotations

import importlib

from gymnasium.envs.registration import register, registry

#: Defaults of the measured ids: a small zoo model on this machine's two CPU workers.
_MEASURED = {"objective": "measured", "cluster": "local", "graph": "zoo:resnet50?variant=small"}

#: ``(id, entry point, fixed kwargs)`` of every environment placerl provides.
ENV_IDS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("placerl/Placement-v0", "placerl.envs.placement:PlacementEnv", {}),
    ("placerl/PlacementRefine-v0", "placerl.envs.refine:PlacementRefineEnv", {}),
    ("placerl/PlacementDual-v0", "placerl.envs.dual:DualPlacementEnv", {}),
    ("placerl/PlacementOneShot-v0", "placerl.envs.one_shot:OneShotPlacementEnv", {}),
    ("placerl/PlacementHierarchical-v0", "placerl.envs.hierarchical:HierarchicalPlacementEnv",
     {}),
    ("placerl/PlacementMeasured-v0", "placerl.envs.placement:PlacementEnv", _MEASURED),
    ("placerl/PlacementRefineMeasured-v0", "placerl.envs.refine:PlacementRefineEnv", _MEASURED),
    ("placerl/Parallelize-v0", "placerl.envs.parallelize:ParallelizeEnv", {}),
    ("placerl/SanityChain-v0", "placerl.envs.sanity:make_sanity_env", {"problem": "chain"}),
    ("placerl/SanityBranches-v0", "placerl.envs.sanity:make_sanity_env", {"problem": "branches"}),
    ("placerl/SanityMemory-v0", "placerl.envs.sanity:make_sanity_env", {"problem": "memory"}),
)


#: The env id of each MDP kind: ``TrainConfig.env`` and the ``env`` of a policy's saved settings.
ENV_KINDS: dict[str, str] = {
    "construct": "placerl/Placement-v0",
    "refine": "placerl/PlacementRefine-v0",
    "dual": "placerl/PlacementDual-v0",
    "one_shot": "placerl/PlacementOneShot-v0",
    "hierarchical": "placerl/PlacementHierarchical-v0",
}


def env_class(kind: str) -> type:
    """The env class of an :data:`ENV_KINDS` kind (imported on first use).

    Raises:
        ConfigError: An unknown kind.
    """
    from placerl.errors import ConfigError

    if kind not in ENV_KINDS:
        raise ConfigError(f"env must be one of {', '.join(ENV_KINDS)}, got {kind!r}")
    entry = next(entry for env_id, entry, _ in ENV_IDS if env_id == ENV_KINDS[kind])
    module, name = entry.split(":")
    return getattr(importlib.import_module(module), name)


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` (a second call, as in a reload, changes nothing)."""
    for env_id, entry_point, kwargs in ENV_IDS:
        if env_id not in registry:
            measured = kwargs.get("objective", "").startswith("measured")
            register(id=env_id, entry_point=entry_point, kwargs=kwargs, nondeterministic=measured)
