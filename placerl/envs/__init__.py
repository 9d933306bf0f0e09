"""Gymnasium environments; their ids are registered by ``import placerl`` (:mod:`placerl._env_ids`).

* ``placerl/Placement-v0`` - construct a placement node by node in a traversal order.
* ``placerl/PlacementRefine-v0`` - Placeto's MDP: refine a full placement node by node.
* ``placerl/PlacementDual-v0`` - DOPPLER's MDP: pick the next ready node, then its device.
* ``placerl/PlacementOneShot-v0`` - GDP's MDP: every node's device in one action.
* ``placerl/Parallelize-v0`` - choose each op's parallelization configuration (PaSE's problem).
* ``placerl/Sanity*-v0`` - tiny problems with known optima for tests and learning checks.
* :class:`StartFromBest` - Placeto's schedule: each episode from the best placement so far.
"""

from placerl.envs.dual import DualPlacementEnv
from placerl.envs.one_shot import OneShotPlacementEnv
from placerl.envs.parallelize import ParallelizeEnv
from placerl.envs.placement import PlacementEnv
from placerl.envs.refine import INITIAL_PLACEMENTS, PlacementRefineEnv
from placerl.envs.rewards import REWARDS, register_reward
from placerl.envs.sanity import SANITY_PROBLEMS
from placerl.envs.wrappers import StartFromBest

__all__ = [
    "INITIAL_PLACEMENTS",
    "REWARDS",
    "SANITY_PROBLEMS",
    "DualPlacementEnv",
    "OneShotPlacementEnv",
    "ParallelizeEnv",
    "PlacementEnv",
    "PlacementRefineEnv",
    "StartFromBest",
    "register_reward",
]
