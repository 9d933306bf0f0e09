"""Gymnasium environments; their ids are registered by ``import placerl`` (:mod:`placerl._env_ids`).

* ``placerl/Placement-v1`` - construct a placement node by node in a traversal order.
* ``placerl/PlacementRefine-v1`` - Placeto's MDP: refine a full placement node by node.
* ``placerl/PlacementDual-v1`` - DOPPLER's MDP: pick the next ready node, then its device.
* ``placerl/PlacementOneShot-v1`` - GDP's MDP: every node's device in one action.
* ``placerl/PlacementHierarchical-v1`` - the hierarchical planner: group the nodes, then place
  the groups.
* ``placerl/Parallelize-v1`` - choose each op's parallelization configuration (PaSE's problem).
* ``placerl/Sanity*-v1`` - tiny problems with known optima for tests and learning checks.
* :class:`StartFromBest` - Placeto's schedule: each episode from the best placement so far.

A placement env's class is named after its id (``placerl/Placement<Suffix>-v1`` ->
``Placement<Suffix>Env``). Every env takes ``invalid_action`` (:mod:`placerl.envs.invalid`):
what an action its mask rules out does.
"""

from placerl.envs.dual import PlacementDualEnv
from placerl.envs.hierarchical import PlacementHierarchicalEnv
from placerl.envs.invalid import INVALID_ACTION_PENALTY, INVALID_ACTIONS
from placerl.envs.one_shot import PlacementOneShotEnv
from placerl.envs.parallelize import ParallelizeEnv
from placerl.envs.placement import PlacementEnv
from placerl.envs.refine import INIT_PLACEMENTS, PlacementRefineEnv
from placerl.envs.rewards import REWARDS, register_reward
from placerl.envs.sanity import SANITY_PROBLEMS
from placerl.envs.wrappers import StartFromBest

__all__ = [
    "INIT_PLACEMENTS",
    "INVALID_ACTIONS",
    "INVALID_ACTION_PENALTY",
    "REWARDS",
    "SANITY_PROBLEMS",
    "ParallelizeEnv",
    "PlacementDualEnv",
    "PlacementEnv",
    "PlacementHierarchicalEnv",
    "PlacementOneShotEnv",
    "PlacementRefineEnv",
    "StartFromBest",
    "register_reward",
]
