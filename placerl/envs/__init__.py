"""Gymnasium environments, registered when ``placerl`` is imported.

* ``placerl/Placement-v0`` - construct a placement node by node in a traversal order.
* ``placerl/PlacementRefine-v0`` - Placeto's MDP: refine a full placement node by node.
* ``placerl/Sanity*-v0`` - tiny problems with known optima for tests and learning checks.
"""

from gymnasium.envs.registration import register, registry

from placerl.envs.placement import PlacementEnv
from placerl.envs.refine import PlacementRefineEnv
from placerl.envs.rewards import REWARDS, penalized_runtime, register_reward
from placerl.envs.sanity import SANITY_PROBLEMS

__all__ = [
    "REWARDS",
    "SANITY_PROBLEMS",
    "PlacementEnv",
    "PlacementRefineEnv",
    "penalized_runtime",
    "register_reward",
]


def _register(env_id: str, entry_point: str, **kwargs: object) -> None:
    if env_id not in registry:  # importing twice (reloads, subprocesses) must not warn
        register(id=env_id, entry_point=entry_point, kwargs=kwargs)


_register("placerl/Placement-v0", "placerl.envs.placement:PlacementEnv")
_register("placerl/PlacementRefine-v0", "placerl.envs.refine:PlacementRefineEnv")
_register("placerl/SanityChain-v0", "placerl.envs.sanity:make_sanity_env", problem="chain")
_register("placerl/SanityBranches-v0", "placerl.envs.sanity:make_sanity_env", problem="branches")
_register("placerl/SanityMemory-v0", "placerl.envs.sanity:make_sanity_env", problem="memory")
