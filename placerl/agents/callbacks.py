"""SB3 callbacks of :func:`placerl.train.train`: best placement, evaluations, checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from placerl.agents.episodes import rollout


class BestPlacement:
    """The best placement seen per graph, in training episodes or evaluations.

    Feasible placements beat infeasible ones; then the lower runtime wins.
    """

    def __init__(self) -> None:
        self.by_graph: dict[int, dict[str, Any]] = {}

    def offer(self, graph: int, runtime: float, feasible: bool, placement: np.ndarray,
              step: int) -> bool:  # fmt: skip
        """Keep the placement if it beats the best of ``graph``; True if it did."""
        best = self.by_graph.get(graph)
        if best is not None and (not best["feasible"], best["runtime"]) <= (not feasible, runtime):
            return False
        self.by_graph[graph] = {
            "runtime": float(runtime), "feasible": bool(feasible),
            "placement": np.asarray(placement).tolist(), "step": int(step),
        }  # fmt: skip
        return True

    def to_dict(self) -> dict[str, Any]:
        """JSON form (graph indices as strings)."""
        return {str(k): v for k, v in sorted(self.by_graph.items())}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BestPlacement:
        """Read :meth:`to_dict` back."""
        best = cls()
        best.by_graph = {int(k): dict(v) for k, v in data.items()}
        return best


class TrackBest(BaseCallback):
    """Offer the final placement of every finished training episode (from ``info``)."""

    def __init__(self, best: BestPlacement) -> None:
        super().__init__()
        self.best = best

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "placement" in info:
                self.best.offer(info["graph_index"], info["runtime"], info["feasible"],
                                info["placement"], self.num_timesteps)  # fmt: skip
        return True


class _Periodic(BaseCallback):
    """Call :meth:`fire` whenever the step count crosses a multiple of ``every`` (0: never).

    The next multiple is counted from the model's step count when training starts, so a
    resumed run keeps the schedule.
    """

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self._next = every

    def _on_training_start(self) -> None:
        self._next = (self.num_timesteps // max(self.every, 1) + 1) * self.every

    def _on_step(self) -> bool:
        if self.every > 0 and self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.every + 1) * self.every
            self.fire()
        return True

    def fire(self) -> None:
        raise NotImplementedError


class Evaluate(_Periodic):
    """Greedy masked rollouts on every graph of ``env`` every ``every`` steps.

    Each evaluation appends ``{"step", "runtimes", "wall_s"}`` to ``curve`` and logs
    ``eval/runtime_ms`` (the mean over graphs).
    """

    def __init__(self, env: Any, every: int, curve: list[dict[str, Any]], best: BestPlacement,
                 clock: Callable[[], float]) -> None:  # fmt: skip
        super().__init__(every)
        self.env, self.curve, self.best, self.clock = env, curve, best, clock

    def fire(self) -> None:
        self.evaluate()

    def evaluate(self) -> list[float]:
        """Run the evaluation now; returns the greedy runtime per graph."""
        runtimes = []
        for g in range(len(self.env.graphs)):
            result = rollout(self.model, self.env, graph=g, seed=0)
            self.best.offer(g, result.runtime, result.feasible, result.placement,
                            self.num_timesteps)  # fmt: skip
            runtimes.append(result.runtime)
        self.curve.append({"step": int(self.num_timesteps), "runtimes": runtimes,
                           "wall_s": round(self.clock(), 3)})  # fmt: skip
        if getattr(self.model, "_logger", None) is not None:  # set up by learn()
            self.logger.record("eval/runtime_ms", 1e3 * float(np.mean(runtimes)))
        return runtimes


class Checkpoint(_Periodic):
    """Call ``save(model)`` every ``every`` steps."""

    def __init__(self, every: int, save: Callable[[Any], None]) -> None:
        super().__init__(every)
        self.save = save

    def fire(self) -> None:
        self.save(self.model)
