"""Wrappers that carry state across episodes, which the envs themselves never do.

An env's ``reset(seed=s)`` gives the same episode whatever happened before; schedules that
depend on history are wrappers, so that they are explicit in a training script.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from placerl.errors import ConfigError


class StartFromBest(gym.Wrapper):
    """Placeto's schedule: start each episode from the best placement found so far.

    The wrapper watches ``info["runtime"]`` after every reset and step of a
    ``placerl/PlacementRefine-v1`` env, keeps the fastest feasible placement per graph, and
    passes them to the next ``reset`` as ``options={"init": {graph index: placement}}``
    (graphs not seen yet start from the env's own ``init``). It adds
    ``info["best_runtime"]``; :meth:`best_placement` returns what it holds. The traversal-order
    study (Wang et al. 2022) trained Placeto this way.

    Example:
        >>> env = StartFromBest(gym.make("placerl/PlacementRefine-v1", graph="msr:bert24_inference",
        ...                              cluster="msr:bert24_inference"))  # doctest: +SKIP
    """

    def __init__(self, env: gym.Env) -> None:
        from placerl.envs.refine import PlacementRefineEnv

        if not isinstance(env.unwrapped, PlacementRefineEnv):
            raise ConfigError(
                "StartFromBest wraps placerl/PlacementRefine-v1, "
                f"got {type(env.unwrapped).__name__}"
            )
        super().__init__(env)
        self._best: dict[int, tuple[float, np.ndarray]] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env from the best placements so far (unless ``options`` gives one)."""
        options = dict(options or {})
        if self._best and "init" not in options:
            options["init"] = {i: placement for i, (_, placement) in self._best.items()}
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, self._record(info)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Step the env and record its placement if it is the best so far."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._record(info)

    def best_placement(self, graph_index: int = 0) -> tuple[float, np.ndarray] | None:
        """``(runtime, placement)`` of the best placement of graph ``graph_index`` so far."""
        best = self._best.get(graph_index)
        return None if best is None else (best[0], best[1].copy())

    def _record(self, info: dict[str, Any]) -> dict[str, Any]:
        index, runtime = info["graph_index"], info.get("runtime")
        if info.get("feasible", False) and runtime < self._best.get(index, (np.inf,))[0]:
            self._best[index] = (runtime, self.env.unwrapped.placement.copy())
        if index in self._best:
            info["best_runtime"] = self._best[index][0]
        return info
