"""SB3 callbacks of :func:`placerl.train.train`: best placement, evaluations, checkpoints,
and a wall-clock budget."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from placerl.agents.episodes import GreedyEpisodes, spread_graphs


class BestPlacement:
    """The best placement seen per graph, in training episodes or evaluations.

    Feasible placements beat infeasible ones; then the lower runtime wins.
    """

    def __init__(self) -> None:
        self.by_graph: dict[int, dict[str, Any]] = {}

    def offer(
        self, graph: int, runtime: float, feasible: bool, placement: np.ndarray, step: int
    ) -> bool:
        """Keep the placement if it beats the best of ``graph``; True if it did."""
        best = self.by_graph.get(graph)
        if best is not None and (not best["feasible"], best["runtime"]) <= (not feasible, runtime):
            return False
        self.by_graph[graph] = {
            "runtime": float(runtime),
            "feasible": bool(feasible),
            "placement": np.asarray(placement).tolist(),
            "step": int(step),
        }
        return True

    def curve_point(self, graphs: int, step: int) -> dict[str, Any]:
        """``{"step", "best", "feasible"}``: the best runtime of each of the first ``graphs``
        graphs at ``step``, and whether it fits (a point of ``best_curve``)."""
        bests = [self.by_graph[g] for g in range(graphs)]
        return {
            "step": int(step),
            "best": [b["runtime"] for b in bests],
            "feasible": [b["feasible"] for b in bests],
        }

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
    """Offer the final placement of every finished training episode (from ``info``).

    After each rollout, once every one of the ``graphs`` has a placement, it logs
    ``sim/best_runtime_ms``, the mean over graphs of the best runtime so far, and appends
    ``{"step", "best", "feasible"}`` (per graph) to ``curve``: the search's learning curve,
    for free (no greedy evaluation), at every rollout. Given ``count_calls`` and ``clock``, each
    point also holds the run's simulator calls and seconds so far (``calls``, ``wall_s``): the
    anytime curve of a search that learns.
    """

    def __init__(
        self,
        best: BestPlacement,
        graphs: int = 1,
        curve: list[dict[str, Any]] | None = None,
        count_calls: Callable[[], int] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__()
        self.best, self.graphs = best, graphs
        self.curve = [] if curve is None else curve
        self.count_calls, self.clock = count_calls, clock

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "placement" in info:
                self.best.offer(
                    info["graph_index"],
                    info["runtime"],
                    info["feasible"],
                    info["placement"],
                    self.num_timesteps,
                )
        return True

    def _on_rollout_end(self) -> None:
        if len(self.best.by_graph) >= self.graphs:
            point = self.best.curve_point(self.graphs, self.num_timesteps)
            self.logger.record("sim/best_runtime_ms", 1e3 * float(np.mean(point["best"])))
            if self.count_calls is not None:
                point["calls"] = int(self.count_calls())
            if self.clock is not None:
                point["wall_s"] = float(self.clock())
            self.curve.append(point)


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

    With ``every > 0`` a fresh run is also evaluated at step 0 (after any warm start), so
    the curve starts where learning starts. Each evaluation appends ``{"step", "runtimes",
    "best", "wall_s"}`` to ``curve`` (``best``: per graph, the best runtime seen so far in
    training episodes or evaluations, what a search recipe reports) and logs
    ``eval/runtime_ms`` (the mean over graphs).

    It also keeps, in memory, the policy weights of the best evaluation so far, scored by the
    mean over graphs of runtime / reference runtime: PPO's greedy policy does not improve
    monotonically, and :meth:`restore_best` hands back the best one seen (as SB3's
    ``EvalCallback`` keeps a best model). :meth:`save_best` and :meth:`load_best` carry them
    across a resumed run. With a ``validation`` env, the score is that of its graphs, kept out
    of training (recorded as the entry's ``validation`` and logged as ``eval/validation``):
    the weights kept are those that place unseen graphs best.

    The greedy episodes come from ``episodes`` (and ``validation``): weights evaluated before,
    by an earlier evaluation or by :class:`Rollback`, are not run again. ``weights_step``
    gives the step at which the policy's weights were kept (a :class:`Rollback`'s
    ``kept_step``, where it may have restored older ones; ``None`` or no ``weights_step``:
    the step count).
    """

    def __init__(
        self,
        episodes: GreedyEpisodes,
        every: int,
        curve: list[dict[str, Any]],
        best: BestPlacement,
        clock: Callable[[], float],
        validation: GreedyEpisodes | None = None,
        weights_step: Callable[[], int | None] | None = None,
    ) -> None:
        super().__init__(every)
        self.episodes, self.curve, self.best, self.clock = episodes, curve, best, clock
        self.validation, self._weights_step = validation, weights_step
        self.best_score, self.best_step, self._best_weights = math.inf, 0, None
        self.last_score = math.inf

    def _on_training_start(self) -> None:
        super()._on_training_start()
        if self.every > 0 and self.num_timesteps == 0:
            self.evaluate()

    def fire(self) -> None:
        self.evaluate()

    def evaluate(self) -> list[float]:
        """Run the evaluation now; returns the greedy runtime per graph."""
        results, self.last_score = self.episodes.score(self.model)
        for g, result in enumerate(results):
            self.best.offer(
                g, result.runtime, result.feasible, result.placement, self.num_timesteps
            )
        runtimes = [r.runtime for r in results]
        best = [self.best.by_graph[g]["runtime"] for g in range(len(results))]
        entry = {"step": int(self.num_timesteps), "runtimes": runtimes, "best": best}
        if self.validation is not None:
            self.last_score = self.validation.score(self.model)[1]
            entry["validation"] = self.last_score
        self.curve.append({**entry, "wall_s": round(self.clock(), 3)})
        if self.last_score < self.best_score:
            self.best_score, self.best_step = self.last_score, self.weights_step()
            self._best_weights = copy.deepcopy(self.model.policy.state_dict())
        if getattr(self.model, "logger", None) is not None:  # set up by learn()
            # Dumped now, at this evaluation's step: SB3 dumps once per rollout otherwise.
            self.logger.record("eval/runtime_ms", 1e3 * float(np.mean(runtimes)))
            if self.validation is not None:
                self.logger.record("eval/validation", self.last_score)
            self.logger.dump(int(self.num_timesteps))
        return runtimes

    def weights_step(self) -> int:
        """The step at which the policy's current weights were kept."""
        step = self._weights_step() if self._weights_step is not None else None
        return int(self.num_timesteps) if step is None else step

    def save_best(self, path: Path) -> dict[str, Any]:
        """Write the best weights to ``path``; returns the scores to keep beside them."""
        if self._best_weights is not None:
            partial = path.with_name(path.name + ".partial")
            torch.save(self._best_weights, partial)
            partial.replace(path)  # atomic: a kill mid-write leaves no half file
        return {
            "best_score": self.best_score,
            "best_step": self.best_step,
            "last_score": self.last_score,
        }

    def load_best(self, scores: dict[str, Any], path: Path) -> None:
        """Carry on from :meth:`save_best`'s output (a resumed run)."""
        self.best_score, self.best_step = scores["best_score"], scores["best_step"]
        self.last_score = scores["last_score"]
        if path.is_file():
            self._best_weights = torch.load(path, weights_only=True)

    def restore_best(self) -> int:
        """Load the best evaluation's weights if the last evaluation was worse.

        Returns:
            The step at which the weights the policy has now were kept (:meth:`weights_step`).
        """
        if self._best_weights is None or self.last_score <= self.best_score:
            return self.weights_step()
        self.model.policy.load_state_dict(self._best_weights)
        return self.best_step


class Rollback(BaseCallback):
    """Keep a PPO update only if the greedy placements did not get worse; else undo it.

    Before each rollout (so after each update) and at the end of training, the greedy policy
    runs once on every graph of ``env`` (or on ``graphs`` of them); when the mean of runtime /
    reference runtime is worse than the best so far, the best weights come back (the optimizer's
    state carries on). Near a good placement, such as a warm start's, PPO's noisy steps make the
    expected runtime worse (measured: the mean sampled runtime on Inception-v3 climbed from 28.9
    to 31 ms over 20k steps from a cloned m-ETF placement, with every learning rate, KL target,
    advantage and value setting tried); checking each step on the true objective, as TRPO's line
    search checks its surrogate, keeps only the steps that do not lose. Costs one greedy episode
    per checked graph per update. Updates that tie are kept (and become the point to return to),
    so the policy can move along a plateau. A resumed run starts this bookkeeping afresh from
    the weights it resumes with.

    Args:
        episodes: The greedy episodes of the env whose graphs are checked (shared with
            :class:`Evaluate`, so that neither runs weights the other ran).
        graphs: Check only this many of them, spread evenly over the list (0: all). Training
            on a family of hundreds of graphs, checking every one after every update costs
            tens of times the rollout's own policy steps.

    Attributes:
        rolled_back: Updates undone.
        checks: Evaluations made.
        graph_indices: The graphs each check runs on.
        kept_step: The step count at which the weights the policy holds were kept (a tie
            keeps the new ones; where every update was undone, the first check's), ``None``
            before the first check.
    """

    def __init__(self, episodes: GreedyEpisodes, graphs: int = 0) -> None:
        super().__init__()
        self.episodes = episodes
        self.graph_indices = spread_graphs(len(episodes.env.graphs), graphs)
        self.best_score, self._best_weights = math.inf, None
        self.rolled_back = self.checks = 0
        self.kept_step: int | None = None

    def check(self) -> None:
        """Evaluate now; keep the weights if best, restore the best if worse."""
        _, score = self.episodes.score(self.model, self.graph_indices)
        self.checks += 1
        if score <= self.best_score * (1 + 1e-12):  # better or a tie: the new point to keep
            self.best_score = min(score, self.best_score)
            self._best_weights = copy.deepcopy(self.model.policy.state_dict())
            self.kept_step = int(self.num_timesteps)
        else:
            self.model.policy.load_state_dict(self._best_weights)
            self.rolled_back += 1
            self.logger.record("train/rolled_back", self.rolled_back)

    def _on_rollout_start(self) -> None:
        self.check()

    def _on_training_end(self) -> None:
        self.check()

    def _on_step(self) -> bool:
        return True


class Checkpoint(_Periodic):
    """Call ``save(model)`` every ``every`` steps."""

    def __init__(self, every: int, save: Callable[[Any], None]) -> None:
        super().__init__(every)
        self.save = save

    def fire(self) -> None:
        self.save(self.model)


class Progress(BaseCallback):
    """A progress bar of env steps whose total is what PPO will run and whose rate is the run's.

    SB3's own bar counts to ``total_timesteps`` although training stops only after a whole
    rollout (``total_steps=512`` with 1,024-step rollouts showed "1,024/512"), and its rate
    is smoothed over the last steps of a rollout, so it read 2.5x ``result.json``'s
    ``steps_per_s``, which counts PPO updates, evaluations and rollbacks too. This bar's total
    is rounded up to whole rollouts and its rate is the mean since the start (the same
    quantity as ``steps_per_s``).
    """

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.bar: Any = None

    def _on_training_start(self) -> None:
        from tqdm.rich import tqdm

        rollout = getattr(self.model, "n_steps", 1) * self.model.n_envs
        total = self.model.num_timesteps + -(-self.steps // rollout) * rollout
        self.bar = tqdm(
            total=total,
            initial=self.model.num_timesteps,
            unit="step",
            smoothing=0,
            desc="env steps, all training work included",
        )

    def _on_step(self) -> bool:
        self.bar.update(self.model.n_envs)
        return True

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.refresh()
            self.bar.close()


class TimeBudget(BaseCallback):
    """Stop training once ``clock()`` passes ``seconds`` (0: no budget).

    The clock is the run's training clock, so a resumed run counts the time it already spent.
    SB3 stops after the current step; the update in progress is not interrupted.
    """

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        super().__init__()
        self.seconds, self.clock = seconds, clock
        self.expired = False

    def _on_step(self) -> bool:
        self.expired = self.seconds > 0 and self.clock() >= self.seconds
        return not self.expired


class PhaseThreads(BaseCallback):
    """Torch's intra-op threads per phase: ``rollout`` while collecting rollouts (one forward
    pass of a small batch per step, where each parallel region costs more than it saves, and
    stalls when another process holds a core) and ``update`` during the PPO updates."""

    def __init__(self, rollout: int, update: int) -> None:
        super().__init__()
        self.rollout, self.update = rollout, update

    def enter_rollout(self) -> None:
        """Switch to the rollout threads (also for evaluations outside ``learn``)."""
        torch.set_num_threads(self.rollout)

    def enter_update(self) -> None:
        """Switch to the update threads."""
        torch.set_num_threads(self.update)

    def _on_training_start(self) -> None:  # the first evaluation comes before any rollout
        self.enter_rollout()

    def _on_rollout_start(self) -> None:
        self.enter_rollout()

    def _on_rollout_end(self) -> None:
        self.enter_update()

    def _on_training_end(self) -> None:  # the last rollback check: an evaluation, as the rest
        self.enter_rollout()

    def _on_step(self) -> bool:
        return True
