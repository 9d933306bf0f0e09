"""``placerl/PlacementOneShot-v0``: GDP's MDP, every node's device in one action."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from placerl.envs.base import PlacementEnvBase
from placerl.errors import PlacementError


class OneShotPlacementEnv(PlacementEnvBase):
    """Place every node of a computation graph in one step (GDP, Zhou et al. 2019).

    ## Description
    One action holds a device per node row; the placement is simulated once and the episode
    ends. A policy that reads the whole graph at once (attention over every node's embedding)
    places a graph in one forward pass, which is what GDP trains across a family to place
    unseen graphs zero-shot. Each colocation group's device is the one its first row (in the
    order) names; the other rows of the group follow it.

    ## Observation space
    That of ``placerl/Placement-v0`` at the start of an episode: nothing placed, no current
    node, ``devices`` all 0 (there is no single node to describe).

    ## Action space
    ``MultiDiscrete([D] * max_nodes)``: the device of each row. :meth:`action_masks` (flat,
    ``max_nodes * D``, sb3-contrib's convention for ``MultiDiscrete``) allows, on each deciding
    row, the devices whose kind can run its group; rows that follow another, and padding rows,
    allow device 0 only. Memory cannot be masked before the devices are chosen together: a
    placement that overflows a device is scored by the infeasibility penalty. An action that is
    not ``max_nodes`` integers, or names a device the mask rules out on a deciding row, raises
    :class:`~placerl.errors.PlacementError` naming the node.

    ## Reward
    Any registered reward, computed from the reference runtime to the placement's (default
    ``log_speedup``: ``log(reference / runtime)``).

    ## Episode end
    Terminates after its one step; ``step()`` after that raises
    :class:`~placerl.errors.EpisodeError`.

    ## Arguments
    Those of ``placerl/Placement-v0``.

    ## Version history
    * v0: initial version.
    """

    kind = "one_shot"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, self.num_devices))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        case = self._start_unit_episode(seed, options)
        mask = np.zeros((self.max_nodes, self.num_devices), dtype=bool)
        mask[:, 0] = True  # rows that follow another, and padding: one (ignored) choice
        durations = case.model.durations
        for row in self.rows:
            mask[row] = np.isfinite(durations[case.members[int(case.order[row])]]).all(axis=0)
        self._mask = mask.reshape(-1)
        return self._observation(), self._info(None, False)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        self._check_running()
        case = self.case
        devices = self._devices_of(action)
        for row in self.rows:
            self._move_group(int(case.order[row]), int(devices[row]))
        runtime = self._score(case.model.evaluate(self.placement, check=False, times=False))
        reward = self.reward_fn(case.reference_runtime, case.reference_runtime, runtime, True)
        return self._observation(), reward, True, False, self._info(runtime, True)

    def _devices_of(self, action: Any) -> np.ndarray:
        """The action as one device per row, checked against the mask."""
        values = np.asarray(action)
        if values.shape != (self.max_nodes,) or not np.issubdtype(values.dtype, np.integer):
            raise PlacementError(
                f"action must be {self.max_nodes} integer device indices (one per row), got "
                f"an array of shape {values.shape} and dtype {values.dtype}"
            )
        allowed = self._mask.reshape(self.max_nodes, self.num_devices)
        chosen = values[self.rows]
        ok = (chosen >= 0) & (chosen < self.num_devices)
        ok[ok] = allowed[self.rows[ok], chosen[ok]]
        bad = self.rows[~ok]
        if len(bad):
            row = int(bad[0])
            v = int(self.case.order[row])
            raise PlacementError(
                f"row {row}: device {int(values[row])} cannot take node {v} "
                f"({self.case.graph.names[v]!r}); allowed: "
                f"{np.flatnonzero(allowed[row]).tolist()}"
            )
        return values

    def expert_action(self, expert: np.ndarray) -> np.ndarray:
        """The action placing every node as ``expert`` does (device 0 on the other rows)."""
        action = np.zeros(self.max_nodes, dtype=np.int64)
        action[self.rows] = expert[self.case.order[self.rows]]
        return action
