"""Experiment tracking: one wandb run per job, which training reaches through an SB3 callback.

:data:`TRACKERS` maps the ``logger`` config group's ``kind`` to a tracker: ``none`` does
nothing, ``wandb`` opens one run per job (also inside Hydra multiruns: :meth:`Tracker.close`
runs in a ``finally``). The run is grouped by graph and cluster, tagged with order, agent and
objective (or placer), ``job_type`` ``train`` or ``eval``; its config is the resolved plain dict.
SB3's logger scalars (``rollout/``, ``train/``, ``time/``; ``time/fps`` as ``charts/SPS``) and
placerl's (``eval/``, ``sim/``) reach wandb through a writer added to SB3's logger when training
starts. At the end the run gets the runtimes and speedups as summaries, the best placement as a
``wandb.Table`` and the figures as images.

wandb runs offline by default (no account needed; the printed ``wandb sync`` command uploads
the run later). If wandb cannot start, training goes on and says so.
"""

from __future__ import annotations

import os
import shlex
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from placerl._registry import Registry
from placerl.results import Result
from placerl.run_config import LoggerGroup

#: SB3 logger keys renamed for wandb (CleanRL's namespaces).
RENAMED = {"time/fps": "charts/SPS"}

#: Metrics whose run summary is their minimum (lower runtimes are better).
MINIMIZED = ("eval/runtime_ms", "sim/best_runtime_ms")


def sync_command(folder: str | os.PathLike[str]) -> str:
    """The shell command that uploads an offline run folder, quoted for pasting (a sweep job's
    folder name holds ``=``, quotes and ``&`` from its overrides)."""
    return f"wandb sync {shlex.quote(str(folder))}"


class Tracker:
    """Records one job; this base class records nothing (the ``none`` logger)."""

    def callbacks(self) -> list[Any]:
        """SB3 callbacks to pass to :func:`~placerl.train.train`."""
        return []

    def log_result(self, result: Result, figures: Mapping[str, Path]) -> None:
        """Record the finished run: summaries, the best placement, the figures."""

    def close(self) -> None:
        """End the run (always called, also after a failure)."""


#: Experiment trackers by name (the run's ``logger``).
TRACKERS: Registry[type[Tracker]] = Registry("logger")
TRACKERS.register("none", Tracker)


def open_tracker(
    logger: LoggerGroup, config: Mapping[str, Any], out_dir: str, *, job_type: str = "train"
) -> Tracker:
    """The tracker of ``logger.kind`` for a ``job_type`` job (``train`` or ``eval``) with
    resolved ``config`` writing to ``out_dir``."""
    if logger.kind == "none":
        return Tracker()
    return TRACKERS[logger.kind](logger, config, out_dir, job_type)


def run_labels(config: Mapping[str, Any], job_type: str = "train") -> dict[str, Any]:
    """wandb's group, tags and name for a ``job_type`` job's resolved config (a ``RunConfig``
    or, ``eval``, an ``EvalRunConfig`` as a dict)."""
    spec = config["graph"]["spec"]
    graph = spec if isinstance(spec, str) else f"{len(spec)} graphs ({spec[0]}, ...)"
    group = f"{graph} @ {config['cluster']['spec']}"
    if job_type == "eval":
        return {
            "group": group,
            "tags": [f"placer:{config['placer']}", f"objective:{config['objective']}"],
            "name": f"eval-{config['placer']}",
        }
    agent = f"{config['agent']['algo']}_{config['agent']['extractor']}"
    order, objective = config["order"]["name"], config["env"]["objective"]
    return {
        "group": group,
        "tags": [f"order:{order}", f"agent:{agent}", f"objective:{objective}"],
        "name": f"{order}-{agent}-seed{config['seed']}",
    }


@TRACKERS.decorator("wandb")
class WandbTracker(Tracker):
    """One wandb run per job (see the module docstring)."""

    def __init__(
        self, logger: LoggerGroup, config: Mapping[str, Any], out_dir: str, job_type: str = "train"
    ) -> None:
        self.run = None
        try:
            import wandb

            mode = os.environ.get("WANDB_MODE", logger.mode)
            labels = run_labels(config, job_type)
            self.run = wandb.init(
                project=logger.project,
                entity=logger.entity,
                mode=mode,
                config=dict(config),
                dir=out_dir,
                job_type=job_type,
                reinit="finish_previous",
                **labels,
            )
            for metric in MINIMIZED:
                self.run.define_metric(metric, summary="min")
        except Exception as error:  # a tracker never stops training
            warnings.warn(
                f"wandb could not start ({error}); training goes on without it", stacklevel=2
            )
            self.run = None
            return
        if mode == "offline":
            print(
                f"wandb: offline run in {self.run.dir}; upload it with: "
                f"{sync_command(Path(self.run.dir).parent)}"
            )

    def callbacks(self) -> list[Any]:
        return [] if self.run is None else [_wandb_callback(self.run)]

    def log_result(self, result: Result, figures: Mapping[str, Path]) -> None:
        if self.run is None:
            return
        import wandb

        summary: dict[str, Any] = {"steps": getattr(result, "steps", 0), **result.timings}
        for outcome in result.graphs:
            prefix = "" if len(result.graphs) == 1 else f"{outcome.graph}/"
            summary[f"{prefix}final_runtime_ms"] = 1e3 * outcome.final_runtime
            summary[f"{prefix}best_runtime_ms"] = 1e3 * outcome.best_runtime
            for name, runtime in outcome.baselines.items():
                summary[f"{prefix}baseline/{name}_ms"] = 1e3 * runtime
            for name, speedup in outcome.speedups().items():
                summary[f"{prefix}speedup/{name}"] = speedup
        self.run.summary.update(summary)
        table = wandb.Table(
            columns=["graph", "node", "op", "device"],
            data=[
                [outcome.graph, v, op, device]
                for outcome in result.graphs
                for v, (op, device) in enumerate(outcome.best_placement_by_op.items())
            ],
        )
        images = {f"charts/{name}": wandb.Image(str(path)) for name, path in figures.items()}
        self.run.log({"placement": table, **images})

    def close(self) -> None:
        if self.run is not None:
            try:
                self.run.finish()
            except Exception as error:
                warnings.warn(f"wandb could not finish the run ({error})", stacklevel=2)
            self.run = None


def _wandb_callback(run: Any) -> Any:
    """An SB3 callback that adds a wandb writer to the model's logger when training starts."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import KVWriter

    class WandbWriter(KVWriter):
        def write(
            self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0
        ) -> None:
            metrics = {
                RENAMED.get(key, key): float(value)
                for key, value in key_values.items()
                if isinstance(value, int | float | np.number)
            }
            try:
                run.log(metrics, step=int(step))
            except Exception as error:  # a tracker never stops training
                warnings.warn(f"wandb could not log ({error})", stacklevel=2)

        def close(self) -> None:
            pass

    class WandbLogging(BaseCallback):
        writer = WandbWriter()

        def _on_training_start(self) -> None:  # once per logger: a model keeps its own
            if self.writer not in self.model.logger.output_formats:
                self.model.logger.output_formats.append(self.writer)

        def _on_step(self) -> bool:
            return True

    return WandbLogging()
