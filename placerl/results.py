"""The result schema: what training and evaluation return and write as ``result.json``.

:class:`TrainResult` (``placerl-train``, :func:`placerl.train.train`) and :class:`EvalResult`
(``placerl-eval``, :func:`placerl.evaluate.evaluate`) share :class:`GraphOutcome`, one per
graph, so reports read both; ``result.json`` names its ``kind`` and the schema version
(:data:`RESULT_SCHEMA`). Every placement a result stores is there twice: the index array (one
device index per node, in the graph's node order) and ``{op name: device name}``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from placerl._io import atomic_write_text
from placerl.errors import ConfigError

#: Bump when a field of ``result.json`` changes meaning. 2: nested run config, ``kind``,
#: placements by op name, infeasible baselines named.
RESULT_SCHEMA = 2
RESULT_KINDS = ("train", "eval")
#: The folder of a training run's checkpoint (``state.json`` and the files it names).
CHECKPOINT = "checkpoint"


def why_infeasible(simulation: Any) -> str:
    """What keeps a simulated placement (a ``SimResult``) from fitting, in words; empty when
    it fits."""
    if simulation.feasible:
        return ""
    kinds = []
    if (np.asarray(simulation.memory_excess) > 0).any():
        kinds.append("memory")
    if simulation.split_groups:
        kinds.append("colocation")
    if len(simulation.unsupported_nodes):
        kinds.append("device kind")
    if simulation.errors:
        kinds.append("failed run")
    return ", ".join(kinds) or "infeasible"


def placement_by_op(graph: Any, cluster: Any, placement: Sequence[int]) -> dict[str, str]:
    """``{op name: device name}`` of ``placement`` on ``graph`` (a CompGraph) and ``cluster``."""
    devices = [device.name for device in cluster.devices]
    return {name: devices[int(d)] for name, d in zip(graph.names, placement, strict=True)}


@dataclass(frozen=True)
class GraphOutcome:
    """How a placer did on one graph (runtimes in seconds).

    Attributes:
        graph: The graph's name.
        final_runtime: The final policy's greedy runtime (an evaluation: the placer's).
        sampled_runtime: The best of the final greedy and ``eval_samples`` sampled rollouts.
        best_runtime: The best runtime seen in any training episode or evaluation.
        best_placement: Its placement, one device index per node.
        best_placement_by_op: The same placement as ``{op name: device name}``.
        baselines: Runtime per baseline placer spec (an infeasible placement's penalized
            runtime: see ``infeasible``).
        infeasible: ``{baseline spec: why}`` for each baseline whose placement does not fit
            (``memory``, ``colocation``, ``device kind``, ``failed run``): its runtime is a
            penalty, not a runtime.
        final_infeasible: Why the final greedy placement does not fit (``memory``, ...);
            empty when it fits.
        best_infeasible: Why the best placement does not fit; empty when it fits.
        lower_bound: No placement of the graph runs faster (:func:`placerl.sim.lower_bound`;
            ``None`` where the objective has no bound).
    """

    graph: str
    final_runtime: float
    sampled_runtime: float
    best_runtime: float
    best_placement: list[int]
    baselines: dict[str, float]
    best_placement_by_op: dict[str, str] = field(default_factory=dict)
    infeasible: dict[str, str] = field(default_factory=dict)
    final_infeasible: str = ""
    best_infeasible: str = ""
    lower_bound: float | None = None

    @property
    def best_baseline(self) -> float:
        """The best baseline runtime."""
        return min(self.baselines.values())

    def speedups(self) -> dict[str, float]:
        """Baseline runtime / final greedy runtime, per baseline (> 1: the policy is faster)."""
        return {name: runtime / self.final_runtime for name, runtime in self.baselines.items()}


@dataclass(frozen=True)
class TrainResult:
    """What :func:`~placerl.train.train` returns and writes as ``result.json``.

    Attributes:
        config: The run configuration, as plain values (``RunConfig.to_dict``).
        graphs: One outcome per graph.
        curve: The evaluations: ``{"step", "runtimes" (greedy, per graph), "best" (the best
            runtime seen so far, per graph), "wall_s"}``, and ``"validation"`` (the score of
            ``validation_graphs``) when there are some.
        steps: Env steps trained (including resumed ones).
        timings: Seconds: ``warm_start``, ``train``, ``evaluate``, ``baselines``; and
            ``steps_per_s`` (env steps per second of training, updates included) and
            ``torch_threads`` (the intra-op threads it used).
        warm_start: The behaviour-cloning report (``None`` without a warm start).
        out_dir: Where the files are (``None`` if nowhere).
        policy_step: The step count of the final policy's weights (below ``steps`` when
            ``keep_best`` kept an earlier evaluation's).
        provenance: The git revision, command line, package versions, machine and date
            (:func:`placerl._provenance.provenance`).
        best_curve: ``{"step", "best", "feasible", "calls", "wall_s"}`` after every rollout
            (and after the final rollouts where they found better): the best runtime found so
            far per graph, in training episodes or evaluations, whether it fits, and the run's
            simulator calls and seconds by then (warm start and earlier processes' final
            rollouts included; runs written before these three lack them).
        simulator_calls: Every simulation made through the run's envs: ``training``,
            ``evaluation`` (greedy evaluations, rollback checks, warm-start episodes, final
            rollouts), ``validation`` and ``total``; ``{calls}`` in a baseline spec stands for
            ``total`` (:func:`placerl.train.simulator_calls`).
        model: The trained SB3 model with the weights the outcomes were measured with (not
            written to ``result.json``; ``out_dir/model.zip`` holds it when there is one).
            Its training env is closed: ``model.set_env(env)`` before ``model.learn``.
    """

    config: dict[str, Any]
    graphs: list[GraphOutcome]
    curve: list[dict[str, Any]]
    steps: int
    timings: dict[str, float]
    warm_start: dict[str, Any] | None = None
    out_dir: str | None = None
    policy_step: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    best_curve: list[dict[str, Any]] = field(default_factory=list)
    simulator_calls: dict[str, int] = field(default_factory=dict)
    model: Any = field(default=None, repr=False, compare=False)

    kind = "train"

    @property
    def final_runtime(self) -> float:
        """Mean final greedy runtime over the graphs."""
        return float(np.mean([g.final_runtime for g in self.graphs]))

    @property
    def best_runtime(self) -> float:
        """Mean best runtime over the graphs."""
        return float(np.mean([g.best_runtime for g in self.graphs]))

    @property
    def vs_best_baseline(self) -> float:
        """The geometric mean over graphs of the final greedy runtime over the best baseline's
        (below 1: the policy beats every baseline): what hyperparameter sweeps minimize."""
        return vs_best_baseline([(g.final_runtime, g.baselines) for g in self.graphs])

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without the model), with each graph's speedups."""
        return _to_dict(self)


@dataclass(frozen=True)
class EvalResult:
    """What :func:`~placerl.evaluate.evaluate` (``placerl-eval``) returns and writes.

    Attributes:
        config: ``{"graph", "cluster", "objective", "placer", "baselines"}``.
        graphs: One outcome per graph (the placer's runtime is ``final_runtime``).
        timings: Seconds: ``evaluate``.
        out_dir: Where ``result.json`` is (``None`` if nowhere).
        provenance: The git revision, command line, package versions, machine and date
            (:func:`placerl._provenance.provenance`).
    """

    config: dict[str, Any]
    graphs: list[GraphOutcome]
    timings: dict[str, float]
    out_dir: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    kind = "eval"

    @property
    def vs_best_baseline(self) -> float:
        """The geometric mean over graphs of the placer's runtime over the best baseline's."""
        return vs_best_baseline([(g.final_runtime, g.baselines) for g in self.graphs])

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with each graph's speedups."""
        return _to_dict(self)


Result = TrainResult | EvalResult


def _to_dict(result: Result) -> dict[str, Any]:
    out = {"kind": result.kind, "schema": RESULT_SCHEMA}
    for item in dataclasses.fields(result):
        if item.name != "model":
            out[item.name] = _plain(getattr(result, item.name))
    for record, outcome in zip(out["graphs"], result.graphs, strict=True):
        record["speedups"] = outcome.speedups()
    return json.loads(json.dumps(out))


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


def result_kind(data: Mapping[str, Any], path: str | Path = "result.json") -> str:
    """The kind (``train`` or ``eval``) of a ``result.json``'s contents.

    Raises:
        ConfigError: A result of another schema version (written by an older placerl).
    """
    schema = data.get("schema", 1)
    if schema != RESULT_SCHEMA or data.get("kind") not in RESULT_KINDS:
        raise ConfigError(
            f"{path} is a result of schema {schema}; this placerl reads schema "
            f"{RESULT_SCHEMA}: run the job again (force=true)"
        )
    return data["kind"]


def flat_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A result's nested config as ``{dotted key: value}`` (``env.kind``); the free mappings
    ``agent.hyperparams`` and ``agent.extractor_kwargs`` stay whole."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and key not in ("hyperparams", "extractor_kwargs"):
            flat.update(flat_config(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def vs_best_baseline(outcomes: Sequence[tuple[float, Mapping[str, float]]]) -> float:
    """The geometric mean of ``final runtime / best baseline runtime`` over ``(final runtime,
    {baseline: runtime})`` pairs, one per graph; ``nan`` when a graph has no baselines."""
    if any(not baselines for _, baselines in outcomes):
        return math.nan
    ratios = [final / min(baselines.values()) for final, baselines in outcomes]
    return float(np.exp(np.mean(np.log(ratios))))


def write_result(result: Result, out_dir: str | Path) -> Path:
    """Write ``result.json`` atomically into ``out_dir``; returns its path."""
    path = Path(out_dir) / "result.json"
    write_json(path, result.to_dict())
    return path


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON, atomically (a crash leaves the previous file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1))
