"""``placerl/PlacementOneShot-v1``: GDP's MDP, every node's device in one action."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from placerl.envs.base import PlacementEnvBase


class PlacementOneShotEnv(PlacementEnvBase):
    """Place every node of a computation graph in one step (GDP, Zhou et al. 2019).

    ## Description
    One action holds a device per node row; the placement is simulated once and the episode
    ends. A policy that reads the whole graph at once (attention over every node's embedding)
    places a graph in one forward pass, which is what GDP trains across a family to place
    unseen graphs zero-shot. Each colocation group's device is the one its first row (in the
    order) names; the other rows of the group follow it.

    ## Observation space
    That of ``placerl/Placement-v1`` at the start of an episode: nothing placed, no current
    node, ``devices`` all 0 (there is no single node to describe).

    ## Action space
    ``MultiDiscrete([D] * max_nodes)``: the device of each row. :meth:`action_masks` (flat,
    ``max_nodes * D``, sb3-contrib's convention for ``MultiDiscrete``) allows, on each deciding
    row, the devices whose kind can run its group; rows that follow another, and padding rows,
    allow device 0 only (their choice is ignored: the group's first row decides). Memory
    cannot be masked before the devices are chosen together: a placement that overflows a
    device is scored by the infeasibility penalty. A device the mask rules out on a deciding
    row is handled as ``invalid_action`` says (:mod:`placerl.envs.invalid`): by default that
    row's choice is replaced by the nearest allowed device (smallest cyclic index distance,
    ties to the lower index; ``info["invalid_action"]`` and ``info["action_taken"]`` hold the
    whole action as given and as applied), ``penalize`` also subtracts
    ``INVALID_ACTION_PENALTY`` from the reward, and ``raise`` raises
    :class:`~placerl.errors.PlacementError` naming the row's node and why. An action that is
    not ``max_nodes`` integers in ``0..D-1`` always raises.

    ## Reward
    Any registered reward, computed from the reference runtime to the placement's (default
    ``log_speedup``: ``log(reference / runtime)``), less ``INVALID_ACTION_PENALTY`` for a
    replaced action under ``penalize``.

    ## Episode end
    Terminates after its one step; ``step()`` after that raises
    :class:`~placerl.errors.EpisodeError`.

    ## Arguments
    Those of ``placerl/Placement-v1``, ``invalid_action`` and ``features`` included (the
    ``devices`` features are all 0 here whatever the set; ``plain`` zeroes the rank column).

    ## Version history
    * v1: ``invalid_action``, ``nearest`` by default (v0 raised on a masked-out device);
      observations of version 2.
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

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self._check_running()
        case = self.case
        devices = self._devices_of(action)
        for row in self.rows:
            self._move_group(int(case.order[row]), int(devices[row]))
        runtime = self._score(case.model.evaluate(self.placement, check=False, times=False))
        reward = self.reward_fn(case.reference_runtime, case.reference_runtime, runtime, True)
        return self._observation(), reward, True, False, self._info(runtime, True)

    def _devices_of(self, action: Any) -> np.ndarray:
        """The action as one device per row, the deciding rows' as ``invalid_action`` says."""
        values = self._row_values(action, self.num_devices, "device")
        allowed = self._mask.reshape(self.max_nodes, self.num_devices)

        def why(row: int) -> str:
            v = int(self.case.order[row])
            return f"row {row}: {self._device_refusal(v, int(values[row]), allowed[row])}"

        return self._allowed_rows(values, allowed, self.rows, why)

    def expert_action(self, expert: np.ndarray) -> np.ndarray:
        """The action placing every node as ``expert`` does (device 0 on the other rows)."""
        action = np.zeros(self.max_nodes, dtype=np.int64)
        action[self.rows] = expert[self.case.order[self.rows]]
        return action
