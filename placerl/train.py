"""``train(config) -> TrainResult``: train a policy on placement envs, top to bottom.

A plain function (the Hydra app wraps it): build vector envs from plain values, build the
agent (:func:`placerl.agents.make_agent`), optionally clone a baseline placer first, learn
with callbacks that track the best placement, evaluate greedily with masks and checkpoint,
then evaluate at the end against the baseline placers and write ``result.json``.

Files under ``out_dir`` (when given):

* ``checkpoint/model.zip`` + ``checkpoint/state.json`` (+ ``checkpoint/best_policy.pt``, the
  best evaluation's weights) - the latest checkpoint; ``resume=True`` continues from it: the
  step count, the learning-rate schedule, the best placements and weights and the learning
  curve carry on (the rollout buffer and RNG states restart). Resuming refuses a checkpoint
  made with another configuration (only the schedule may change: ``total_steps``, the time
  limit, evaluation and checkpoint intervals, the baselines).
* ``model.zip`` - the final model (a placer: ``place("policy", g, c, path=...)``).
* ``best_placement.json`` - the best placement per graph; ``result.json`` - the TrainResult.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from placerl._env_ids import ENV_KINDS, env_class
from placerl._io import atomic_write_text
from placerl._options import check_int, check_out_dir, check_spec_list
from placerl._provenance import provenance
from placerl.envs.case import OBSERVATION_VERSION
from placerl.errors import ConfigError
from placerl.sim import lower_bound

VEC_ENVS = ("dummy", "subproc")
#: The torch devices a policy may train on (SB3's ``auto`` picks CUDA when there is one).
TORCH_DEVICES = r"auto|cpu|cuda(:\d+)?|mps"


@dataclass(frozen=True)
class TrainConfig:
    """Everything :func:`train` needs, as plain values.

    Attributes:
        graph: A graph spec, or a list of them (one sampled per episode).
        cluster: A cluster spec.
        order: A traversal order name.
        objective: ``step_time`` or ``pipeline``.
        env: ``construct`` (``placerl/Placement-v0``), ``refine`` (``PlacementRefine-v0``) or
            ``dual`` (``PlacementDual-v0``, DOPPLER's select-then-place MDP) or ``one_shot``
            (``PlacementOneShot-v0``, GDP's).
        env_kwargs: Further env arguments (``reward``, ``memory``, ``reference``, ``initial``,
            ``passes``, ``max_nodes``, ...).
        start_from_best: Refine only: each training env starts every episode from the best
            placement it has found so far (Placeto's schedule,
            :class:`~placerl.envs.StartFromBest`); evaluations start from ``initial``.
        algo: An algorithm of :data:`placerl.agents.factory.ALGORITHMS`.
        extractor: ``gnn``, ``lstm``, ``mlp``, or ``None`` (SB3's; needs ``observation=flat``).
        head: ``devices`` or ``mlp`` (default: ``devices`` where the algorithm allows it).
        extractor_kwargs: Extractor options.
        hyperparams: Algorithm arguments over placerl's defaults.
        total_steps: Env steps to train for (all envs together).
        time_limit_s: Stop training after this many seconds of it, whatever the step count
            (0: no limit); the result says how many steps were done.
        n_envs: Parallel envs.
        vec_env: ``dummy`` (in process) or ``subproc`` (one process per env).
        seed: Seeds the agent, the envs and the warm start.
        warm_start: A placer spec to clone before RL, or a state expert of
            :data:`placerl.envs.experts.STATE_EXPERTS` (``best_move``, refine only;
            ``None``: no warm start).
        warm_start_epochs: Cloning epochs (of each fit).
        warm_start_rounds: DAgger rounds after the first fit
            (:func:`~placerl.agents.imitation.behaviour_clone`'s ``rounds``): the clone also
            learns the expert's actions in the states its own greedy episodes reach.
        rollback: After each PPO update, run the greedy policy on every graph and undo the
            update if its placements got worse (:class:`~placerl.agents.callbacks.Rollback`):
            the policy keeps what it learned, from a warm start or from scratch. Costs one
            greedy episode per checked graph (``rollback_graphs``) per update.
        rollback_graphs: Rollback checks this many training graphs, spread evenly over the
            list (0: all of them): on a family of hundreds of graphs a check of every graph
            costs tens of times the rollout it guards.
        eval_every: Greedy evaluation every this many steps (0: only at the end).
        keep_best: End with the weights of the best evaluation (also across resumes) rather
            than the last ones. The checkpoint keeps the last weights too, so resuming
            continues training where it stopped.
        validation_graphs: Graph specs kept out of training whose greedy placements, at each
            evaluation, score the weights ``keep_best`` chooses (early stopping on unseen
            graphs, as SB3's ``EvalCallback`` on a separate env; empty: the training graphs
            score them). A policy trained for a family fits its training graphs past the
            point where it places others best. They take the training env's padding.
        eval_samples: At the end, also the best of this many sampled rollouts per graph.
        checkpoint_every: Checkpoint every this many steps (0: only at the end).
        baselines: Placer specs to compare with at the end; ``{steps}`` in one stands for the
            env steps the run trained, at least 1 (``total_steps`` rounded up to whole
            rollouts, or fewer where ``time_limit_s`` stopped it), e.g. a search's
            ``max_evaluations={steps}`` for an equal budget. Results keep the spec as
            written (the same key in every run of a config; ``steps`` says the number).
        out_dir: Where files go (``None``: nowhere).
        resume: Continue from ``out_dir/checkpoint`` if there is one.
        device: Torch device.
        threads: Torch's intra-op threads in this process (0: automatic, the cores the
            process may use less those other processes keep busy; see
            :mod:`placerl.agents.threads`). Subprocess env workers always take one.
        rollout_threads: Threads while collecting rollouts and evaluating (0: ``threads``).
            One, the default, cost about 5% on a quiet machine and doubled the speed beside a
            busy process (``bench_training_speed.py --busy 1``), where a small batch's
            parallel regions wait for threads without a core.
        progress_bar: Show SB3's progress bar.
    """

    graph: str | Sequence[str] = "synthetic:cifar10?seed=0"
    cluster: str = "placeto?n_devices=4"
    order: str = "topo"
    objective: str = "step_time"
    env: str = "construct"
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    start_from_best: bool = False
    algo: str = "maskable_ppo"
    extractor: str | None = "gnn"
    head: str | None = None
    extractor_kwargs: Mapping[str, Any] = field(default_factory=dict)
    hyperparams: Mapping[str, Any] = field(default_factory=dict)
    total_steps: int = 20_000
    time_limit_s: float = 0.0
    n_envs: int = 8
    vec_env: str = "dummy"
    seed: int = 0
    warm_start: str | None = None
    warm_start_epochs: int = 100
    warm_start_rounds: int = 0
    rollback: bool = True
    rollback_graphs: int = 0
    eval_every: int = 2_000
    keep_best: bool = True
    validation_graphs: Sequence[str] = ()
    eval_samples: int = 0
    checkpoint_every: int = 5_000
    baselines: Sequence[str] = ("single_device", "random", "heft")
    out_dir: str | None = None
    resume: bool = False
    device: str = "auto"
    threads: int = 0
    rollout_threads: int = 1
    progress_bar: bool = False

    def __post_init__(self) -> None:
        for name in ("total_steps", "n_envs", "eval_every", "eval_samples", "checkpoint_every",
                     "warm_start_epochs", "warm_start_rounds", "rollback_graphs", "seed",
                     "threads", "rollout_threads"):  # fmt: skip
            at_least_one = name in ("n_envs", "warm_start_epochs")
            check_int(getattr(self, name), name, minimum=1 if at_least_one else 0)
        limit = self.time_limit_s
        if isinstance(limit, bool) or not (isinstance(limit, int | float) and limit >= 0):
            raise ConfigError(f"time_limit_s must be a number >= 0, got {self.time_limit_s!r}")
        if self.env not in ENV_KINDS:
            raise ConfigError(f"env must be one of {', '.join(ENV_KINDS)}, got {self.env!r}")
        if self.vec_env not in VEC_ENVS:
            raise ConfigError(f"vec_env must be one of {', '.join(VEC_ENVS)}, got {self.vec_env!r}")
        if self.start_from_best and self.env != "refine":
            raise ConfigError(
                f"start_from_best needs env='refine' (episodes that start from a placement), "
                f"got env={self.env!r}"
            )
        if self.resume and self.out_dir is None:
            raise ConfigError("resume=True needs an out_dir to resume from")
        if self.warm_start_rounds and self.warm_start is None:  # no expert, no clone to refit
            raise ConfigError(f"warm_start_rounds={self.warm_start_rounds} needs a warm_start "
                              "expert to label the rounds, got warm_start=None")  # fmt: skip
        for name in ("env_kwargs", "extractor_kwargs", "hyperparams"):
            if not isinstance(getattr(self, name), Mapping):
                raise ConfigError(
                    f"{name} must be a mapping of option names to values, got "
                    f"{getattr(self, name)!r}"
                )
        self._check_placers()
        check_spec_list(self.validation_graphs, "validation_graphs")
        if self.validation_graphs and not (self.keep_best and self.eval_every):
            raise ConfigError(
                "validation_graphs choose the weights keep_best keeps at each evaluation: they "
                f"need keep_best=True and eval_every > 0, got keep_best={self.keep_best}, "
                f"eval_every={self.eval_every}"
            )
        check_out_dir(self.out_dir)
        if not isinstance(self.device, str) or not re.fullmatch(TORCH_DEVICES, self.device):
            raise ConfigError(
                f"device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', "
                f"got {self.device!r}"
            )

    def _check_placers(self) -> None:
        """The baselines and the warm start name placers (or, the warm start, a state expert
        this env answers), checked now, not after training."""
        from placerl.baselines.references import parse_placer, with_steps
        from placerl.envs.experts import check_expert, is_state_expert

        check_spec_list(self.baselines, "baselines")
        placers = [with_steps(spec, 1) for spec in self.baselines]
        if is_state_expert(self.warm_start):
            check_expert(env_class(self.env), self.warm_start)
        elif self.warm_start:
            placers.append(self.warm_start)
        for spec in placers:
            parse_placer(spec)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build from a mapping (a resolved Hydra config), refusing unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"unknown train option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        out = dataclasses.asdict(self)
        out["graph"] = self.graph if isinstance(self.graph, str) else list(self.graph)
        out["baselines"] = list(self.baselines)
        out["validation_graphs"] = list(self.validation_graphs)
        return json.loads(json.dumps(out))

    def env_arguments(self, *, evaluation: bool = False) -> dict[str, Any]:
        """The env's constructor arguments (plain values, safe to send to subprocesses);
        for evaluations, without the env's training-only ones (``moves``)."""
        graph = self.graph if isinstance(self.graph, str) else list(self.graph)
        skipped = env_class(self.env).training_arguments if evaluation else ()
        kwargs = {k: v for k, v in self.env_kwargs.items() if k not in skipped}
        return {"graph": graph, "cluster": self.cluster, "order": self.order,
                "objective": self.objective, **kwargs}  # fmt: skip


@dataclass(frozen=True)
class GraphOutcome:
    """How training did on one graph (runtimes in seconds).

    Attributes:
        graph: The graph's name.
        final_runtime: The final policy's greedy runtime.
        sampled_runtime: The best of the final greedy and ``eval_samples`` sampled rollouts.
        best_runtime: The best runtime seen in any training episode or evaluation.
        best_placement: Its placement.
        baselines: Runtime per baseline placer spec.
        lower_bound: No placement of the graph runs faster (:func:`placerl.sim.lower_bound`;
            ``None`` where the objective has no bound): how much room the placers had.
    """

    graph: str
    final_runtime: float
    sampled_runtime: float
    best_runtime: float
    best_placement: list[int]
    baselines: dict[str, float]
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
    """What :func:`train` returns and writes as ``result.json``.

    Attributes:
        config: The configuration, as plain values.
        graphs: One outcome per graph.
        curve: The evaluations: ``{"step", "runtimes" (greedy, per graph), "best" (the best
            runtime seen so far, per graph), "wall_s"}``, and ``"validation"`` (the score of
            ``validation_graphs``) when there are some.
        best_curve: ``{"step", "best"}`` after every rollout: the best runtime found so far
            per graph, in training episodes or evaluations (a search's learning curve, with
            no greedy evaluation needed).
        steps: Env steps trained (including resumed ones).
        timings: Seconds: ``warm_start``, ``train``, ``evaluate``, ``baselines``; and
            ``steps_per_s`` (env steps per second of training, updates included) and
            ``torch_threads`` (the intra-op threads it used).
        warm_start: The behaviour-cloning report (``None`` without a warm start).
        out_dir: Where the files are (``None`` if nowhere).
        policy_step: The step count of the final policy's weights (below ``steps`` when
            ``keep_best`` kept an earlier evaluation's).
        provenance: Python and package versions and the git revision
            (:func:`placerl._provenance.provenance`).
    """

    config: dict[str, Any]
    graphs: list[GraphOutcome]
    curve: list[dict[str, Any]]
    steps: int
    timings: dict[str, float]
    warm_start: dict[str, Any] | None = None
    out_dir: str | None = None
    policy_step: int = 0
    provenance: dict[str, str | None] = field(default_factory=dict)
    best_curve: list[dict[str, Any]] = field(default_factory=list)

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
        (below 1: the policy beats every baseline): what hyperparameter sweeps minimize.
        ``nan`` when a graph has no baselines."""
        return vs_best_baseline([(g.final_runtime, g.baselines) for g in self.graphs])

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with each graph's speedups."""
        out = dataclasses.asdict(self)
        for record, outcome in zip(out["graphs"], self.graphs, strict=True):
            record["speedups"] = outcome.speedups()
        return out


def vs_best_baseline(outcomes: Sequence[tuple[float, Mapping[str, float]]]) -> float:
    """The geometric mean of ``final runtime / best baseline runtime`` over ``(final runtime,
    {baseline: runtime})`` pairs, one per graph; ``nan`` when a graph has no baselines."""
    if any(not baselines for _, baselines in outcomes):
        return math.nan
    ratios = [final / min(baselines.values()) for final, baselines in outcomes]
    return float(np.exp(np.mean(np.log(ratios))))


def changed_options(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The options of ``current`` that ``saved`` (an earlier run's config) holds with another
    value, outside :data:`RESUMABLE_CHANGES` (the schedule may change). An env argument that
    ``saved`` lacks (added by a later placerl) counts as its default there."""
    changed = [k for k in current if k not in RESUMABLE_CHANGES and k in saved
               and k != "env_kwargs" and saved[k] != current[k]]  # fmt: skip
    if "env_kwargs" in saved and "env_kwargs" in current:
        defaults = _env_defaults(current.get("env", "construct"))
        if {**defaults, **saved["env_kwargs"]} != {**defaults, **current["env_kwargs"]}:
            changed.append("env_kwargs")
    return sorted(changed)


def _env_defaults(kind: str) -> dict[str, Any]:
    """The default of each keyword argument of ``kind``'s env (its own or its bases') that has
    one."""
    if kind not in ENV_KINDS:
        return {}
    defaults: dict[str, Any] = {}
    for cls in reversed(env_class(kind).__mro__):
        if "__init__" in vars(cls) and cls.__module__.startswith("placerl."):
            parameters = inspect.signature(cls.__init__).parameters.values()
            defaults.update({p.name: p.default for p in parameters
                             if p.default is not inspect.Parameter.empty})  # fmt: skip
    return defaults


def is_evaluation(config: Mapping[str, Any]) -> bool:
    """Whether a result's (or a job's) config is an evaluation's (``placerl.evaluate``, which
    names a ``placer``) rather than a training run's."""
    return "placer" in config


def make_env(arguments: Mapping[str, Any], kind: str) -> Any:
    """Build one placement env from plain ``arguments`` (runs in vector-env subprocesses)."""
    return env_class(kind)(**arguments)


def _validation_env(config: TrainConfig, eval_env: Any) -> Any:
    """The env of ``config.validation_graphs`` (``None`` without them), padded as the training
    env is, so the policy reads its observations."""
    if not config.validation_graphs:
        return None
    arguments = {**config.env_arguments(evaluation=True), "graph": list(config.validation_graphs),
                 "max_nodes": eval_env.max_nodes, "max_edges": eval_env.max_edges}  # fmt: skip
    try:
        return make_env(arguments, config.env)
    except ConfigError as err:
        raise ConfigError(f"validation_graphs: {err}") from None


def _monitored(arguments: dict[str, Any], kind: str, start_from_best: bool = False) -> Any:
    from stable_baselines3.common.monitor import Monitor

    from placerl.envs import StartFromBest

    env = make_env(arguments, kind)
    return Monitor(StartFromBest(env) if start_from_best else env)


def _worker_env(arguments: dict[str, Any], kind: str, start_from_best: bool, *,
                environ: Mapping[str, str]) -> Any:  # fmt: skip
    from placerl._processes import adopt_environment
    from placerl.agents.threads import single_thread_worker

    adopt_environment(environ)
    single_thread_worker()
    return _monitored(arguments, kind, start_from_best)


def _vector_env(config: TrainConfig) -> Any:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from placerl._processes import start_method
    from placerl.agents.vec_env import PlacementVecEnv

    arguments = (config.env_arguments(), config.env, config.start_from_best)
    if config.vec_env == "subproc" and config.n_envs > 1:
        worker = functools.partial(_worker_env, *arguments, environ=dict(os.environ))
        return SubprocVecEnv([worker] * config.n_envs, start_method=start_method())
    return PlacementVecEnv([functools.partial(_monitored, *arguments)] * config.n_envs)


def train(config: TrainConfig | Mapping[str, Any], *,
          callbacks: Sequence[Any] = ()) -> TrainResult:  # fmt: skip
    """Train a policy as ``config`` says; see the module docstring for the files it writes.

    Args:
        config: The configuration (a mapping is checked by :meth:`TrainConfig.from_dict`).
        callbacks: Further SB3 callbacks (experiment tracking reaches training this way).

    Raises:
        ConfigError: A bad option (checked before any training starts).
        MissingExtraError: The ``rl`` extra is not installed.
    """
    from placerl._extras import require

    require("stable_baselines3", "placerl.train")
    from placerl.agents.callbacks import (
        BestPlacement,
        Checkpoint,
        Evaluate,
        PhaseThreads,
        Progress,
        Rollback,
        TimeBudget,
        TrackBest,
    )
    from placerl.agents.episodes import GreedyEpisodes, best_rollout
    from placerl.agents.factory import ALGORITHMS, in_memory_logger, make_agent
    from placerl.agents.imitation import behaviour_clone
    from placerl.agents.threads import set_torch_threads
    from placerl.agents.unchecked import unchecked_distributions

    if not isinstance(config, TrainConfig):
        config = TrainConfig.from_dict(config)
    threads = set_torch_threads(config.threads)
    phases = PhaseThreads(config.rollout_threads or threads, threads)
    out = Path(config.out_dir) if config.out_dir is not None else None
    eval_env = make_env(config.env_arguments(evaluation=True), config.env)
    validation = _validation_env(config, eval_env)  # refused now, not after cloning
    venv = _vector_env(config)
    state = _load_state(out, config) if config.resume else None
    timings: dict[str, float] = {"warm_start": 0.0, "train": 0.0}
    if state is not None:
        algo_cls = ALGORITHMS[config.algo].load()
        model = in_memory_logger(_load_checkpoint(
            algo_cls, out / CHECKPOINT / state["files"]["model"], venv, config.device, out))
        best, curve = BestPlacement.from_dict(state["best"]), state["curve"]
        best_curve = state.get("best_curve", [])
        timings.update(state["timings"])
        warm = state.get("warm_start")
    else:
        model = make_agent(config.algo, venv, config.extractor, head=config.head,
                           seed=config.seed, extractor_kwargs=config.extractor_kwargs,
                           device=config.device, **config.hyperparams)  # fmt: skip
        best, curve, best_curve, warm = BestPlacement(), [], [], None
        if config.warm_start is not None:
            start = time.perf_counter()
            report = behaviour_clone(model, eval_env, config.warm_start,
                                     epochs=config.warm_start_epochs, seed=config.seed,
                                     rounds=config.warm_start_rounds)  # fmt: skip
            warm = dataclasses.asdict(report)
            timings["warm_start"] = time.perf_counter() - start
    clock_start = time.perf_counter() - timings["train"]
    clock = lambda: time.perf_counter() - clock_start  # noqa: E731
    greedy = GreedyEpisodes(eval_env)  # shared: evaluations and checks run no weights twice
    evaluate = Evaluate(greedy, config.eval_every, curve, best, clock,
                        None if validation is None else GreedyEpisodes(validation))  # fmt: skip
    if state is not None and "keep_best" in state:
        evaluate.load_best(state["keep_best"], out / CHECKPOINT / state["files"]["best"])

    def state_of(best_file: Path) -> dict[str, Any]:
        return {"steps": int(model.num_timesteps), "best": best.to_dict(), "curve": curve,
                "best_curve": best_curve, "timings": timings, "warm_start": warm,
                "keep_best": evaluate.save_best(best_file), "config": config.to_dict(),
                "observation_version": OBSERVATION_VERSION}  # fmt: skip

    def save_checkpoint(model: Any) -> None:
        if out is None:
            return
        timings["train"] = clock()
        _write_checkpoint(out / CHECKPOINT, model, state_of)

    remaining = config.total_steps - model.num_timesteps
    if remaining > 0:
        guard = [Rollback(greedy, config.rollback_graphs)] if config.rollback else []
        progress = [Progress(remaining)] if config.progress_bar else []
        track = TrackBest(best, len(eval_env.graphs), best_curve)
        callbacks = [phases, *guard, *callbacks, track, evaluate,
                     Checkpoint(config.checkpoint_every, save_checkpoint),
                     TimeBudget(config.time_limit_s, clock), *progress]  # fmt: skip
        with unchecked_distributions():
            model.learn(remaining, callback=callbacks, reset_num_timesteps=state is None)
    timings["train"] = clock()
    trained_steps = int(model.num_timesteps)
    venv.close()
    start = time.perf_counter()
    phases.enter_rollout()
    evaluate.init_callback(model)
    evaluate.evaluate()
    if out is not None:  # the last weights, which resuming continues from
        _write_checkpoint(out / CHECKPOINT, model, state_of)
    policy_step = evaluate.restore_best() if config.keep_best else trained_steps
    final_runs = []
    for g in range(len(eval_env.graphs)):
        final, sampled = best_rollout(model, eval_env, graph=g, samples=config.eval_samples,
                                      greedy=greedy.rollouts(model, [g])[0])  # fmt: skip
        for rollout in (final, sampled):
            best.offer(g, rollout.runtime, rollout.feasible, rollout.placement, trained_steps)
        final_runs.append((final.runtime, sampled.runtime))
    found = [best.by_graph[g]["runtime"] for g in range(len(eval_env.graphs))]
    if not best_curve or best_curve[-1]["best"] != found:  # the final rollouts found better
        best_curve.append({"step": trained_steps, "best": found})
    timings["evaluate"] = time.perf_counter() - start
    phases.enter_update()
    start = time.perf_counter()
    baselines = [_baselines(graph, eval_env, config, trained_steps) for graph in eval_env.graphs]
    bounds = [lower_bound(eval_env.graph_case(g).model) for g in range(len(eval_env.graphs))]
    timings["baselines"] = time.perf_counter() - start
    timings["steps_per_s"] = (trained_steps / timings["train"]) if timings["train"] > 0 else 0.0
    timings["torch_threads"] = threads
    graphs = [
        GraphOutcome(graph=graph.name, final_runtime=final, sampled_runtime=sampled,
                     best_runtime=best.by_graph[g]["runtime"],
                     best_placement=best.by_graph[g]["placement"], baselines=baselines[g],
                     lower_bound=bounds[g])
        for g, (graph, (final, sampled)) in enumerate(zip(eval_env.graphs, final_runs,
                                                          strict=True))
    ]  # fmt: skip
    result = TrainResult(config.to_dict(), graphs, curve, trained_steps, timings, warm,
                         None if out is None else str(out), policy_step,
                         provenance(), best_curve)  # fmt: skip
    if out is not None:
        _write_checkpoint(out / CHECKPOINT, model, state_of)
        _save_model(model, out / "model.zip")
        _write_json(out / "best_placement.json", best.to_dict())
        write_result(result, out)
    return result


def _baselines(graph: Any, env: Any, config: TrainConfig, steps: int) -> dict[str, float]:
    """Each baseline placer's (penalized) runtime on ``graph``, from the shared cache, keyed
    by its spec as written and computed with the trained ``steps`` filled in."""
    from placerl.baselines.references import reference, with_steps

    return {spec: reference(graph, env.cluster, config.objective,
                            with_steps(spec, steps)).score
            for spec in config.baselines}  # fmt: skip


#: The folder of a run's checkpoint (``state.json`` and the files it names).
CHECKPOINT = "checkpoint"


def _write_checkpoint(folder: Path, model: Any,
                      state_of: Callable[[Path], dict[str, Any]]) -> None:  # fmt: skip
    """Write a checkpoint that a kill at any moment leaves whole.

    The model and the best weights go to files named by the step count, then ``state.json``
    (written atomically) names them, then older files go: until the new state is in place,
    the old one still names files that exist.
    """
    steps = int(model.num_timesteps)
    files = {"model": f"model-{steps}.zip", "best": f"best_policy-{steps}.pt"}
    _save_model(model, folder / files["model"])
    state = state_of(folder / files["best"])
    _write_json(folder / "state.json", {**state, "files": files})
    leftovers = (*folder.glob("model-*.zip"), *folder.glob("best_policy-*.pt"),
                 *folder.glob("*.partial*"))  # fmt: skip
    for old in leftovers:
        if old.name not in files.values():
            old.unlink(missing_ok=True)


def _save_model(model: Any, path: Path) -> None:
    """Save atomically: a crash mid-save leaves the previous file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial.zip")
    model.save(partial)
    os.replace(partial, path)


def write_result(result: TrainResult, out_dir: Path) -> Path:
    """Write ``result.json`` atomically into ``out_dir``; returns its path."""
    path = out_dir / "result.json"
    _write_json(path, result.to_dict())
    return path


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1))


#: Options a resumed run may change: the schedule, not what is learned or how.
RESUMABLE_CHANGES = ("total_steps", "time_limit_s", "eval_every", "eval_samples", "keep_best",
                     "checkpoint_every", "baselines", "out_dir", "resume", "device",
                     "threads", "rollout_threads", "progress_bar")  # fmt: skip


def _load_state(out: Path, config: TrainConfig) -> dict[str, Any] | None:
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
    changed = changed_options(data.get("config", {}), config.to_dict())
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
    return (f"{out} holds a checkpoint trained on observations {which}; this placerl gives "
            f"version {OBSERVATION_VERSION} (their features changed): use another out_dir, or "
            "resume=False to start afresh there")  # fmt: skip


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
