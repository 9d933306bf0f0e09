"""``placerl/Placement-v1``: build a placement node by node in a traversal order."""

from __future__ import annotations

from typing import Any

import numpy as np

from placerl.envs.base import PlacementEnvBase


class PlacementEnv(PlacementEnvBase):
    """Construct a device placement of a computation graph, one node per step.

    ## Description
    An episode visits every node of the graph once, in the chosen traversal order (Wang et al.
    2022 showed that this order changes what an RL placer learns). At step ``t`` the agent picks
    the device of node ``order[t]``. Placing a node places its whole colocation group (a
    training graph's backward node moves with its forward node), so groups are never split.
    The runtime comes from a :class:`~placerl.sim.CostModel` (``step_time`` or ``pipeline``).

    ## Observation space
    A ``Dict`` of fixed-shape arrays, padded to ``max_nodes`` / ``max_edges``. Node rows follow
    the traversal order (row ``i`` is node ``order[i]``), so a sequence model reads the order
    directly and one graph under two orders gives two different sequences.

    * ``nodes`` ``(max_nodes, 10 + D)`` float32, one row per node:
      0 cost / the graph's largest cost; 1 out_bytes / largest; 2 mem_bytes / largest;
      3 in-degree and 4 out-degree / the largest degree; 5 position in the order / (N - 1);
      6 placed flag; 7 current-node flag; 8 start time relative to the current node's, divided
      by the runtime, from the last simulation (``PlacementRefine-v1`` with ``step_time`` only;
      0 here); 9 upward rank / largest (HEFT's priority: the node's mean duration plus the
      longest chain of mean transfers and durations to a sink, a global quantity a few rounds
      of message passing cannot compute; 0 with ``features="plain"``); 10 .. 10 + D one-hot
      of the node's device (zeros while unplaced).
    * ``devices`` ``(D, 10)`` float32: what a list scheduler sees for the current node on each
      device (:mod:`placerl.envs.device_features`); with ``features="plain"`` the columns of
      HEFT's list schedule (4 ``start``, 5 ``finish``, 6 ``finish_gap``, 8 ``finish_rank``,
      9 ``earliest``) are 0.
    * ``edge_index`` ``(2, max_edges)`` int64: producer and consumer rows of each edge.
    * ``edge_mask`` ``(max_edges,)``, ``node_mask`` ``(max_nodes,)``: 1 for real entries.
    * ``current`` ``(max_nodes,)``: one-hot row of the node to place (a ``Box``, not a
      ``Discrete``: SB3 one-hot-encodes those with unstable shapes).

    Every call returns fresh arrays.

    ## Action space
    ``Discrete(D)``: the device of the current node. :meth:`action_masks` (bool, for
    sb3-contrib's MaskablePPO) and ``info["action_mask"]`` (int8, Gymnasium's convention) mark
    the devices whose kind can run the node's group and, with ``memory="mask"``, whose resident
    memory can still hold it. A device the mask rules out is handled as ``invalid_action``
    says (:mod:`placerl.envs.invalid`): by default (``nearest``) the node goes to the allowed
    device nearest it (smallest cyclic index distance, ties to the lower index), recorded in
    ``info["invalid_action"]`` and ``info["action_taken"]``; ``penalize`` also subtracts
    :data:`~placerl.envs.invalid.INVALID_ACTION_PENALTY` from the reward; ``raise`` raises
    :class:`~placerl.errors.PlacementError` naming the node, the device and why. An action
    must be an integer (a Python or numpy integer, or a 0-d integer array); anything else, or
    an index outside ``0..D-1``, raises :class:`~placerl.errors.PlacementError`.

    ## Reward
    Chosen by name (:mod:`placerl.envs.rewards`). Default ``log_speedup``: 0 until the last
    step, then ``log(reference_runtime / final_runtime)``. The dense ``normalized_delta`` is the
    shaped variant: unplaced nodes count as on the reference placement's devices, and each step
    earns ``(runtime before - runtime after) / reference_runtime`` (the rewards sum to the final
    improvement). Infeasible placements are scored by ``penalized_runtime``. With
    ``invalid_action="penalize"``, a step whose action the mask ruled out earns
    ``INVALID_ACTION_PENALTY`` (1.0) less.

    ## Episode end
    Terminates after the last node; ``step()`` after that (or before ``reset()``) raises
    :class:`~placerl.errors.EpisodeError`. With ``memory="mask"``, if no device can hold the
    next node the episode terminates early with ``info["infeasible"] = True`` and the reward of
    a runtime ``INFEASIBLE_FACTOR + 1`` times the reference (unplaced nodes are completed from the
    reference placement in ``info["placement"]``).

    ## Arguments
    ``graph`` (spec, CompGraph or a list to sample one per episode), ``cluster`` (any spec of
    :func:`placerl.cluster.load_cluster` or a Cluster), ``order`` (registered name or
    callable), ``objective``, ``reward``, ``memory`` (``mask`` / ``penalty``), ``reference``
    (a placer spec such as ``single_device``, ``heft`` or ``local_search?time_limit=2``,
    computed once through the shared cache of :mod:`placerl.baselines.references`; or a
    precomputed :class:`~placerl.baselines.references.Reference`, one per graph),
    ``max_nodes`` / ``max_edges``, ``order_seed``, ``fold`` (visit only the first copy of each
    repeated block found by :func:`~placerl.graph.passes.fold_repeats`; placing one of its
    nodes places the same node of every copy), ``render_mode`` (``ansi``, ``rgb_array``),
    ``invalid_action`` (``nearest``, ``penalize`` or ``raise``; see Action space),
    ``features`` (``heft``, the default: the observation shows HEFT's upward rank and list
    schedule; ``plain``: those columns are 0, as in the papers placerl re-implements;
    :mod:`placerl.envs.feature_sets`). Every argument is checked at construction; an unknown
    one raises :class:`~placerl.errors.ConfigError` (a renamed one names its new name).

    ``reset(seed=s)`` gives the same episode whatever happened before in the env object;
    ``reset(options={"graph": i})`` picks graph ``i`` of a list instead of sampling one.

    ## Version history
    * v1: ``invalid_action`` (a masked-out device goes to the nearest allowed one by default;
      v0 applied it and let the infeasibility penalty score it); observations of version 2
      (:data:`~placerl.envs.case.OBSERVATION_VERSION`: the ``RANK`` column and HEFT's
      ``devices`` features).
    * v0: initial version.
    """

    kind = "construct"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        case = self._start_episode(seed, options)
        self.placement = np.full(case.graph.num_nodes, -1, dtype=np.int64)
        self._t, self._row = 0, None
        self._before = case.reference_runtime
        self._set_current(int(case.steps[0]))
        first = int(case.order[case.steps[0]])
        self._set_mask(first, self._mask_or_runnable(first))
        return self._observation(), self._info(None, False)

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self._check_running()
        case = self.case
        v = int(case.order[case.steps[self._t]])
        device = self._chosen_device(action, v)
        members = self._move_group(v, device)
        self._device_state.schedule(members, device, self.placement)
        self._t += 1
        done = self._t == len(case.steps)
        if not done:
            row = int(case.steps[self._t])
            self._set_current(row)
            v = int(case.order[row])
            self._set_mask(v, self._mask_for(v))
            if self.memory == "mask" and not self._mask.any():
                return self._stuck()
        if done:
            self._set_current(None)
        return self._placed(done)

    def _placed(self, done: bool) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """The step's outcome once a node is placed: simulated at the end (or after every
        placement for a dense reward), with unplaced nodes on the reference's devices."""
        case = self.case
        after = None
        if done or self.reward_fn.dense:
            after = self._score(case.model.evaluate(self._completed(), check=False, times=False))
        reward = self.reward_fn(case.reference_runtime, self._before, after, done)
        if after is not None:
            self._before = after
        return self._observation(), reward, done, False, self._info(after, done)

    def _completed(self) -> np.ndarray:
        """The placement with unplaced nodes on the reference placement's devices."""
        unplaced = self.placement < 0
        if not unplaced.any():
            return self.placement
        return np.where(unplaced, self.case.reference_placement, self.placement)

    def _stuck(self) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        case = self.case
        penalty = self._stuck_runtime()
        reward = self.reward_fn(case.reference_runtime, self._before, penalty, True)
        self.placement = self._completed().copy()
        self._set_current(None)  # _info(done=True) ends the episode
        return self._observation(), reward, True, False, self._info(penalty, True, infeasible=True)
