"""``placerl/PlacementHierarchical-v1``: Mirhoseini et al.'s grouper-placer, two steps per
placement."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from placerl._options import check_int
from placerl.envs.base import PlacementEnvBase
from placerl.errors import ConfigError

#: Groups when none are given (fewer on graphs padded to fewer rows).
DEFAULT_GROUPS = 16


class PlacementHierarchicalEnv(PlacementEnvBase):
    """Group the nodes, then place the groups (Mirhoseini et al., ICLR 2018).

    ## Description
    The hierarchical planner splits device placement in two: a grouper puts every node in one
    of ``groups`` groups, a placer puts every group on a device, and each node runs where its
    group does. The placer then decides ``groups`` devices instead of one per node, which is
    what lets it place graphs of thousands of nodes. Here each is one step of a two-step
    episode: the *group* step assigns every node row a group, the *place* step every group a
    device, and the placement is simulated once. Each colocation group's nodes follow the group
    of its first row (in the order).

    ## Observation space
    That of ``placerl/Placement-v1`` at the start of an episode (nothing placed, no current
    node), plus ``groups``: ``(max_nodes, groups)``, each row's group one-hot, all 0 in the group
    step (which is how a policy tells the steps apart).

    ## Action space
    ``MultiDiscrete([max(groups, D)] * max_nodes)``, masked row by row
    (:meth:`action_masks`, flat, sb3-contrib's convention):

    * group step: row ``r`` picks the group of its node; rows that follow another, and padding
      rows, allow choice 0 only;
    * place step: row ``g < groups`` picks the device of group ``g``, among the devices whose
      kind can run every node of the group; an empty group, and rows ``>= groups``, allow
      choice 0 only. (Some device runs every node, as every env requires, so no group is
      left without one.)

    Memory cannot be masked before the devices are chosen: a placement that overflows a device
    is scored by the infeasibility penalty. Only the deciding rows' choices count (a node's
    first row, a group that holds nodes); the other rows' are ignored. A choice the mask rules
    out on a deciding row (in the place step: a device that cannot run every node of the group,
    or a choice ``>= D`` when ``groups > D``) is handled as ``invalid_action`` says
    (:mod:`placerl.envs.invalid`): by default it is replaced by the nearest allowed choice of
    its row (smallest cyclic index distance over the ``max(groups, D)`` choices, ties to the
    lower index; ``info["invalid_action"]`` and ``info["action_taken"]`` hold the whole action
    as given and as applied), ``penalize`` also subtracts ``INVALID_ACTION_PENALTY`` from the
    step's reward, and ``raise`` raises :class:`~placerl.errors.PlacementError` naming the
    group, a node of it and why. (Every group choice is allowed in the group step, as
    ``groups >= D``.) An action that is not ``max_nodes`` integers in
    ``0..max(groups, D) - 1`` always raises.

    ## Reward
    0 for the group step; then any registered reward from the reference runtime to the
    placement's (default ``log_speedup``: ``log(reference / runtime)``). Under
    ``invalid_action="penalize"`` a step with a replaced choice earns
    ``INVALID_ACTION_PENALTY`` less.

    ## Episode end
    Terminates after the place step; ``step()`` after that raises
    :class:`~placerl.errors.EpisodeError`.

    ## Arguments
    Those of ``placerl/Placement-v1`` (``invalid_action`` and ``features`` included), and
    ``groups``: how many groups the grouper fills (at least the device count, at most
    ``max_nodes``; ``None``: 16, or ``max_nodes`` if fewer).

    ## Version history
    * v1: ``invalid_action``, ``nearest`` by default (v0 raised on a masked-out choice:
      Gymnasium's and SB3's ``check_env`` failed); observations of version 2.
    * v0: initial version.
    """

    kind = "hierarchical"
    extra_arguments = ("groups",)

    def __init__(self, *args: Any, groups: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if groups is None:
            groups = max(min(DEFAULT_GROUPS, self.max_nodes), self.num_devices)
        self.groups = check_int(groups, "groups", minimum=self.num_devices)
        if groups > self.max_nodes:
            raise ConfigError(f"groups must be at most max_nodes={self.max_nodes}, got {groups}")
        self.choices = max(groups, self.num_devices)
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, self.choices))
        self.observation_space = spaces.Dict(
            {
                **self.observation_space.spaces,
                "groups": spaces.Box(0.0, 1.0, (self.max_nodes, groups), np.float32),
            }
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        self._start_unit_episode(seed, options)
        self._group_of = np.full(self.max_nodes, -1, dtype=np.int64)  # per row; -1: no group
        self._one_hot = np.zeros((self.max_nodes, self.groups), dtype=np.float32)
        mask = self._single_choice()
        mask[self.rows, : self.groups] = True
        self._mask = mask.reshape(-1)
        return self._observation(), self._info(None, False)

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self._check_running()
        values = self._checked(action)
        if not self.grouped:
            self._assign_groups(values)
            return self._observation(), 0.0, False, False, self._info(None, False)
        case = self.case
        for row in self.rows:
            self._move_group(int(case.order[row]), int(values[self._group_of[row]]))
        runtime = self._score(case.model.evaluate(self.placement, check=False, times=False))
        reward = self.reward_fn(case.reference_runtime, case.reference_runtime, runtime, True)
        return self._observation(), reward, True, False, self._info(runtime, True)

    @property
    def grouped(self) -> bool:
        """Whether the group step is done (the next step places the groups)."""
        return bool(self._one_hot.any())

    def _single_choice(self) -> np.ndarray:
        """A ``(max_nodes, choices)`` mask allowing choice 0 on every row."""
        mask = np.zeros((self.max_nodes, self.choices), dtype=bool)
        mask[:, 0] = True
        return mask

    def _assign_groups(self, values: np.ndarray) -> None:
        """Give every row its unit's group; mask the place step's devices per group."""
        case = self.case
        for row in self.rows:
            members = case.members[int(case.order[row])]
            self._group_of[case.row_of[members]] = values[row]
        self._one_hot[np.flatnonzero(self._group_of >= 0), self._group_of[self._group_of >= 0]] = 1
        runnable = np.isfinite(case.model.durations)  # (nodes, devices)
        mask = self._single_choice()
        for g in range(self.groups):
            nodes = case.order[np.flatnonzero(self._group_of == g)]
            if len(nodes):  # never empty: single_device's device runs every node
                mask[g, : self.num_devices] = runnable[nodes].all(axis=0)
        self._mask = mask.reshape(-1)

    def _checked(self, action: Any) -> np.ndarray:
        """The action as one choice per row; the deciding rows' as ``invalid_action`` says
        where the mask rules them out (the other rows' choices are ignored)."""
        if self.grouped:  # row g of the place step is group g's device
            values = self._row_values(action, self.choices, "choice", lambda g: f"group {g}")
        else:
            values = self._row_values(action, self.choices, "group")
        allowed = self._mask.reshape(self.max_nodes, self.choices)
        deciding = self._used_groups() if self.grouped else self.rows
        return self._allowed_rows(
            values,
            allowed,
            deciding,
            lambda row: self._refusal(row, int(values[row]), allowed[row]),
        )

    def _used_groups(self) -> np.ndarray:
        """The groups of the group step that hold nodes."""
        return np.unique(self._group_of[self._group_of >= 0])

    def _refusal(self, row: int, value: int, allowed: np.ndarray) -> str:
        """Why ``allowed`` rules out choice ``value`` on ``row``, naming a node."""
        choices = np.flatnonzero(allowed).tolist()
        if not self.grouped:
            return f"{self._row_name(row)}: group {value} cannot take it; allowed: {choices}"
        nodes = self.case.order[np.flatnonzero(self._group_of == row)]
        if value >= self.num_devices:
            return (
                f"group {row} (with {self._node_name(int(nodes[0]))}): {value} is not a "
                f"device (the cluster has devices 0..{self.num_devices - 1}); "
                f"allowed: {choices}"
            )
        runs = np.isfinite(self.case.model.durations[nodes, value])
        device = self.cluster.devices[value].name
        return (
            f"group {row}: device {value} ({device}) cannot run its "
            f"{self._node_name(int(nodes[np.argmin(runs)]))}; allowed: {choices}"
        )

    def expert_action(self, expert: np.ndarray) -> np.ndarray:
        """The step's action that reproduces ``expert``'s placement: each device's nodes split
        into ``groups // D`` groups of consecutive rows (in the order), then each group on its
        expert device."""
        case = self.case
        per_device = self.groups // self.num_devices
        action = np.zeros(self.max_nodes, dtype=np.int64)
        if self.grouped:  # the groups of the group step below; empty ones take choice 0
            for g in self._used_groups():
                action[g] = min(g // per_device, self.num_devices - 1)
            return action
        devices = expert[case.order[self.rows]]
        for d in range(self.num_devices):
            rows = self.rows[devices == d]
            chunk = np.arange(len(rows)) * per_device // max(len(rows), 1)
            action[rows] = d * per_device + chunk
        return action

    def _observation(self) -> dict[str, np.ndarray]:
        obs = super()._observation()
        obs["groups"] = self._one_hot.copy()
        return obs
