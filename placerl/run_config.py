"""The structured config of the experiment apps, and its translation to :class:`TrainConfig`.

Hydra composes ``configs/`` (one group per concern) on top of :class:`RunConfig`, so a typo or
a wrong type in a YAML file or on the command line fails before any work, with a message that
names the key. This module is plain dataclasses: it imports neither Hydra nor OmegaConf, and
:func:`to_train_config` turns a composed config (as plain values) into the
:class:`~placerl.train.TrainConfig` that :func:`~placerl.train.train` takes.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placerl.errors import ConfigError
from placerl.train import TrainConfig


@dataclass
class GraphGroup:
    """``graph/``: what to place.

    Attributes:
        spec: A graph spec (``load_graph``), or a list of them (one sampled per episode).
    """

    spec: Any = "synthetic:layered?n=100&seed=0"


@dataclass
class ClusterGroup:
    """``cluster/``: where to place it.

    Attributes:
        spec: A cluster spec (``load_cluster``).
    """

    spec: str = "placeto?n_devices=4"


@dataclass
class OrderGroup:
    """``order/``: the traversal order the env asks about the nodes in.

    Attributes:
        name: A registered order (``placerl.graph.orders.ORDERS``).
        seed: Seed of the randomized orders.
    """

    name: str = "topo"
    seed: int = 0


@dataclass
class EnvGroup:
    """``env/``: the MDP (see the env docstrings for each argument).

    Attributes:
        kind: ``construct`` (``placerl/Placement-v0``), ``refine`` (``PlacementRefine-v0``),
            ``dual`` (``PlacementDual-v0``), ``one_shot`` (``PlacementOneShot-v0``) or
            ``hierarchical`` (``PlacementHierarchical-v0``).
        objective: ``step_time`` or ``pipeline``.
        reward: A registered reward.
        reference: The placer whose runtime rewards are measured against.
        memory: ``mask`` or ``penalty``.
        observation: ``graph`` or ``flat``.
        initial: Refine only: the placement episodes start from.
        start_from_best: Refine only: training episodes start from the best placement found
            so far (Placeto's schedule).
        passes: Refine only: passes over the nodes per episode.
        moves: Refine only: steps per episode instead of whole passes (``None``: passes),
            from a random node of the order.
        undo_worse: Refine only: a move that makes the placement slower is undone at once.
        groups: Hierarchical only: how many groups the grouper fills (``None``: 16, or
            ``max_nodes`` if fewer).
        max_nodes: Padding (``None``: the largest graph's size).
        max_edges: Padding (``None``: the largest graph's size).
    """

    kind: str = "construct"
    objective: str = "step_time"
    reward: str = "log_speedup"
    reference: str = "single_device"
    memory: str = "mask"
    observation: str = "graph"
    initial: str = "single_device"
    start_from_best: bool = False
    passes: int = 1
    moves: int | None = None
    undo_worse: bool = False
    groups: int | None = None
    max_nodes: int | None = None
    max_edges: int | None = None


@dataclass
class AgentGroup:
    """``agent/``: the learner.

    Attributes:
        algo: An algorithm of ``placerl.agents.factory.ALGORITHMS``.
        extractor: ``gnn``, ``lstm``, ``mlp``, or ``None`` (SB3's; needs ``observation=flat``).
        head: ``devices`` or ``mlp`` (``None``: ``devices`` where the algorithm allows it).
        extractor_kwargs: Extractor options.
        hyperparams: Algorithm arguments over placerl's defaults.
        warm_start: A placer to clone before RL, or the refine env's state expert ``best_move``
            (one best-improvement step; ``None``: none). ``best_of`` by default: the
            policy starts from the best classic placement of the graph, and rollback keeps it
            from losing it (on the main job PPO then improved the clone's 25.03 ms to HEFT's
            24.82 and held it; from scratch it stopped at 27.57).
        warm_start_epochs: Cloning epochs (of each fit).
        warm_start_rounds: DAgger rounds after the first fit: the clone plays the graphs,
            the expert labels the states it reaches, and it is fitted again on all samples.
        rollback: Undo PPO updates that make the greedy placements worse
            (:attr:`placerl.train.TrainConfig.rollback`).
        rollback_graphs: Graphs each rollback check runs on (0: all;
            :attr:`placerl.train.TrainConfig.rollback_graphs`).
    """

    algo: str = "maskable_ppo"
    extractor: str | None = "gnn"
    head: str | None = None
    extractor_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)
    warm_start: str | None = "best_of"
    warm_start_epochs: int = 100
    warm_start_rounds: int = 0
    rollback: bool = True
    rollback_graphs: int = 0


@dataclass
class LoggerGroup:
    """``logger/``: experiment tracking.

    Attributes:
        kind: ``none`` or ``wandb``.
        project: The wandb project.
        entity: The wandb entity (``None``: your default).
        mode: ``offline`` (the default: no account needed; ``wandb sync`` later), ``online``
            or ``disabled``; the ``WANDB_MODE`` environment variable overrides it.
    """

    kind: str = "none"
    project: str = "placerl"
    entity: str | None = None
    mode: str = "offline"


@dataclass
class RunConfig:
    """A training run: the groups plus the schedule.

    The schedule fields are those of :class:`~placerl.train.TrainConfig` of the same names;
    ``force`` trains again, from scratch, a job whose run directory already holds a
    ``result.json`` (skipped otherwise, so that re-running a sweep runs only what is
    unfinished; an unfinished job resumes from its checkpoint).
    """

    graph: GraphGroup = field(default_factory=GraphGroup)
    cluster: ClusterGroup = field(default_factory=ClusterGroup)
    order: OrderGroup = field(default_factory=OrderGroup)
    env: EnvGroup = field(default_factory=EnvGroup)
    agent: AgentGroup = field(default_factory=AgentGroup)
    logger: LoggerGroup = field(default_factory=LoggerGroup)
    seed: int = 0
    total_steps: int = 20_000
    time_limit_s: float = 0.0
    n_envs: int = 8
    vec_env: str = "dummy"
    eval_every: int = 2_000
    eval_samples: int = 8
    keep_best: bool = True
    validation_graphs: list[str] = field(default_factory=list)
    checkpoint_every: int = 5_000
    baselines: list[str] = field(default_factory=lambda: ["single_device", "random", "heft"])
    resume: bool = True
    device: str = "auto"
    threads: int = 0
    rollout_threads: int = 1
    progress_bar: bool = True
    force: bool = False


def env_arguments(env: EnvGroup, order: OrderGroup) -> dict[str, Any]:
    """The env's keyword arguments beyond graph, cluster, order and objective."""
    kwargs = {"reward": env.reward, "reference": env.reference, "memory": env.memory,
              "observation": env.observation, "order_seed": order.seed}  # fmt: skip
    kwargs.update({k: v for k, v in (("max_nodes", env.max_nodes),
                                     ("max_edges", env.max_edges)) if v is not None})  # fmt: skip
    from placerl._env_ids import env_class

    kwargs.update({name: getattr(env, name) for name in env_class(env.kind).extra_arguments})
    return kwargs


def to_train_config(run: RunConfig, out_dir: str | None) -> TrainConfig:
    """The :class:`TrainConfig` of a composed run, writing under ``out_dir``.

    ``resume`` applies only with an ``out_dir`` (there is nothing to resume from otherwise).
    """
    graph = run.graph.spec if isinstance(run.graph.spec, str) else list(run.graph.spec)
    agent = run.agent
    return TrainConfig(
        graph=graph, cluster=run.cluster.spec, order=run.order.name,
        objective=run.env.objective, env=run.env.kind,
        env_kwargs=env_arguments(run.env, run.order), start_from_best=run.env.start_from_best,
        algo=agent.algo,
        extractor=agent.extractor, head=agent.head,
        extractor_kwargs=dict(agent.extractor_kwargs), hyperparams=dict(agent.hyperparams),
        total_steps=run.total_steps, time_limit_s=run.time_limit_s, n_envs=run.n_envs,
        vec_env=run.vec_env, seed=run.seed, warm_start=agent.warm_start,
        warm_start_epochs=agent.warm_start_epochs, warm_start_rounds=agent.warm_start_rounds,
        rollback=agent.rollback,
        rollback_graphs=agent.rollback_graphs,
        eval_every=run.eval_every,
        keep_best=run.keep_best, validation_graphs=list(run.validation_graphs),
        eval_samples=run.eval_samples,
        checkpoint_every=run.checkpoint_every, baselines=tuple(run.baselines),
        out_dir=out_dir, resume=run.resume and out_dir is not None, device=run.device,
        threads=run.threads, rollout_threads=run.rollout_threads,
        progress_bar=run.progress_bar,
    )  # fmt: skip


@dataclass
class EvalRunConfig:
    """An evaluation run (``placerl-eval``): a placer or a trained policy on graphs.

    Attributes:
        placer: A placer spec; a trained policy is ``policy?path=<model.zip>`` (add
            ``&search=local&budget=2000`` for a search at inference, counted in simulator
            evaluations; :mod:`placerl.agents.search`).
        objective: ``step_time`` or ``pipeline``.
        baselines: Placer specs to compare with.
        force: Run even if the run directory already holds a ``result.json``.
    """

    graph: GraphGroup = field(default_factory=GraphGroup)
    cluster: ClusterGroup = field(default_factory=ClusterGroup)
    logger: LoggerGroup = field(default_factory=LoggerGroup)
    placer: str = "heft"
    objective: str = "step_time"
    baselines: list[str] = field(default_factory=lambda: ["single_device", "random", "heft"])
    force: bool = False


def check_known_keys(values: Mapping[str, Any], schema: type, prefix: str = "") -> None:
    """Refuse keys that no field of the dataclass ``schema`` declares, into its nested groups.

    Hydra lets ``+key=value`` add a key the schema lacks, and the structured config then drops
    it without a word: a mistyped ``+total_step=4000`` would train the default 20k steps. Free
    mappings (``hyperparams``, ``extractor_kwargs``) are checked later by what reads them.

    Raises:
        ConfigError: An unknown key, named with its path and the closest known one.
    """
    fields = {f.name for f in dataclasses.fields(schema)}
    types = typing.get_type_hints(schema)
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in fields:
            close = difflib.get_close_matches(str(key), sorted(fields), n=1)
            hint = f"; did you mean {prefix}{close[0]}?" if close else ""
            raise ConfigError(
                f"unknown option {path!r}{hint} (known here: {', '.join(sorted(fields))})"
            )
        if dataclasses.is_dataclass(types[key]) and isinstance(value, Mapping):
            check_known_keys(value, types[key], prefix=f"{path}.")
