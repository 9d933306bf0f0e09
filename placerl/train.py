"""``train(config) -> TrainResult``: train a policy on placement envs, top to bottom.

A plain function (the Hydra app wraps it). Its steps, in order:

1. :func:`build_envs`: the evaluation env, the validation env and the training vector env,
   from the run's plain values.
2. :func:`start_agent`: a new agent (:func:`placerl.agents.make_agent`), warm-started by
   cloning a placer first, or the agent and progress of the checkpoint to resume.
3. :func:`learn`: SB3's ``learn`` with the callbacks that track the best placement, evaluate
   greedily, roll back updates that make placements worse, checkpoint and stop on the time
   limit. Extra callbacks (``train(..., callbacks=[...])``, e.g. experiment tracking) are
   SB3 callbacks: the extension point.
4. :func:`final_rollouts`: the last evaluation, the kept weights' greedy and sampled
   rollouts.
5. :func:`compare`: the baseline placers and the lower bound on every graph.

Files under ``out_dir`` (when given):

* ``checkpoint/state.json`` and the files it names: the latest checkpoint; ``resume=True``
  continues from it (the step count, learning-rate schedule, best placements and weights and
  the learning curve carry on; the rollout buffer and RNG states restart). Resuming refuses
  a checkpoint made with another configuration (only the schedule may change).
* ``model.zip``: the final model (a placer: ``place("policy", g, c, path=...)``).
* ``best_placement.json``: the best placement per graph, as device indices and as
  ``{op name: device name}``; ``result.json``: the :class:`~placerl.results.TrainResult`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from placerl._env_ids import env_class
from placerl._options import check_out_dir
from placerl._provenance import provenance
from placerl.envs.case import OBSERVATION_VERSION
from placerl.errors import ConfigError
from placerl.results import (
    CHECKPOINT,
    RESULT_SCHEMA,
    GraphOutcome,
    TrainResult,
    placement_by_op,
    why_infeasible,
    write_json,
    write_result,
)
from placerl.run_config import RunConfig
from placerl.sim import lower_bound


@dataclass
class RunProgress:
    """What a run has found so far; a checkpoint saves it and resuming restores it.

    Attributes:
        best: The best placement per graph (:class:`~placerl.agents.callbacks.BestPlacement`).
        curve: The greedy evaluations (:attr:`TrainResult.curve`).
        best_curve: The best runtimes after each rollout (:attr:`TrainResult.best_curve`).
        timings: Seconds spent so far per phase.
        warm_start: The behaviour-cloning report (``None`` without a warm start).
        simulator_calls: The simulations of the envs of earlier processes (a resumed run's
            count goes on from them), by env: ``training``, ``evaluation``, ``validation``.
    """

    best: Any
    curve: list[dict[str, Any]] = field(default_factory=list)
    best_curve: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=lambda: {"warm_start": 0.0, "train": 0.0})
    warm_start: dict[str, Any] | None = None
    simulator_calls: dict[str, int] = field(default_factory=dict)


class FinalRollout(NamedTuple):
    """A graph's rollouts of the kept weights: the greedy one's runtime and placement, and
    the best runtime of it and ``eval_samples`` sampled ones."""

    runtime: float
    sampled_runtime: float
    placement: Any


@dataclass
class Envs:
    """The envs of a run: ``evaluation`` (greedy episodes, every graph), ``validation``
    (``validation_graphs``, or ``None``) and ``training`` (the SB3 vector env)."""

    evaluation: Any
    validation: Any
    training: Any
    trained_calls: int | None = None

    def training_simulations(self) -> int:
        """The simulations of the training envs (their last count once closed)."""
        if self.trained_calls is not None:
            return self.trained_calls
        return int(sum(self.training.get_attr("simulations")))

    def close_training(self) -> None:
        """Close the training envs, keeping their count of simulations."""
        self.trained_calls = self.training_simulations()
        self.training.close()


def train(
    config: RunConfig | Mapping[str, Any] | None = None,
    *,
    out_dir: str | None = None,
    callbacks: Sequence[Any] = (),
) -> TrainResult:
    """Train a policy as ``config`` says; see the module docstring for the steps and files.

    Args:
        config: A :class:`~placerl.run_config.RunConfig`, or a mapping over the main job
            (``{"total_steps": 4000, "env": {"reward": "log_speedup"}}``; see
            :meth:`RunConfig.from_dict <placerl.run_config.RunConfig.from_dict>`);
            ``None``: the main job.
        out_dir: Where files go (``None``: nowhere; the result still holds the model).
        callbacks: Further SB3 callbacks (experiment tracking reaches training this way).

    Returns:
        The result, with the trained model as :attr:`TrainResult.model`.

    Raises:
        ConfigError: A bad option (checked before any training starts).
        MissingExtraError: The ``rl`` extra is not installed.
    """
    from placerl._extras import require

    require("stable_baselines3", "placerl.train")
    from placerl.agents.callbacks import PhaseThreads
    from placerl.agents.threads import set_torch_threads

    run = RunConfig.from_dict(config if config is not None else {}).check()
    check_out_dir(out_dir)
    out = Path(out_dir) if out_dir is not None else None
    threads = set_torch_threads(run.threads)
    phases = PhaseThreads(run.rollout_threads or threads, threads)
    envs = build_envs(run)
    model, progress, state = start_agent(run, envs, out)
    evaluate = learn(run, model, envs, progress, out, state, phases, callbacks)
    envs.close_training()
    steps = int(model.num_timesteps)
    save = functools.partial(_checkpoint, run, out, progress, evaluate, envs, None)
    phases.enter_rollout()
    policy_step, finals = final_rollouts(run, model, envs, progress, evaluate, save)
    phases.enter_update()
    calls = simulator_calls(envs, progress)
    graphs = compare(run, envs.evaluation, progress, finals, steps, calls["total"])
    progress.timings["torch_threads"] = threads
    trained = progress.timings["train"]
    progress.timings["steps_per_s"] = steps / trained if trained > 0 else 0.0
    result = TrainResult(
        run.to_dict(),
        graphs,
        progress.curve,
        steps,
        progress.timings,
        progress.warm_start,
        None if out is None else str(out),
        policy_step,
        provenance(),
        progress.best_curve,
        calls,
        model=model,
    )
    if out is not None:
        _save_model(model, out / "model.zip")
        write_json(out / "best_placement.json", {g.graph: _placement_record(g) for g in graphs})
        write_result(result, out)
    return result


def build_envs(run: RunConfig) -> Envs:
    """The run's envs; a bad env option or validation graph fails here, before any work."""
    evaluation = make_env(run.env_arguments(evaluation=True), run.env.kind)
    validation = None
    if run.validation_graphs:  # padded as the training env, so the policy reads them
        arguments = {
            **run.env_arguments(evaluation=True),
            "graph": list(run.validation_graphs),
            "max_nodes": evaluation.max_nodes,
            "max_edges": evaluation.max_edges,
        }
        try:
            validation = make_env(arguments, run.env.kind)
        except ConfigError as err:
            raise ConfigError(f"validation_graphs: {err}") from None
    return Envs(evaluation, validation, _vector_env(run))


def start_agent(run: RunConfig, envs: Envs, out: Path | None) -> tuple[Any, RunProgress, Any]:
    """The agent to train and its progress: the checkpoint's when resuming from one, else a
    new agent, warm-started as ``agent.warm_start`` says. Also returns the checkpoint state
    (``None`` for a new agent)."""
    from placerl.agents.callbacks import BestPlacement
    from placerl.agents.factory import ALGORITHMS, in_memory_logger, make_agent
    from placerl.agents.imitation import behaviour_clone

    state = _load_state(out, run) if run.resume and out is not None else None
    if state is not None:
        algo = ALGORITHMS[run.agent.algo].load()
        path = out / CHECKPOINT / state["files"]["model"]
        model = in_memory_logger(_load_checkpoint(algo, path, envs.training, run.device, out))
        progress = RunProgress(
            BestPlacement.from_dict(state["best"]),
            state["curve"],
            state.get("best_curve", []),
            dict(state["timings"]),
            state.get("warm_start"),
            state.get("simulator_calls", {}),
        )
        return model, progress, state
    agent = run.agent
    model = make_agent(
        agent.algo,
        envs.training,
        agent.extractor,
        head=agent.head,
        seed=run.seed,
        extractor_kwargs=dict(agent.extractor_kwargs),
        device=run.device,
        **agent.hyperparams,
    )
    progress = RunProgress(BestPlacement())
    if agent.warm_start is not None:
        start = time.perf_counter()
        report = behaviour_clone(
            model,
            envs.evaluation,
            agent.warm_start,
            epochs=agent.warm_start_epochs,
            seed=run.seed,
            rounds=agent.warm_start_rounds,
        )
        progress.warm_start = dataclasses.asdict(report)
        progress.timings["warm_start"] = time.perf_counter() - start
    return model, progress, None


def learn(
    run: RunConfig,
    model: Any,
    envs: Envs,
    progress: RunProgress,
    out: Path | None,
    state: Mapping[str, Any] | None,
    phases: Any,
    callbacks: Sequence[Any],
) -> Any:
    """Train ``model`` up to ``total_steps``: ``phases`` sets torch's threads per phase, the
    rollback guard comes next, then ``callbacks`` (the caller's), then placerl's own;
    returns the :class:`~placerl.agents.callbacks.Evaluate` callback (it keeps the best
    weights). ``progress.timings["train"]`` counts the seconds, resumed ones included."""
    from placerl.agents.callbacks import (
        Checkpoint,
        Evaluate,
        Rollback,
        TimeBudget,
        TrackBest,
    )
    from placerl.agents.callbacks import Progress as ProgressBar
    from placerl.agents.episodes import GreedyEpisodes
    from placerl.agents.unchecked import unchecked_distributions

    clock_start = time.perf_counter() - progress.timings["train"]
    clock = lambda: time.perf_counter() - clock_start  # noqa: E731
    greedy = GreedyEpisodes(envs.evaluation)  # shared: evaluations and checks run no weights twice
    validation = None if envs.validation is None else GreedyEpisodes(envs.validation)
    rollback = Rollback(greedy, run.agent.rollback_graphs) if run.agent.rollback else None
    evaluate = Evaluate(
        greedy,
        run.eval_every,
        progress.curve,
        progress.best,
        clock,
        validation,
        weights_step=None if rollback is None else (lambda: rollback.kept_step),
    )
    if state is not None and "keep_best" in state:
        evaluate.load_best(state["keep_best"], out / CHECKPOINT / state["files"]["best"])
    save = functools.partial(_checkpoint, run, out, progress, evaluate, envs, clock)
    remaining = run.total_steps - model.num_timesteps
    if remaining > 0:
        guard = [] if rollback is None else [rollback]
        bar = [ProgressBar(remaining)] if run.progress_bar else []
        track = TrackBest(
            progress.best,
            len(envs.evaluation.graphs),
            progress.best_curve,
            count_calls=lambda: simulator_calls(envs, progress)["total"],
            clock=lambda: run_seconds(progress) + clock(),  # earlier processes' too
        )
        every = [
            phases,
            *guard,
            *callbacks,
            track,
            evaluate,
            Checkpoint(run.checkpoint_every, save),
            TimeBudget(run.time_limit_s, clock),
            *bar,
        ]
        with unchecked_distributions():
            model.learn(remaining, callback=every, reset_num_timesteps=state is None)
    progress.timings["train"] = clock()
    return evaluate


def final_rollouts(
    run: RunConfig,
    model: Any,
    envs: Envs,
    progress: RunProgress,
    evaluate: Any,
    save: Callable[[Any], None],
) -> tuple[int, list[FinalRollout]]:
    """Evaluate the last weights and ``save`` them (resuming continues from them), keep the
    best evaluation's if ``keep_best``, then run them greedily and sampled on every graph.

    Returns:
        The step of the kept weights, and each graph's final rollouts.
    """
    from placerl.agents.episodes import best_rollout

    start = time.perf_counter()
    steps = int(model.num_timesteps)
    evaluate.init_callback(model)
    evaluate.evaluate()
    save(model)
    policy_step = evaluate.restore_best() if run.keep_best else evaluate.weights_step()
    finals = []
    for g in range(len(envs.evaluation.graphs)):
        greedy = evaluate.episodes.rollouts(model, [g])[0]
        final, sampled = best_rollout(
            model, envs.evaluation, graph=g, samples=run.eval_samples, greedy=greedy
        )
        for rollout in (final, sampled):
            progress.best.offer(g, rollout.runtime, rollout.feasible, rollout.placement, steps)
        finals.append(FinalRollout(final.runtime, sampled.runtime, final.placement))
    elapsed = time.perf_counter() - start
    progress.timings["evaluate"] = progress.timings.get("evaluate", 0.0) + elapsed
    point = progress.best.curve_point(len(finals), steps)
    if not progress.best_curve or progress.best_curve[-1]["best"] != point["best"]:
        point["calls"] = simulator_calls(envs, progress)["total"]  # the final rollouts found better
        point["wall_s"] = run_seconds(progress) + progress.timings["train"]
        progress.best_curve.append(point)
    save(model)
    return policy_step, finals


def run_seconds(progress: RunProgress) -> float:
    """The run's seconds outside training so far: the warm start and the final rollouts (of
    earlier processes too, for a resumed run)."""
    return progress.timings.get("warm_start", 0.0) + progress.timings.get("evaluate", 0.0)


def simulator_calls(envs: Envs, progress: RunProgress) -> dict[str, int]:
    """Every simulation the run made through its envs, by env, resumed processes' included:
    ``training`` (the rollouts), ``evaluation`` (greedy evaluations, rollback checks, the
    warm start's episodes, the final greedy and sampled rollouts), ``validation``, and
    ``total``. Not in it: the expert a warm start clones, a placer or the refine env's
    ``best_move`` (a simulation per device for each state it labels, on a copy of the env)."""
    now = {
        "training": envs.training_simulations(),
        "evaluation": envs.evaluation.simulations,
        "validation": envs.validation.simulations if envs.validation is not None else 0,
    }
    calls = {k: progress.simulator_calls.get(k, 0) + v for k, v in now.items()}
    return {**calls, "total": sum(calls.values())}


def compare(
    run: RunConfig,
    env: Any,
    progress: RunProgress,
    finals: Sequence[FinalRollout],
    steps: int,
    calls: int,
) -> list[GraphOutcome]:
    """Each graph's outcome beside the baseline placers (``{steps}`` and ``{calls}`` filled
    in with the run's budget, from the shared reference cache) and the lower bound."""
    from placerl.baselines.references import reference, resolve_budget

    start = time.perf_counter()
    specs = resolve_budget(run.baselines, steps, calls)
    outcomes = []
    for g, graph in enumerate(env.graphs):
        references = {
            spec: reference(graph, env.cluster, run.env.objective, resolved)
            for spec, resolved in zip(run.baselines, specs, strict=True)
        }
        best, final = progress.best.by_graph[g], finals[g]
        model = env.graph_case(g).model  # the env's cost model: measured runs stay cached
        why = functools.partial(_why_infeasible, model)
        outcomes.append(
            GraphOutcome(
                graph=graph.name,
                final_runtime=final.runtime,
                sampled_runtime=final.sampled_runtime,
                best_runtime=best["runtime"],
                best_placement=best["placement"],
                best_placement_by_op=placement_by_op(graph, env.cluster, best["placement"]),
                baselines={spec: ref.score for spec, ref in references.items()},
                infeasible={
                    spec: why(ref.placement) for spec, ref in references.items() if not ref.feasible
                },
                final_infeasible=why(final.placement),
                best_infeasible=why(best["placement"]),
                lower_bound=lower_bound(model),
            )
        )
    progress.timings["baselines"] = time.perf_counter() - start
    return outcomes


def _why_infeasible(model: Any, placement: Any) -> str:
    """Why ``placement`` does not fit under the cost ``model`` (empty when it fits)."""
    return why_infeasible(model.evaluate(np.asarray(placement), times=False))


def _placement_record(outcome: GraphOutcome) -> dict[str, Any]:
    """A graph's entry of ``best_placement.json``."""
    return {
        "runtime": outcome.best_runtime,
        "feasible": not outcome.best_infeasible,
        "placement": outcome.best_placement,
        "placement_by_op": outcome.best_placement_by_op,
    }


def make_env(arguments: Mapping[str, Any], kind: str) -> Any:
    """Build one placement env from plain ``arguments`` (runs in vector-env subprocesses)."""
    return env_class(kind)(**arguments)


def _monitored(arguments: dict[str, Any], kind: str, start_from_best: bool = False) -> Any:
    from stable_baselines3.common.monitor import Monitor

    from placerl.envs import StartFromBest

    env = make_env(arguments, kind)
    return Monitor(StartFromBest(env) if start_from_best else env)


def _worker_env(
    arguments: dict[str, Any], kind: str, start_from_best: bool, *, environ: Mapping[str, str]
) -> Any:
    from placerl._processes import adopt_environment
    from placerl.agents.threads import single_thread_worker

    adopt_environment(environ)
    single_thread_worker()
    return _monitored(arguments, kind, start_from_best)


def _vector_env(run: RunConfig) -> Any:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from placerl._processes import start_method
    from placerl.agents.vec_env import PlacementVecEnv

    arguments = (run.env_arguments(), run.env.kind, run.env.start_from_best)
    if run.vec_env == "subproc" and run.n_envs > 1:
        worker = functools.partial(_worker_env, *arguments, environ=dict(os.environ))
        return SubprocVecEnv([worker] * run.n_envs, start_method=start_method())
    return PlacementVecEnv([functools.partial(_monitored, *arguments)] * run.n_envs)


def _checkpoint(
    run: RunConfig,
    out: Path | None,
    progress: RunProgress,
    evaluate: Any,
    envs: Envs,
    clock: Callable[[], float] | None,
    model: Any,
) -> None:
    """Write the checkpoint of ``model`` and ``progress`` (nothing without an ``out``)."""
    if out is None:
        return
    if clock is not None:  # None after training: evaluation time is not training time
        progress.timings["train"] = clock()

    def state_of(best_file: Path) -> dict[str, Any]:
        return {
            "steps": int(model.num_timesteps),
            "best": progress.best.to_dict(),
            "curve": progress.curve,
            "best_curve": progress.best_curve,
            "timings": progress.timings,
            "warm_start": progress.warm_start,
            "simulator_calls": simulator_calls(envs, progress),
            "keep_best": evaluate.save_best(best_file),
            "config": run.to_dict(),
            "schema": RESULT_SCHEMA,
            "observation_version": OBSERVATION_VERSION,
        }

    _write_checkpoint(out / CHECKPOINT, model, state_of)


def _write_checkpoint(folder: Path, model: Any, state_of: Callable[[Path], dict[str, Any]]) -> None:
    """Write a checkpoint that a kill at any moment leaves whole.

    The model and the best weights go to files named by the step count, then ``state.json``
    (written atomically) names them, then older files go: until the new state is in place,
    the old one still names files that exist.
    """
    steps = int(model.num_timesteps)
    files = {"model": f"model-{steps}.zip", "best": f"best_policy-{steps}.pt"}
    _save_model(model, folder / files["model"])
    state = state_of(folder / files["best"])
    write_json(folder / "state.json", {**state, "files": files})
    leftovers = (
        *folder.glob("model-*.zip"),
        *folder.glob("best_policy-*.pt"),
        *folder.glob("*.partial*"),
    )
    for old in leftovers:
        if old.name not in files.values():
            old.unlink(missing_ok=True)


def _save_model(model: Any, path: Path) -> None:
    """Save atomically: a crash mid-save leaves the previous file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial.zip")
    model.save(partial)
    os.replace(partial, path)


#: Options a resumed run may change: the schedule, not what is learned or how.
RESUMABLE_CHANGES = (
    "total_steps",
    "time_limit_s",
    "eval_every",
    "eval_samples",
    "keep_best",
    "checkpoint_every",
    "baselines",
    "resume",
    "device",
    "threads",
    "rollout_threads",
    "progress_bar",
    "force",
    "logger",
)


def changed_options(
    saved: Mapping[str, Any], current: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> list[str]:
    """The options (dotted: ``env.reward``) of ``current`` that ``saved`` (an earlier run's
    config) holds with another value, outside :data:`RESUMABLE_CHANGES`. An option that
    ``saved`` lacks (added by a later placerl) counts as its schema default there
    (:meth:`RunConfig.schema`), which is what that run had."""
    if defaults is None:
        defaults = RunConfig.schema().to_dict()
    changed = []
    for key in current:
        if key in RESUMABLE_CHANGES or (key not in saved and key not in defaults):
            continue
        mine, theirs = current[key], saved.get(key, defaults.get(key))
        if (
            isinstance(mine, Mapping)
            and isinstance(theirs, Mapping)
            and key not in ("extractor_kwargs", "hyperparams")
        ):
            inner = changed_options(theirs, mine, defaults.get(key) or {})
            changed += [f"{key}.{name}" for name in inner]
        elif mine != theirs:
            changed.append(key)
    return sorted(changed)


def _load_state(out: Path, run: RunConfig) -> dict[str, Any] | None:
    """The checkpoint state to resume from, or ``None`` when there is none yet.

    Raises:
        ConfigError: The checkpoint was made with another configuration, or its state file is
            not JSON.
    """
    state = out / CHECKPOINT / "state.json"
    if not state.is_file():
        return None
    try:
        data = json.loads(state.read_text())
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{state} is not a checkpoint state ({err.msg} at line {err.lineno}); delete the "
            "checkpoint folder to start afresh, or resume=False"
        ) from None
    files = data.get("files", {}) if isinstance(data, dict) else {}
    if not (out / CHECKPOINT / str(files.get("model"))).is_file():
        raise ConfigError(
            f"{state} names no model file that exists (written by another placerl version?); "
            "delete the checkpoint folder to start afresh, or resume=False"
        )
    if data.get("schema", 1) != RESULT_SCHEMA:
        raise ConfigError(
            f"{out} holds a checkpoint of an older placerl (config schema {data.get('schema', 1)};"
            f" this placerl writes {RESULT_SCHEMA}): use another out_dir, or resume=False to "
            "start afresh there"
        )
    changed = changed_options(data.get("config", {}), run.to_dict())
    if changed:
        raise ConfigError(
            f"{out} holds a checkpoint of another configuration ({', '.join(changed)} differ); "
            "use another out_dir, or resume=False to start afresh there"
        )
    version = data.get("observation_version", OBSERVATION_VERSION)  # older: the load checks
    if version != OBSERVATION_VERSION:
        raise ConfigError(_other_observations(out, f"of version {version}"))
    return data


def _other_observations(out: Path, which: str) -> str:
    return (
        f"{out} holds a checkpoint trained on observations {which}; this placerl gives "
        f"version {OBSERVATION_VERSION} (their features changed): use another out_dir, or "
        "resume=False to start afresh there"
    )


def _load_checkpoint(algo_cls: Any, path: Path, venv: Any, device: str, out: Path) -> Any:
    """The checkpoint's model on ``venv``; one saved before checkpoints carried the
    observation version is checked by SB3 against the env's spaces.

    Raises:
        ConfigError: Its spaces are not the env's (saved by another placerl version).
    """
    try:
        return algo_cls.load(path, env=venv, device=device)
    except ValueError as err:
        if "spaces do not match" not in str(err):
            raise
        raise ConfigError(_other_observations(out, "of another shape")) from None
