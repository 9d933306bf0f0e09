"""``placerl/PlacementRefine-v1``: Placeto's MDP, improving a full placement node by node."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from placerl._options import check_int
from placerl._registry import Registry
from placerl.baselines.references import parse_placer, reference
from placerl.envs.base import PlacementEnvBase
from placerl.envs.case import START, GraphCase
from placerl.errors import ConfigError, PlaceRLError
from placerl.sim import SimResult, clearly_faster, penalized_runtime
from placerl.sim.model import check_placement

InitFn = Callable[["PlacementRefineEnv", GraphCase], np.ndarray]

#: Start placements only an env can make (they need its random generator or its reference);
#: any placer spec of :mod:`placerl.baselines` is a start placement too (``init``).
INIT_PLACEMENTS: Registry[InitFn] = Registry("start placement")


@INIT_PLACEMENTS.decorator("uniform")
def _uniform_init(env: PlacementRefineEnv, case: GraphCase) -> np.ndarray:
    """Each colocation group on a uniform random device, drawn from the episode's generator.

    A new draw every episode (unlike the placer ``random``, fixed by its ``seed`` option).
    """
    return env.np_random.integers(env.num_devices, size=case.graph.num_nodes)


@INIT_PLACEMENTS.decorator("reference")
def _reference_init(env: PlacementRefineEnv, case: GraphCase) -> np.ndarray:
    """The env's reference placement."""
    return case.reference_placement


def _check_init(init: str) -> None:
    if isinstance(init, str) and init in INIT_PLACEMENTS:
        return
    try:
        parse_placer(init)
    except ConfigError as err:
        raise ConfigError(
            f"init={init!r} is neither an env start placement "
            f"({', '.join(INIT_PLACEMENTS)}) nor a placer spec: {err}"
        ) from None


class PlacementRefineEnv(PlacementEnvBase):
    """Refine a complete placement, re-placing one node per step (Placeto, NeurIPS 2019).

    ## Description
    The episode starts from a full placement: ``init`` names it (``single_device`` by
    default; ``uniform``, a new uniform random draw each episode; ``reference``; or any placer
    spec of :mod:`placerl.baselines`, computed
    once through the shared reference cache), or ``reset(options={"init": placement})``
    gives it (a placement, or ``{graph index: placement}`` for an env over several graphs).
    Placeto's schedule, each episode from the best placement found so far, is the explicit
    wrapper :class:`~placerl.envs.wrappers.StartFromBest`. At step ``t`` the agent chooses a new
    device for node ``order[t mod N]`` (with its whole colocation group) and the placement is
    simulated again (unless the node stays where it was: the last simulation still holds).

    With ``kick``, each episode's start placement first has ``kick`` random units (colocation
    groups) moved to random other devices that can run them, iterated local search's kick
    (``local_search?restarts=...``): from the best placement so far (``StartFromBest``) and
    with ``undo_worse``, each episode is a learned climb from a kicked best, which can leave a
    local optimum that no short excursion from the best itself escapes.

    ## Observation space
    As ``placerl/Placement-v1`` (see :class:`~placerl.envs.placement.PlacementEnv`): every node
    is placed, and with ``objective="step_time"`` column 8 holds each node's start time from the
    last simulation minus the current node's, divided by the runtime (Placeto's feature).

    ## Action space
    ``Discrete(D)`` with :meth:`action_masks` / ``info["action_mask"]`` as in construct mode,
    and a device the mask rules out handled as ``invalid_action`` says, as there (by default
    the node goes to the nearest allowed device; ``penalize`` also costs
    ``INVALID_ACTION_PENALTY``; ``raise`` names the node and why).

    ## Reward
    Default ``normalized_delta``: ``(previous runtime - new runtime) / reference_runtime``,
    positive when the placement got faster (two public implementations of this MDP had the sign
    backwards; a test pins it). Any registered reward can be chosen.

    With ``undo_worse``, a move that makes the placement slower is undone at once: the node
    goes back, the step's reward is that of leaving it (0 under ``normalized_delta``), and
    ``info["undone"]`` is ``True``. The move's simulation still counts (``simulations``), so
    a pass costs one evaluation per move tried; a policy then proposes moves and the simulator
    accepts the improving ones (a learned local search), and an episode never ends slower than
    it started (unless, with ``memory="mask"``, a node no device can take ends it).

    ## Episode end
    Terminates after ``passes`` passes over the nodes (``passes * N`` steps; one pass by
    default), or, with ``moves``, after that many steps: then the episode starts at a node
    drawn from the episode's generator and goes on in the order from there (wrapping around),
    so that short episodes still visit every node. Short episodes from the best placement so
    far (``StartFromBest``) explore its neighbourhood, as GiPH's episodes of a fixed number of
    moves do; a full pass mostly explores placements one early bad move has already spoiled.
    ``moves`` shapes training only: ``train``'s evaluations and a saved policy's env pass
    over every node. With ``memory="mask"``, if no device can take the current node the episode
    terminates with ``info["infeasible"] = True`` and the reward of a runtime
    ``INFEASIBLE_FACTOR + 1`` times the reference. ``step()`` after the end (or before
    ``reset()``) raises :class:`~placerl.errors.EpisodeError`.

    ## Arguments
    Those of ``placerl/Placement-v1`` (``invalid_action`` and ``features`` included; Placeto's
    own features are ``features="plain"``) plus ``init`` and
    ``undo_worse`` (see Description),
    ``passes`` (an integer >= 1), ``moves`` (``None`` or an integer >= 1; see Episode end) and
    ``kick`` (an integer >= 0; see Description).
    ``reset(seed=s)`` gives the same episode whatever happened before.

    ## Version history
    * v1: ``invalid_action`` (v0 applied a masked-out device); the start placement is
      ``init`` (argument and reset option; v0: ``initial``); observations of version 2.
    * v0: initial version.
    """

    kind = "refine"
    constructs = False
    extra_arguments = ("init", "passes", "moves", "undo_worse", "kick")
    #: A greedy evaluation passes over every node of the start placement itself.
    training_arguments = ("moves", "kick")

    def __init__(
        self,
        *args: Any,
        init: str = "single_device",
        passes: int = 1,
        moves: int | None = None,
        undo_worse: bool = False,
        kick: int = 0,
        reward: str = "normalized_delta",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, reward=reward, **kwargs)
        if not isinstance(undo_worse, bool):
            raise ConfigError(f"undo_worse must be true or false, got {undo_worse!r}")
        self.undo_worse = undo_worse
        self.passes = check_int(passes, "passes", minimum=1)
        self.moves = None if moves is None else check_int(moves, "moves", minimum=1)
        self.kick = check_int(kick, "kick", minimum=0)
        _check_init(init)
        self.init = init

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        case = self._start_episode(seed, options, allowed=("init",))
        start = self._init_placement(case, (options or {}).get("init"))
        self.placement = np.full(case.graph.num_nodes, -1, dtype=np.int64)
        self._row = None
        for v, device in enumerate(start):
            if self.placement[v] < 0:
                self._move_group(v, int(device))
        self._kick(case)
        n = len(case.steps)
        self._t = self._first = 0 if self.moves is None else int(self.np_random.integers(n))
        self._incremental = case.model.incremental(self.placement)  # pipeline: O(degree) moves
        self._before = self._simulate()
        self._focus(int(case.steps[self._t]))
        first = int(case.order[case.steps[self._t]])
        self._set_mask(first, self._mask_or_runnable(first))
        return self._observation(), self._info(self._before, False)

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self._check_running()
        case = self.case
        n = len(case.steps)
        v = int(case.order[case.steps[self._t % n]])
        device = self._chosen_device(action, v)
        after, extra = self._before, {}  # a node left where it is: no new simulation
        if self.placement[v] != device:
            after, extra = self._try_move(v, device)
        self._t += 1
        length = self.passes * n if self.moves is None else self.moves
        done = self._t - self._first == length
        if not done:
            self._focus(int(case.steps[self._t % n]))
            if self.memory == "mask" and not self._mask.any():  # no device can take the node
                after, done, extra = self._stuck_runtime(), True, {**extra, "infeasible": True}
        reward = self.reward_fn(case.reference_runtime, self._before, after, done)
        self._before = after
        if done:
            self._set_current(None)
        return self._observation(), reward, done, False, self._info(after, done, **extra)

    def keeps_placement(self, action: Any) -> bool:
        """Whether ``action`` leaves the current node on its device.

        Raises:
            EpisodeError: Outside an episode.
            ConfigError: Not a device index.
        """
        self._check_running()
        return self._device(action) == int(self.placement[int(self.case.order[self._row])])

    def best_move(self) -> int:
        """The device that makes the placement fastest when the current node (with its
        colocation group) moves there and nothing else does; its own device unless another is
        faster by more than rounding (the ``best_move`` state expert,
        :mod:`placerl.envs.experts`: one step of best-improvement local search, ranked by the
        env's runtime, penalized when infeasible; a policy cloned from it learns to predict it).

        It simulates each other allowed device once, on a copy: the env's state and its
        ``simulations`` count do not change.

        Raises:
            EpisodeError: Outside an episode.
        """
        self._check_running()
        case = self.case
        v = int(case.order[self._row])
        placement, best = self.placement.copy(), int(self.placement[v])
        fastest = self._before
        for device in np.flatnonzero(self._mask):
            if device == self.placement[v]:
                continue
            placement[case.members[v]] = device
            result = case.model.evaluate(placement, check=False, times=False)
            runtime = penalized_runtime(result, case.reference_runtime)
            if clearly_faster(runtime, fastest):
                best, fastest = int(device), runtime
        return best

    # ------------------------------------------------------------------------ helpers
    def _move(self, v: int, device: int) -> None:
        """Move ``v``'s unit to ``device``, in the placement and the incremental state."""
        moved = self._move_group(v, device)
        if self._incremental is not None:
            for u in moved:  # one colocation group at a time (several when folded)
                self._incremental.move(int(u), device)

    def _kick(self, case: GraphCase) -> None:
        """Move ``kick`` random units to random other devices that can run all their nodes."""
        if not self.kick:
            return  # the units are listed only when some move
        rows = case.unit_rows()
        for row in self.np_random.choice(rows, size=min(self.kick, len(rows)), replace=False):
            v = int(case.order[row])
            runs = np.isfinite(case.model.durations[case.members[v]]).all(axis=0)
            runs[self.placement[v]] = False
            if runs.any():
                self._move_group(v, int(self.np_random.choice(np.flatnonzero(runs))))

    def _init_placement(self, case: GraphCase, given: Any) -> np.ndarray:
        """The placement the episode starts from: given in the reset options, else ``init``."""
        if given is not None:
            given = self._check_given_init(given).get(self.graph_index)
        if given is not None:
            return given
        if self.init in INIT_PLACEMENTS:
            return INIT_PLACEMENTS[self.init](self, case)
        return reference(case.graph, self.cluster, self.objective, self.init).placement

    def _check_given_init(self, given: Any) -> dict[int, np.ndarray]:
        """Reset option ``init`` as ``{graph index: checked placement}``.

        A bare placement is for the episode's graph; a mapping may name any of the env's graphs
        (graphs it leaves out start from ``init``). Every placement is checked.
        """
        if not isinstance(given, Mapping):
            given = {self.graph_index: given}
        checked = {}
        for index, placement in given.items():
            try:
                index = check_int(index, "a graph index")
                if index >= len(self.graphs):
                    raise ConfigError(
                        f"graph index {index}; the env has graphs 0..{len(self.graphs) - 1}"
                    )
                checked[index] = check_placement(placement, self.graphs[index], self.num_devices)
            except PlaceRLError as err:
                raise type(err)(f"reset option 'init': {err}") from None
        return checked

    def _try_move(self, v: int, device: int) -> tuple[float, dict[str, Any]]:
        """Move ``v``'s unit and simulate; with ``undo_worse``, put it back if that was slower.

        Returns:
            The score after the step and the info it adds.
        """
        old, previous = int(self.placement[v]), (self._result, self._feasible)
        self._move(v, device)
        after = self._simulate()
        if not (self.undo_worse and clearly_faster(self._before, after)):
            return after, {}
        self._move(v, old)
        self._adopt(previous[0])
        self._feasible = previous[1]
        return self._before, {"undone": True}

    def _simulate(self) -> float:
        """Simulate the current placement; refresh the start-time feature; return the score."""
        state = self._incremental
        self._adopt(
            state.result()
            if state is not None
            else self.case.model.evaluate(self.placement, check=False)
        )
        return self._score(self._result)

    def _adopt(self, result: SimResult) -> None:
        """Make ``result`` the placement's simulation (its finish times feed the features)."""
        self._result = result
        if result.finish is not None:
            self._device_state.finish = result.finish

    def _focus(self, row: int) -> None:
        """Make ``row`` the current node: flags, mask and relative start times."""
        case = self.case
        self._set_current(row)
        v = int(case.order[row])
        self._set_mask(v, self._mask_for(v))
        start, n = self._result.start, case.graph.num_nodes
        if start is not None and np.isfinite(self._result.runtime) and self._result.runtime > 0:
            ordered = start[case.order]
            self._nodes[:n, START] = (ordered - ordered[row]) / self._result.runtime
