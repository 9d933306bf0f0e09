"""The Gymnasium ids of placerl's environments, registered by string entry point.

``import placerl`` registers them without importing :mod:`placerl.envs` (and with it the
simulator and numba): Gymnasium imports an env's module only when ``gymnasium.make`` builds it.
The ``Measured`` ids are the same envs with ``objective="measured"`` on this machine's CPU
workers (:mod:`placerl.measure`); Gymnasium marks them nondeterministic.

Only the current version of each id is registered: Gymnasium refuses an older one with a
``DeprecatedEnv`` error naming the current id (``placerl/Placement-v0`` -> use
``placerl/Placement-v1``).
"""

from __future__ import annotations

import importlib

from gymnasium.envs.registration import register, registry

#: The version of every id. v1: the envs' ``invalid_action`` option (what an action the mask
#: rules out does), the refine env's ``init`` (was ``initial``), observations of version 2.
VERSION = 1

#: The placement MDPs, one row per kind: ``kind: (id, entry point)``. One naming rule holds
#: them together: kind ``k`` (snake_case; ``construct`` is the plain one) <-> id
#: ``placerl/Placement<K>-v1`` <-> class ``Placement<K>Env``, ``<K>`` the kind in CamelCase
#: (``one_shot`` -> ``PlacementOneShot-v1``, ``PlacementOneShotEnv``). The kind is a run
#: config's ``env.kind`` and the ``env`` of a policy's saved settings.
PLACEMENT_ENVS: dict[str, tuple[str, str]] = {
    "construct": (f"placerl/Placement-v{VERSION}", "placerl.envs.placement:PlacementEnv"),
    "refine": (f"placerl/PlacementRefine-v{VERSION}", "placerl.envs.refine:PlacementRefineEnv"),
    "dual": (f"placerl/PlacementDual-v{VERSION}", "placerl.envs.dual:PlacementDualEnv"),
    "one_shot": (
        f"placerl/PlacementOneShot-v{VERSION}",
        "placerl.envs.one_shot:PlacementOneShotEnv",
    ),
    "hierarchical": (
        f"placerl/PlacementHierarchical-v{VERSION}",
        "placerl.envs.hierarchical:PlacementHierarchicalEnv",
    ),
}

#: The env id of each MDP kind.
ENV_KINDS: dict[str, str] = {kind: env_id for kind, (env_id, _) in PLACEMENT_ENVS.items()}

_SANITY = "placerl.envs.sanity:make_sanity_env"
#: Defaults of the measured ids: a small zoo model on this machine's two CPU workers.
_MEASURED = {"objective": "measured", "cluster": "local", "graph": "zoo:resnet50?variant=small"}

#: ``(id, entry point, fixed kwargs)`` of every environment placerl provides.
ENV_IDS: tuple[tuple[str, str, dict[str, str]], ...] = (
    *((env_id, entry, {}) for env_id, entry in PLACEMENT_ENVS.values()),
    (f"placerl/PlacementMeasured-v{VERSION}", PLACEMENT_ENVS["construct"][1], _MEASURED),
    (f"placerl/PlacementRefineMeasured-v{VERSION}", PLACEMENT_ENVS["refine"][1], _MEASURED),
    (f"placerl/Parallelize-v{VERSION}", "placerl.envs.parallelize:ParallelizeEnv", {}),
    (f"placerl/SanityChain-v{VERSION}", _SANITY, {"problem": "chain"}),
    (f"placerl/SanityBranches-v{VERSION}", _SANITY, {"problem": "branches"}),
    (f"placerl/SanityMemory-v{VERSION}", _SANITY, {"problem": "memory"}),
)


def env_class(kind: str) -> type:
    """The env class of an :data:`ENV_KINDS` kind (imported on first use).

    Raises:
        ConfigError: An unknown kind.
    """
    from placerl.errors import ConfigError

    if kind not in PLACEMENT_ENVS:
        raise ConfigError(f"env.kind must be one of {', '.join(PLACEMENT_ENVS)}, got {kind!r}")
    module, name = PLACEMENT_ENVS[kind][1].split(":")
    return getattr(importlib.import_module(module), name)


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` (a second call, as in a reload, changes nothing)."""
    for env_id, entry_point, kwargs in ENV_IDS:
        if env_id not in registry:
            measured = kwargs.get("objective", "").startswith("measured")
            register(id=env_id, entry_point=entry_point, kwargs=kwargs, nondeterministic=measured)
