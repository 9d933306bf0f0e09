"""``placerl/PlacementRefine-v0``: Placeto's MDP, improving a full placement node by node."""

from __future__ import annotations

from typing import Any

import numpy as np

from placerl.envs.base import START, PlacementEnvBase, best_single_device, check_placer_name
from placerl.envs.rewards import INFEASIBLE_FACTOR
from placerl.errors import ConfigError

INITIAL_PLACEMENTS = ("single_device", "random", "reference", "best")


class PlacementRefineEnv(PlacementEnvBase):
    """Refine a complete placement, re-placing one node per step (Placeto, NeurIPS 2019).

    ## Description
    The episode starts from a full placement (``initial``: the best single device, a random
    placement, the reference placement, the best placement found so far in this env, or any
    placer name from :mod:`placerl.baselines`). At step ``t`` the agent chooses a new device
    for node ``order[t mod N]`` (with its whole colocation group) and the placement is
    simulated again.

    ## Observation space
    As ``placerl/Placement-v0`` (see :class:`~placerl.envs.placement.PlacementEnv`): every node
    is placed, and with ``objective="step_time"`` column 8 holds each node's start time from the
    last simulation minus the current node's, divided by the runtime (Placeto's feature).

    ## Action space
    ``Discrete(D)`` with :meth:`action_masks` / ``info["action_mask"]`` as in construct mode.

    ## Reward
    Default ``normalized_delta``: ``(previous runtime - new runtime) / reference_runtime``,
    positive when the placement got faster (two public implementations of this MDP had the sign
    backwards; a test pins it). Any registered reward can be chosen.

    ## Episode end
    Terminates after ``passes`` passes over the nodes (``passes * N`` steps; one pass by
    default). With ``memory="mask"``, if no device can take the current node the episode
    terminates with ``info["infeasible"] = True`` and the reward of a runtime
    ``INFEASIBLE_FACTOR + 1`` times the reference.

    ## Arguments
    Those of ``placerl/Placement-v0`` plus ``initial`` and ``passes``.

    ## Version history
    * v0: initial version.
    """

    def __init__(self, *args: Any, initial: str = "single_device", passes: int = 1,
                 reward: str = "normalized_delta", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(*args, reward=reward, **kwargs)
        if not isinstance(passes, int) or passes < 1:
            raise ConfigError(f"passes must be a positive integer, got {passes!r}")
        if initial not in INITIAL_PLACEMENTS:
            check_placer_name(initial, "initial")
        self.initial, self.passes = initial, passes

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        case = self._start_episode(seed)
        self.placement = np.full(case.graph.num_nodes, -1, dtype=np.int64)
        self._row = None
        for v, device in enumerate(self._initial_placement()):
            if self.placement[v] < 0:
                self._move_group(v, int(device))
        self._t = 0
        self._before = self._simulate()
        self._record_best(self._before, self.placement)
        self._focus(0)
        return self._observation(), self._info(self._before, False)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        case = self.case
        device = self._device(action)
        n = case.graph.num_nodes
        self._move_group(int(case.order[self._t % n]), device)
        after = self._simulate()
        self._t += 1
        done = self._t == self.passes * n
        reward = self.reward_fn(case.reference_runtime, self._before, after, done)
        self._before = after
        self._record_best(after, self.placement)
        if done:
            self._set_current(None)
        else:
            self._focus(self._t % n)
            if self.memory == "mask" and not self._mask.any():
                penalty = (INFEASIBLE_FACTOR + 1) * case.reference_runtime
                info = self._info(penalty, True, infeasible=True)
                return self._observation(), reward, True, False, info
        return self._observation(), reward, done, False, self._info(after, done)

    # ------------------------------------------------------------------------ helpers
    def _initial_placement(self) -> np.ndarray:
        case = self.case
        if self.initial == "random":
            return self.np_random.integers(self.num_devices, size=case.graph.num_nodes)
        if self.initial == "single_device":
            return best_single_device(case.model)[0]
        if self.initial == "reference":
            return case.reference_placement
        if self.initial == "best":
            best = case.best_placement
            return case.reference_placement if best is None else best
        from placerl.baselines import place

        return np.asarray(place(self.initial, case.graph, self.cluster, objective=self.objective))

    def _simulate(self) -> float:
        """Simulate the current placement; refresh the start-time feature; return the score."""
        result = self.case.model.evaluate(self.placement, check=False)
        self._result = result
        return self._score(result)

    def _focus(self, row: int) -> None:
        """Make ``row`` the current node: flags, mask and relative start times."""
        case = self.case
        self._set_current(row)
        self._mask = self._mask_for(int(case.order[row]))
        start, n = self._result.start, case.graph.num_nodes
        if start is not None and np.isfinite(self._result.runtime) and self._result.runtime > 0:
            ordered = start[case.order]
            self._nodes[:n, START] = (ordered - ordered[row]) / self._result.runtime
