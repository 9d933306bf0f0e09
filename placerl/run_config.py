"""The one run configuration: what :func:`~placerl.train.train` takes and Hydra composes.

Python and the command line use the same names and nesting: ``env.kind``, ``order.name``,
``agent.hyperparams``, ``total_steps``. Each group is a dataclass whose defaults are the base
every option of ``configs/<group>/`` starts from; :class:`RunConfig`'s own defaults are the
main job, the default options that ``configs/train.yaml`` names (composed once from the
shipped YAML files by :func:`placerl.compose.main_job`, so each value is written in one
place), so that ``train({})``, ``train(RunConfig())`` and ``placerl-train`` with no
overrides run the same experiment.

This module is plain dataclasses and checks; it never imports Hydra at import time.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from placerl._options import check_int, check_spec_list
from placerl.errors import ConfigError

#: The torch devices a policy may train on (SB3's ``auto`` picks CUDA when there is one).
TORCH_DEVICES = r"auto|cpu|cuda(:\d+)?|mps"
VEC_ENVS = ("dummy", "subproc")
#: ``env.invalid_action``'s choices: :data:`placerl.envs.invalid.INVALID_ACTIONS`, here too so
#: that checking a configuration does not import the envs.
INVALID_ACTIONS = ("raise", "penalize", "nearest")
#: What a PlaceBench recipe trains on before it places (:attr:`BenchRunConfig.learn_on`).
LEARN_ON = ("family", "case")
#: The placers a recipe compares with unless it names its own.
BASE_BASELINES = ("single_device", "random", "heft")


def _main_job(group: str, config_name: str = "train") -> Any:
    """A default factory: the main job's value of ``group`` (a deep copy)."""

    def factory() -> Any:
        from placerl.compose import main_job

        return getattr(main_job(config_name), group)

    return factory


@dataclass
class GraphGroup:
    """``graph/``: what to place.

    Attributes:
        spec: A graph spec (``load_graph``), or a list of them (one sampled per episode).
    """

    spec: Any = "synthetic:cifar10?seed=0"


@dataclass
class ClusterGroup:
    """``cluster/``: where to place it.

    Attributes:
        spec: A cluster spec (``load_cluster``); on the command line quote one that holds
            ``=`` or ``&``: ``"cluster.spec='gpu8_nvlink?n_devices=4'"``.
    """

    spec: str = "gpu8_nvlink?n_devices=4"


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
    """``env/``: the MDP (see each env's docstring for its arguments).

    Attributes:
        kind: ``construct`` (``placerl/Placement-v1``), ``refine``, ``dual``, ``one_shot`` or
            ``hierarchical`` (``placerl/Placement<Kind>-v1``).
        objective: ``step_time``, ``pipeline`` or a measured objective.
        reward: A registered reward (``placerl.envs.REWARDS``).
        reference: The placer whose runtime rewards are measured against.
        memory: ``mask`` (devices that cannot hold a node are masked out) or ``penalty``.
        observation: ``graph`` (for placerl's extractors) or ``flat`` (any SB3 policy).
        invalid_action: What an action the mask forbids does: ``raise``, ``penalize`` or
            ``nearest`` (see the envs' docstrings; masked algorithms never take one).
        features: A feature set (``placerl.envs.feature_sets.FEATURE_SETS``): ``heft``
            (the observation shows HEFT's upward rank and list schedule) or ``plain`` (those
            columns are 0: the features of the papers placerl re-implements).
        init: Refine only: the placer whose placement episodes start from.
        start_from_best: Refine only: training episodes start from the best placement found
            so far (Placeto's schedule).
        passes: Refine only: passes over the nodes per episode.
        moves: Refine only: steps per training episode instead of whole passes (``None``:
            passes), from a random node of the order.
        undo_worse: Refine only: a move that makes the placement slower is undone at once.
        kick: Refine only: random units each training episode's start moves first (with
            ``start_from_best`` and ``undo_worse``: iterated local search, the policy climbing).
        groups: Hierarchical only: how many groups the grouper fills (``None``: 16, or
            ``max_nodes`` if fewer).
        max_nodes: Observation padding in nodes (``None``: the largest graph's size).
        max_edges: Observation padding in edges (``None``: the largest graph's size).
    """

    kind: str = "construct"
    objective: str = "step_time"
    reward: str = "log_speedup"
    reference: str = "single_device"
    memory: str = "mask"
    observation: str = "graph"
    invalid_action: str = "nearest"
    features: str = "heft"
    init: str = "single_device"
    start_from_best: bool = False
    passes: int = 1
    moves: int | None = None
    undo_worse: bool = False
    kick: int = 0
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
        warm_start: A placer to clone before RL, or the refine env's state expert
            ``best_move`` (``None``: none).
        warm_start_epochs: Cloning epochs (of each fit).
        warm_start_rounds: DAgger rounds after the first fit: the clone plays the graphs,
            the expert labels the states it reaches, and it is fitted again on all samples.
        rollback: After each PPO update, run the greedy policy on the graphs and undo the
            update if its placements got worse (one greedy episode per checked graph).
        rollback_graphs: Graphs each rollback check runs on, spread evenly over the list
            (0: all of them).
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
        mode: ``offline`` (no account needed; ``wandb sync`` later), ``online`` or
            ``disabled``; the ``WANDB_MODE`` environment variable overrides it.
    """

    kind: str = "none"
    project: str = "placerl"
    entity: str | None = None
    mode: str = "offline"


@dataclass
class PresetGroup:
    """``preset``: the paper a faithful recipe re-implements, and the options that make it so.

    A faithful recipe (``experiment=placeto_faithful``) names itself here and pins every
    option where it follows the paper rather than placerl's tuned choices. A run that names
    the preset yet sets a pinned option otherwise is refused (:meth:`RunConfig.check`): no
    result carries the paper's name for something the paper did not run. Unpinned options
    (the budget, the graphs, placerl's defaults where the paper is silent) stay free.
    ``preset.name=null`` drops the claim and with it the pins: the run is then a variant of
    the recipe (the ablation ladder's rungs, :mod:`placerl.bench.ablation`).

    Attributes:
        name: The preset a run claims to be (``None``: none, and ``fixed`` is not enforced).
        tuned: placerl's tuned recipe of the same paper (an ``experiment``), which takes the
            options the preset refuses.
        fixed: The pinned options, by dotted path (``agent.warm_start``,
            ``agent.hyperparams.n_epochs``), each with its value.
    """

    name: str | None = None
    tuned: str | None = None
    fixed: dict[str, Any] = field(default_factory=dict)


class _Unset:
    """The value of a key a free mapping (``agent.hyperparams``) does not hold."""

    def __repr__(self) -> str:
        return "(unset)"


#: What :meth:`RunConfig.option` returns for a key a free mapping does not hold.
UNSET = _Unset()


@dataclass
class RunConfig:
    """A training run: the groups plus the schedule. ``RunConfig()`` is the main job.

    Attributes:
        graph: What to place (:class:`GraphGroup`).
        cluster: Where (:class:`ClusterGroup`).
        order: The traversal order (:class:`OrderGroup`).
        env: The MDP (:class:`EnvGroup`).
        agent: The learner (:class:`AgentGroup`).
        logger: Experiment tracking (:class:`LoggerGroup`).
        preset: The faithful preset the run claims to be (:class:`PresetGroup`).
        seed: Seeds the agent, the envs and the warm start.
        total_steps: Env steps to train for (all envs together).
        time_limit_s: Stop training after this many seconds of it (0: no limit).
        n_envs: Parallel envs.
        vec_env: ``dummy`` (in process) or ``subproc`` (one process per env).
        eval_every: Greedy evaluation every this many steps (0: only at the end).
        eval_samples: At the end, also the best of this many sampled rollouts per graph.
        keep_best: End with the weights of the best evaluation rather than the last ones.
        validation_graphs: Graph specs kept out of training whose greedy placements choose
            the weights ``keep_best`` keeps (empty: the training graphs choose).
        checkpoint_every: Checkpoint every this many steps (0: only at the end).
        baselines: Placer specs to compare with at the end; ``{steps}`` in one stands for
            the env steps the run trained and ``{calls}`` for every simulation it made
            (training, evaluations, rollback checks, final rollouts; at least 1), for a
            search at an equal budget.
        resume: Continue from the run folder's checkpoint if there is one.
        device: Torch device (``auto``, ``cpu``, ``cuda``, ``cuda:<index>``, ``mps``).
        threads: Torch's intra-op threads in this process (0: the cores it may use).
        rollout_threads: Threads while collecting rollouts and evaluating (0: ``threads``).
        progress_bar: Show a progress bar while training.
        force: The apps train a finished run folder again, from scratch (a sweep re-run
            skips finished jobs otherwise).
    """

    graph: GraphGroup = field(default_factory=_main_job("graph"))
    cluster: ClusterGroup = field(default_factory=_main_job("cluster"))
    order: OrderGroup = field(default_factory=_main_job("order"))
    env: EnvGroup = field(default_factory=_main_job("env"))
    agent: AgentGroup = field(default_factory=_main_job("agent"))
    logger: LoggerGroup = field(default_factory=_main_job("logger"))
    preset: PresetGroup = field(default_factory=PresetGroup)
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
    baselines: list[str] = field(default_factory=_main_job("baselines"))
    resume: bool = True
    device: str = "auto"
    threads: int = 0
    rollout_threads: int = 1
    progress_bar: bool = True
    force: bool = False

    @classmethod
    def schema(cls) -> RunConfig:
        """The base Hydra composes ``configs/`` on: each group at its dataclass's defaults.

        OmegaConf merges mappings key by key, so a group option could not drop a key that the
        main job's ``agent.hyperparams`` holds: composition starts from the bare groups.
        """
        return cls(
            graph=GraphGroup(),
            cluster=ClusterGroup(),
            order=OrderGroup(),
            env=EnvGroup(),
            agent=AgentGroup(),
            logger=LoggerGroup(),
            baselines=list(BASE_BASELINES),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: RunConfig | None = None) -> RunConfig:
        """``base`` (the main job, ``RunConfig()``, by default) with ``data`` over it, as
        the command line's dotted overrides go over the composed run.

        A mapping updates key by key, into groups and into ``agent.hyperparams`` and
        ``agent.extractor_kwargs`` (as ``agent.hyperparams.n_steps=64`` does); a group
        dataclass replaces its group whole (``{"env": EnvGroup(kind="dual")}``). Leaving the
        main job's recipe, e.g. for another env kind, is easiest from the bare groups
        (``base=RunConfig.schema()``, what ``placerl-train '~experiment'`` starts from) or
        from a composed run (``compose_run("env=construct")``).

        Raises:
            ConfigError: An unknown key (with the closest known one), a flat name of the
                old ``TrainConfig`` (naming its new key), or a value of the wrong type.
        """
        if isinstance(data, RunConfig):
            return data
        if not isinstance(data, Mapping):
            raise ConfigError(f"a run config is a RunConfig or a mapping, got {data!r}")
        check_known_keys(data, cls)
        return _merged(base if base is not None else cls(), data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, nested as the fields are."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def check(self) -> RunConfig:
        """Check every value before any work; returns ``self``.

        Raises:
            ConfigError: Naming the key and the value.
        """
        for name in (
            "total_steps",
            "n_envs",
            "eval_every",
            "eval_samples",
            "checkpoint_every",
            "seed",
            "threads",
            "rollout_threads",
        ):
            check_int(getattr(self, name), name, minimum=1 if name == "n_envs" else 0)
        for name in ("warm_start_epochs", "warm_start_rounds", "rollback_graphs"):
            value = getattr(self.agent, name)
            check_int(value, f"agent.{name}", minimum=1 if name == "warm_start_epochs" else 0)
        check_int(self.order.seed, "order.seed")
        _check_specs("graph.spec", self.graph.spec, many=True)
        _check_specs("cluster.spec", self.cluster.spec, many=False)
        self._check_splits()
        limit = self.time_limit_s
        if isinstance(limit, bool) or not (isinstance(limit, int | float) and limit >= 0):
            raise ConfigError(f"time_limit_s must be a number >= 0, got {limit!r}")
        _check_choice("vec_env", self.vec_env, VEC_ENVS)
        _check_choice("env.invalid_action", self.env.invalid_action, INVALID_ACTIONS)
        from placerl._env_ids import ENV_KINDS
        from placerl.agents.factory import ALGORITHMS
        from placerl.envs.feature_sets import FEATURE_SETS
        from placerl.graph.orders import ORDERS

        _check_choice("env.kind", self.env.kind, tuple(ENV_KINDS))
        _check_choice("order.name", self.order.name, tuple(ORDERS))
        _check_choice("agent.algo", self.agent.algo, tuple(ALGORITHMS))
        _check_choice("env.features", self.env.features, tuple(FEATURE_SETS))
        if self.env.start_from_best and self.env.kind != "refine":
            raise ConfigError(
                "env.start_from_best needs env.kind='refine' (episodes that start from a "
                f"placement), got env.kind={self.env.kind!r}; to leave the main job's refine "
                f"env, give the whole group ({{'env': EnvGroup(kind={self.env.kind!r})}}, or "
                f"env={self.env.kind} on the command line)"
            )
        if self.agent.warm_start_rounds and self.agent.warm_start is None:
            raise ConfigError(
                f"agent.warm_start_rounds={self.agent.warm_start_rounds} needs "
                "an agent.warm_start expert to label the rounds, got None"
            )
        for name in ("extractor_kwargs", "hyperparams"):
            if not isinstance(getattr(self.agent, name), Mapping):
                raise ConfigError(
                    f"agent.{name} must be a mapping of option names to values, "
                    f"got {getattr(self.agent, name)!r}"
                )
        self._check_placers()
        self._check_preset()
        check_spec_list(self.validation_graphs, "validation_graphs")
        if self.validation_graphs and not (self.keep_best and self.eval_every):
            raise ConfigError(
                "validation_graphs choose the weights keep_best keeps at each evaluation: they "
                f"need keep_best=True and eval_every > 0, got keep_best={self.keep_best}, "
                f"eval_every={self.eval_every}"
            )
        if not isinstance(self.device, str) or not re.fullmatch(TORCH_DEVICES, self.device):
            raise ConfigError(
                f"device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or "
                f"'mps', got {self.device!r}"
            )
        return self

    def _check_splits(self) -> None:
        """The graphs that choose the kept weights are no benchmark test case."""
        from placerl.bench.guard import check_reads

        check_reads(self.validation_graphs, "selection")

    def option(self, path: str) -> Any:
        """The value of the option at dotted ``path`` (``agent.warm_start``,
        ``agent.hyperparams.n_epochs``): :data:`UNSET` for a key a free mapping lacks.

        Raises:
            ConfigError: A path through no field (with the fields known there).
        """
        value: Any = self
        for depth, key in enumerate(path.split(".")):
            if isinstance(value, Mapping):
                value = value.get(key, UNSET)
            elif dataclasses.is_dataclass(value) and key in value.__dataclass_fields__:
                value = getattr(value, key)
            else:
                where = ".".join(path.split(".")[:depth]) or "the run"
                known = ", ".join(getattr(value, "__dataclass_fields__", ())) or "none"
                raise ConfigError(
                    f"{path!r} is no option: {where} has no {key!r} (known there: {known})"
                )
        return value

    def _check_preset(self) -> None:
        """A run that names a preset holds every option the preset pins at its value."""
        preset = self.preset
        if preset.name is None:
            return
        if not isinstance(preset.fixed, Mapping):
            raise ConfigError(f"preset.fixed must map option paths to values, got {preset.fixed!r}")
        for path, pinned in preset.fixed.items():
            try:
                value = self.option(path)
            except ConfigError as error:
                raise ConfigError(f"preset {preset.name} pins {error}") from None
            if value != pinned:
                raise ConfigError(_refusal(preset, path, value, pinned))

    def training_graphs(self) -> list[str]:
        """``graph.spec`` as a list."""
        return [self.graph.spec] if isinstance(self.graph.spec, str) else list(self.graph.spec)

    def _check_placers(self) -> None:
        """The baselines and the warm start name placers (or, the warm start, a state expert
        the env answers), checked now rather than after training."""
        from placerl._env_ids import env_class
        from placerl.baselines.references import parse_placer, resolve_budget
        from placerl.envs.experts import check_expert, is_state_expert

        check_spec_list(self.baselines, "baselines")
        placers = resolve_budget(self.baselines, 1, 1)
        warm = self.agent.warm_start
        if is_state_expert(warm):
            check_expert(env_class(self.env.kind), warm)
        elif warm:
            placers.append(warm)
        for spec in placers:
            parse_placer(spec)

    def env_arguments(self, *, evaluation: bool = False) -> dict[str, Any]:
        """The env's constructor arguments as plain values (safe to send to subprocesses);
        for evaluations, without the env's training-only ones (``moves``)."""
        from placerl._env_ids import env_class

        env, cls = self.env, env_class(self.env.kind)
        graph = self.graph.spec if isinstance(self.graph.spec, str) else list(self.graph.spec)
        kwargs = {
            "graph": graph,
            "cluster": self.cluster.spec,
            "order": self.order.name,
            "order_seed": self.order.seed,
            "objective": env.objective,
            "reward": env.reward,
            "reference": env.reference,
            "memory": env.memory,
            "observation": env.observation,
            "invalid_action": env.invalid_action,
            "features": env.features,
        }
        kwargs.update(
            {k: v for k in ("max_nodes", "max_edges") if (v := getattr(env, k)) is not None}
        )
        skipped = cls.training_arguments if evaluation else ()
        kwargs.update(
            {name: getattr(env, name) for name in cls.extra_arguments if name not in skipped}
        )
        return kwargs


@dataclass
class EvalRunConfig:
    """An evaluation run (``placerl-eval``): a placer or a trained policy on graphs.

    Attributes:
        graph: What to place (:class:`GraphGroup`).
        cluster: Where (:class:`ClusterGroup`).
        logger: Experiment tracking (:class:`LoggerGroup`).
        placer: A placer spec; a trained policy is ``policy?path=<model.zip>`` (add
            ``&search=local&budget=2000`` for a search at inference, counted in simulator
            evaluations).
        objective: ``step_time`` or ``pipeline``.
        baselines: Placer specs to compare with.
        force: Run even if the run directory already holds a ``result.json``.
    """

    graph: GraphGroup = field(default_factory=_main_job("graph", "eval"))
    cluster: ClusterGroup = field(default_factory=_main_job("cluster", "eval"))
    logger: LoggerGroup = field(default_factory=_main_job("logger", "eval"))
    placer: str = "heft"
    objective: str = "step_time"
    baselines: list[str] = field(default_factory=lambda: list(BASE_BASELINES))
    force: bool = False

    @classmethod
    def schema(cls) -> EvalRunConfig:
        """The base Hydra composes ``configs/eval.yaml`` on (see :meth:`RunConfig.schema`)."""
        return cls(graph=GraphGroup(), cluster=ClusterGroup(), logger=LoggerGroup())


#: Keys of a recipe run PlaceBench sets from its cases (an override of one is refused).
SET_BY_SUITE = ("graph", "cluster", "seed", "validation_graphs", "baselines", "env.objective")


def check_recipe(recipe: str, overrides: list[str] | tuple[str, ...] = ()) -> None:
    """Refuse an unknown recipe or an override of what the suite sets, before any work.

    Raises:
        ConfigError: Naming the known recipes, or the key the suite sets.
    """
    from placerl.compose import group_options

    known = group_options("experiment")
    if recipe not in known:
        raise ConfigError(f"unknown recipe {recipe!r}; known: {', '.join(known)}")
    for override in overrides:
        key = str(override).lstrip("+~").partition("=")[0]
        if any(key == fixed or key.startswith(f"{fixed}.") for fixed in SET_BY_SUITE):
            raise ConfigError(
                f"recipe override {override!r}: the suite sets {key} from its "
                f"cases ({', '.join(SET_BY_SUITE)} are the suite's)"
            )


@dataclass
class BenchRunConfig:
    """A PlaceBench run (``placerl-bench``): a placer, or a recipe trained on the ``train``
    cases and selected on the ``validation`` ones, scored on a suite's cases, one record per
    case (:mod:`placerl.bench.run`, :mod:`placerl.bench.recipe`).

    Attributes:
        suite: The suite, ``<name>-v<version>`` (``placebench-v1``).
        tier: The tier to run (``tiny``, ``families``, ``models``, ``devices``, ``scale``);
            ``None``: every tier.
        split: The split to run (``train``, ``validation``, ``test``); a score to report
            is a ``test`` one.
        family: Only the cases of this family (``tiny/chain-n12``, ``families/cifar10``);
            ``None``: every family of the tier.
        placer: A placer spec (``heft``, ``'local_search?init=best_of&max_evaluations=2000'``).
        recipe: A recipe (an ``experiment`` config: ``placeto``, ``improve``, ...) to train
            per family and score instead of ``placer``; ``None``: score ``placer``.
        recipe_overrides: ``placerl-train`` overrides of the recipe, its budget above all
            (``"recipe_overrides=['total_steps=4000']"``); the records name them.
        seed: The recipe's seed (a sweep over seeds: ``seed=0,1,2 -m``).
        learn_on: What the recipe trains on (:data:`LEARN_ON`): ``family``, the family's
            ``train`` cases, then it places the others; ``case``, each case it scores, from
            nothing, its best placement found kept (a per-graph search, as Placeto ran).
        dataset: A folder of graph JSON files to run instead of the suite, each a case on
            ``cluster.spec`` under ``objective`` in ``split``; ``None``: the suite.
        cluster: Where a dataset's graphs are placed (:class:`ClusterGroup`); a suite's cases
            name their own cluster.
        objective: A dataset's objective, ``step_time`` or ``pipeline`` (a suite's cases name
            their own).
        force: Run again the cases whose record the run directory already holds.
    """

    suite: str = "placebench-v1"
    tier: str | None = None
    split: str = "test"
    family: str | None = None
    placer: str = "heft"
    recipe: str | None = None
    recipe_overrides: list[str] = field(default_factory=list)
    seed: int = 0
    learn_on: str = "family"
    dataset: str | None = None
    cluster: ClusterGroup = field(default_factory=_main_job("cluster", "bench"))
    objective: str = "step_time"
    force: bool = False

    @classmethod
    def schema(cls) -> BenchRunConfig:
        """The base Hydra composes ``configs/bench.yaml`` on (see :meth:`RunConfig.schema`)."""
        return cls(cluster=ClusterGroup())

    def check(self) -> BenchRunConfig:
        """Refuse an unknown suite, tier, split, placer or objective, or a dataset folder
        without graph files, before any work (listing the known ones); returns ``self``.

        Raises:
            ConfigError: Naming the option and the known values.
        """
        from placerl.baselines.references import parse_placer
        from placerl.bench.run import select_cases

        _check_choice("objective", self.objective, ("step_time", "pipeline"))
        _check_choice("learn_on", self.learn_on, LEARN_ON)
        check_int(self.seed, "seed")
        if self.recipe is None:
            parse_placer(self.placer)
        else:
            check_spec_list(self.recipe_overrides, "recipe_overrides")
            check_recipe(self.recipe, self.recipe_overrides)
        select_cases(self.cases_suite(), self.tier, self.split, self.family)
        return self

    def cases_suite(self) -> Any:
        """The suite to run: the dataset folder's (:func:`placerl.bench.folder_suite`), or
        the suite's id.

        Raises:
            ConfigError: A dataset folder that is not one or holds no ``.json`` file.
        """
        if self.dataset is None:
            return self.suite
        from placerl.bench.suite import folder_suite

        return folder_suite(self.dataset, self.cluster.spec, self.objective, self.split)


#: Keys of the old flat ``TrainConfig`` and where each now lives.
RENAMED = {
    "env_kwargs": "env.<argument> (e.g. env.reward)",
    "objective": "env.objective",
    "start_from_best": "env.start_from_best",
    "algo": "agent.algo",
    "extractor": "agent.extractor",
    "head": "agent.head",
    "extractor_kwargs": "agent.extractor_kwargs",
    "hyperparams": "agent.hyperparams",
    "warm_start": "agent.warm_start",
    "warm_start_epochs": "agent.warm_start_epochs",
    "warm_start_rounds": "agent.warm_start_rounds",
    "rollback": "agent.rollback",
    "rollback_graphs": "agent.rollback_graphs",
    "out_dir": "train(config, out_dir=...)",
    "initial": "env.init",
}


def check_known_keys(values: Mapping[str, Any], schema: type, prefix: str = "") -> None:
    """Refuse keys that no field of the dataclass ``schema`` declares, into its nested groups.

    Hydra lets ``+key=value`` add a key the schema lacks, and the structured config then drops
    it without a word: a mistyped ``+total_step=4000`` would train the default 20k steps. Free
    mappings (``hyperparams``, ``extractor_kwargs``) are checked later by what reads them.

    Raises:
        ConfigError: An unknown key, named with its path and the closest known one; a renamed
            key, with its new name; a plain value where a group is expected.
    """
    fields = {f.name for f in dataclasses.fields(schema)}
    types = typing.get_type_hints(schema)
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in fields:
            raise ConfigError(_unknown_key(str(key), path, prefix, fields))
        group = types[key]
        if not dataclasses.is_dataclass(group):
            continue
        if isinstance(value, Mapping):
            check_known_keys(value, group, prefix=f"{path}.")
        elif not isinstance(value, group):
            first = dataclasses.fields(group)[0].name
            raise ConfigError(
                f"{path} is a group: give {path}.{first} ({{{key!r}: {{{first!r}: "
                f"{value!r}}}}}) or a {group.__name__}, got {value!r}"
            )


def _unknown_key(key: str, path: str, prefix: str, fields: set[str]) -> str:
    if not prefix and key in RENAMED:
        return f"{key!r} is now {RENAMED[key]}"
    close = difflib.get_close_matches(key, sorted(fields), n=1)
    hint = f"; did you mean {prefix}{close[0]}?" if close else ""
    return f"unknown option {path!r}{hint} (known here: {', '.join(sorted(fields))})"


def _merged(base: Any, updates: Mapping[str, Any]) -> Any:
    """``base`` (a dataclass) with ``updates`` over it; nested mappings update nested groups."""
    changes = {}
    for key, value in updates.items():
        current = getattr(base, key)
        if dataclasses.is_dataclass(current) and isinstance(value, Mapping):
            value = _merged(current, value)
        elif isinstance(current, Mapping) and isinstance(value, Mapping):
            value = {**current, **value}  # hyperparams: key by key, as Hydra merges them
        elif isinstance(value, Sequence) and not isinstance(value, str):
            value = list(value)
        changes[key] = copy.deepcopy(value)
    return dataclasses.replace(base, **changes)


def _refusal(preset: PresetGroup, path: str, value: Any, pinned: Any) -> str:
    """Why a run that names ``preset`` cannot hold ``value`` at ``path``, and what can."""
    tuned = f" The tuned recipe experiment={preset.tuned} takes it;" if preset.tuned else ""
    return (
        f"{preset.name} does not take {path}={value!r}: the preset fixes {path} to "
        f"{pinned!r}, as the paper ran it.{tuned} preset.name=null runs the recipe as a "
        f"variant that is no longer {preset.name}"
    )


def _check_specs(name: str, value: Any, *, many: bool) -> None:
    """A spec, or (``many``) a non-empty list of them."""
    specs = (
        value if many and isinstance(value, Sequence) and not isinstance(value, str) else [value]
    )
    if not specs or not all(isinstance(spec, str) and spec for spec in specs):
        kind = "a spec or a non-empty list of specs" if many else "a spec"
        raise ConfigError(f"{name} must be {kind} (strings), got {value!r}")


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
