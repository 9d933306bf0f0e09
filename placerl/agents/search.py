"""Search at inference: spend a budget of simulator evaluations on one graph with a policy.

A trained policy places a graph in one greedy episode; given more time, it can search. Every
search here counts its cost in simulator evaluations (the env's ``simulations`` counter plus
the moves a local search tries) and wall time, the units ``local_search`` reports too, so that
RL and search are compared at equal budget (``benchmarks/bench_search.py``).

Searches (the :data:`SEARCHES` registry; ``policy?path=...&search=<name>&budget=<evaluations>``):

* ``greedy`` - the policy's greedy episode (its cost is the budget it needs). On the refine env
  it keeps the best placement the episode passed through: the dense reward simulated each one,
  so that costs nothing, and a refinement never ends worse than where it started (``local``
  starts from that placement too).
* ``sample`` - the greedy episode, then sampled episodes while the budget lasts (batches of
  up to :data:`SAMPLE_BATCH` stepped side by side, sized by the greedy episode's cost; the
  batch in progress stops when the budget is spent); the best.
* ``local`` - policy-guided local search: hill climbing from the greedy placement that visits
  first the units whose device the policy was least sure of and tries devices in the order of
  the policy's probabilities, taking the first move that improves
  (:func:`placerl.baselines.local_search.hill_climb`). It stops at the local optimum:
  its cost is what the climb needs, ``budget`` only caps it.
* ``ils`` - policy-guided iterated local search: ``local``, then, while the budget lasts,
  kicks of :data:`ILS_KICK` units of the best placement so far (drawn by how little the
  policy likes their device, moved to devices drawn by its probabilities,
  :func:`placerl.baselines.local_search.kicked`) each followed by a guided climb; the best.
  ``local_search?restarts=...`` with the policy's placement as the start and its
  probabilities as the guide: where ``local`` leaves budget unspent, ``ils`` spends it.
* ``active`` - active search (Bello et al., 2017): fine-tune a copy of the policy with its RL
  algorithm on this graph alone while the budget lasts; the best placement of any episode or
  of the final greedy one.

Any search can also be given a placer's placement to start from, ``init``
(``run_search(..., init="best_of")``, ``policy?...&search=local&init=best_of``, as
``local_search?init=best_of``): it competes with the policy's greedy placement as the start of
``local`` and as a candidate of the others, so the search never ends worse than that placer.
It costs one simulator evaluation, as ``local_search``'s ``init`` does (the placer's own work,
e.g. ``best_of``'s, is not counted in either). The policy placer gives a refining policy's
``init`` to its env instead: its episodes start there
(:func:`placerl.agents.placer.policy_placer`).
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from placerl._options import check_int
from placerl._registry import Registry
from placerl.agents.episodes import (
    Rollout,
    VisitedBest,
    _is_recurrent,
    as_action,
    one_episode,
    rollout,
    sampled_rollouts,
    uses_masks,
)
from placerl.agents.factory import in_memory_logger
from placerl.agents.fitting import fit_to_env
from placerl.errors import ConfigError


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The best placement a search found, with what it cost.

    Attributes:
        search: The search's name.
        placement: One device index per node.
        runtime: Its (penalized when infeasible) runtime in seconds.
        feasible: Whether it fits.
        evaluations: Simulator evaluations spent.
        wall_s: Seconds spent.
        greedy_runtime: The policy's greedy runtime, where the search started.
        info: Search-specific figures (episodes, rounds, ...).
    """

    search: str
    placement: np.ndarray
    runtime: float
    feasible: bool
    evaluations: int
    wall_s: float
    greedy_runtime: float
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Search:
    """A registered search.

    Attributes:
        name: Registry name.
        fn: ``fn(model, env, budget, seed, init) -> (placement, runtime, feasible, info)``;
            ``init`` is ``None`` or a placer's ``(placement, runtime, feasible)``.
        needs_budget: The search runs until its budget is spent (``budget`` must be > 0).
    """

    name: str
    fn: Callable[..., tuple[np.ndarray, float, bool, dict[str, Any]]]
    needs_budget: bool


#: Searches at inference by name (the policy placer's ``search``).
SEARCHES: Registry[Search] = Registry("search")

#: Sampled episodes stepped side by side (one batched forward pass per step).
SAMPLE_BATCH = 32
#: Units each kick of ``ils`` moves: iterated local search's own default, so that the two
#: differ only in where they start and what guides them.
ILS_KICK = 4


def register_search(name: str, *, needs_budget: bool) -> Callable:
    """Register ``fn(model, env, budget, seed, init)`` as search ``name``."""

    def wrap(fn: Callable) -> Callable:
        SEARCHES.register(name, Search(name, fn, needs_budget))
        return fn

    return wrap


def check_search(name: str, budget: int) -> tuple[Search, int]:
    """The search ``name`` and its checked budget.

    Raises:
        ConfigError: Unknown search, a budget that is not an int >= 0, or no budget for a
            search that needs one.
    """
    search = SEARCHES[name]
    budget = check_int(budget, "search budget", minimum=0)
    if search.needs_budget and budget == 0:
        raise ConfigError(
            f"search {name!r} needs a budget > 0 (simulator evaluations), e.g. budget=2000"
        )
    return search, budget


def run_search(
    model: Any,
    env: Any,
    search: str = "greedy",
    *,
    budget: int = 0,
    seed: int = 0,
    init: str | None = None,
    **renamed: Any,
) -> SearchResult:
    """Search for a placement of ``env``'s graph with ``model``.

    Args:
        model: A model of :func:`~placerl.agents.make_agent` or :func:`placerl.train.train`.
        env: A placement env over the one graph to place (not a vector env; wrappers are
            fine).
        search: A :data:`SEARCHES` name.
        budget: Simulator evaluations at most (0: the search's own end; ``sample`` and
            ``active`` need one). The greedy episode is always run, even past the budget.
        seed: Seeds the episodes, torch's sampling and fine-tuning (the caller's random
            generators are left as they were).
        init: A placer spec (``best_of``, ``heft``, ``local_search?time_limit=2``, ...) whose
            placement the search also starts from (see the module docstring); ``None``: the
            policy's alone.

    A policy whose head reads per-node states, on a graph beyond its padding, searches
    rebuilt for the env's padding (:func:`~placerl.agents.fitting.fit_to_env`; ``active``
    excepted, which fine-tunes at the policy's own padding).

    Raises:
        ConfigError: See :func:`check_search`; an env over several graphs; a seed that is not
            an integer >= 0; an unknown ``init`` placer or option; ``start`` (now ``init``).
    """
    from placerl.agents.placer import refuse_renamed

    refuse_renamed("run_search", renamed)
    spec, budget = check_search(search, budget)
    seed = check_int(seed, "search seed")
    base = getattr(env, "unwrapped", env)
    if len(base.graphs) != 1:
        raise ConfigError(f"run_search places one graph; the env has {len(base.graphs)}")
    spent_before, began = base.simulations, time.perf_counter()
    first = _init_point(base, init)
    if first is not None and budget:  # init's evaluation comes out of the budget
        budget = max(budget - 1, 1)
    if spec.name != "active":  # which fine-tunes at the policy's padding (and says so)
        model = fit_to_env(model, env)  # a per-node policy on a graph beyond its padding
    with _seeded(seed):
        placement, runtime, feasible, info = spec.fn(model, env, budget, seed, first)
    greedy = info.pop("greedy_runtime")
    evaluations = (
        base.simulations - spent_before + info.pop("extra_evaluations", 0) + (first is not None)
    )
    if first is not None:
        info["init"] = init
    return SearchResult(
        search,
        np.asarray(placement),
        float(runtime),
        bool(feasible),
        int(evaluations),
        time.perf_counter() - began,
        float(greedy),
        info,
    )


def _init_point(base: Any, init: str | None) -> tuple[np.ndarray, float, bool] | None:
    """``init``'s placement on ``base``'s graph, scored as the env scores (penalized when it
    does not fit)."""
    if init is None:
        return None
    from placerl.baselines.references import reference
    from placerl.sim import penalized_runtime

    if not isinstance(init, str) or init.split("?")[0] == "policy":
        raise ConfigError(
            f"search option 'init' must be a placer spec other than 'policy' "
            f"(e.g. 'best_of', 'heft'), got {init!r}"
        )
    case = base.graph_case(0)
    found = reference(case.graph, base.cluster, base.objective, init)
    result = case.model.evaluate(found.placement, check=False, times=False)
    return found.placement, penalized_runtime(result, case.reference_runtime), result.feasible


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed torch, numpy and random for a search; the caller's generators are left as they
    were (so a search gives the same placement whatever ran before it, and changes nothing
    for what runs after)."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


class _Best:
    """The best placement offered so far: feasible first, then the shortest runtime."""

    def __init__(self, placement: np.ndarray, runtime: float, feasible: bool) -> None:
        self.placement, self.runtime, self.feasible = placement, runtime, feasible

    def offer(self, placement: np.ndarray, runtime: float, feasible: bool) -> None:
        if (not feasible, runtime) < (not self.feasible, self.runtime):
            self.placement, self.runtime, self.feasible = placement, runtime, feasible

    def outcome(self, **info: Any) -> tuple:
        return self.placement, self.runtime, self.feasible, info


@register_search("greedy", needs_budget=False)
def _greedy(model: Any, env: Any, budget: int, seed: int, init: tuple | None) -> tuple:
    run = rollout(model, env, graph=0, seed=seed)
    best = _Best(run.placement, run.runtime, run.feasible)
    if init is not None:
        best.offer(*init)
    return best.outcome(greedy_runtime=run.runtime)


@register_search("sample", needs_budget=True)
def _sample(model: Any, env: Any, budget: int, seed: int, init: tuple | None) -> tuple:
    base = getattr(env, "unwrapped", env)
    first = base.simulations
    greedy = rollout(model, env, graph=0, seed=seed)
    best = _Best(greedy.placement, greedy.runtime, greedy.feasible)
    if init is not None:
        best.offer(*init)
    cost = spent = base.simulations - first
    episodes, extra = 1, 0
    while (remaining := budget - spent) >= max(cost, 1):
        count = min(SAMPLE_BATCH, remaining // max(cost, 1))
        runs, used = sampled_rollouts(
            model, env, count, seed=seed + episodes, max_simulations=remaining
        )
        for run in runs:
            best.offer(run.placement, run.runtime, run.feasible)
        spent, extra, episodes = spent + used, extra + used, episodes + len(runs)
        if len(runs) < count:  # the budget ran out mid-batch
            break
    return best.outcome(greedy_runtime=greedy.runtime, episodes=episodes, extra_evaluations=extra)


@register_search("local", needs_budget=False)
def _local(model: Any, env: Any, budget: int, seed: int, init: tuple | None) -> tuple:
    return _guided(model, env, budget, seed, init, iterate=False)


@register_search("ils", needs_budget=True)
def _ils(model: Any, env: Any, budget: int, seed: int, init: tuple | None) -> tuple:
    return _guided(model, env, budget, seed, init, iterate=True)


def _guided(
    model: Any, env: Any, budget: int, seed: int, init: tuple | None, *, iterate: bool
) -> tuple:
    """``local`` (``iterate=False``) or ``ils``: a climb from the greedy placement (or
    ``init``'s, if better) guided by the policy's probabilities, then, for ``ils``, kicks
    the policy guides too until the budget is spent."""
    from placerl.baselines.local_search import hill_climb, iterated_climbs
    from placerl.baselines.problem import Problem
    from placerl.sim import penalized_runtime

    base = getattr(env, "unwrapped", env)
    first = base.simulations
    greedy, preferences = greedy_preferences(model, env, seed=seed)
    best = _Best(greedy.placement, greedy.runtime, greedy.feasible)
    if init is not None:
        best.offer(*init)
    remaining = budget - (base.simulations - first) if budget else 0
    if budget and remaining <= 0:  # the greedy episode spent it all
        none = {"rounds": 0, "kicks": 0} if iterate else {"rounds": 0}
        return best.outcome(greedy_runtime=greedy.runtime, **none)
    problem = Problem(base.case.graph, base.cluster, base.objective)
    rng = np.random.default_rng(seed)
    if iterate:  # it spends all it is given: keep one evaluation to score a misfit's penalty
        remaining = max(remaining - 1, 1)
    climb = {"max_rounds": 10**9, "max_evaluations": remaining, "preferences": preferences}
    solution = hill_climb(problem, best.placement, rng=rng, **climb)
    if iterate:
        solution = iterated_climbs(problem, solution, rng=rng, kick=ILS_KICK, **climb)
    figures = {key: solution.info[key] for key in ("rounds", "kicks") if key in solution.info}
    spent, runtime = solution.info["evaluations"], solution.info["runtime"]
    if not solution.info["feasible"]:  # score it as the env does: penalized
        result = problem.model.evaluate(solution.placement, check=False, times=False)
        runtime, spent = penalized_runtime(result, base.case.reference_runtime), spent + 1
    best.offer(solution.placement, runtime, solution.info["feasible"])
    return best.outcome(greedy_runtime=greedy.runtime, extra_evaluations=spent, **figures)


def greedy_preferences(model: Any, env: Any, *, seed: int = 0) -> tuple[Any, np.ndarray]:
    """The greedy episode (on the refine env, its best placement visited) and, per node, the
    policy's probabilities over devices when it placed that node (rows of nodes the episode
    never asked about are uniform).

    Raises:
        ConfigError: A recurrent policy (its probabilities need the LSTM state; use
            ``sample`` or ``active``).
    """
    if _is_recurrent(model):
        raise ConfigError(
            "searches 'local' and 'ils' need a feed-forward policy; recurrent_ppo's "
            "probabilities depend on its LSTM state: use 'sample' or 'active'"
        )
    base = getattr(env, "unwrapped", env)
    policy, masked = model.policy, uses_masks(model)
    obs, info = env.reset(seed=seed, options={"graph": 0})
    visited = VisitedBest(env)
    visited.see(info)
    n, devices = base.case.graph.num_nodes, base.num_devices
    preferences = np.full((n, devices), 1.0 / devices)
    total, done = 0.0, False
    policy.set_training_mode(False)
    device = policy.device
    with torch.inference_mode(), one_episode(policy):  # the greedy episode of rollout()
        while not done:
            batch = {k: torch.as_tensor(v, device=device)[None] for k, v in obs.items()}
            extra = {"action_masks": base.action_masks()[None]} if masked else {}
            distribution = policy.get_distribution(batch, **extra)
            _record_preferences(preferences, base, obs, distribution)
            action = as_action(distribution.get_actions(deterministic=True)[0])
            obs, reward, terminated, truncated, info = env.step(action)
            visited.see(info)
            total, done = total + reward, terminated or truncated
    return visited.outcome(Rollout.ended(info, total)), preferences


def _record_preferences(
    preferences: np.ndarray, base: Any, obs: dict[str, np.ndarray], distribution: Any
) -> None:
    """Note the policy's probabilities over devices for the nodes this step decides: the
    current node's, or every row's for the one-shot env (a select step of the dual env
    decides none)."""
    order, devices = base.case.order, preferences.shape[1]
    if distribution.distribution.probs.dim() == 3:  # MultiDiscrete: (1, rows, choices)
        probs = distribution.distribution.probs[0, base.rows, :devices].cpu().numpy()
        preferences[order[base.rows]] = probs
    elif obs["current"].any():
        node = int(order[int(np.argmax(obs["current"]))])
        preferences[node] = distribution.distribution.probs[0, :devices].cpu().numpy()


@register_search("active", needs_budget=True)
def _active(model: Any, env: Any, budget: int, seed: int, init: tuple | None) -> tuple:
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    base = getattr(env, "unwrapped", env)
    if base.observation_space != model.observation_space:
        settings = model.placerl_settings
        raise ConfigError(
            f"search 'active' fine-tunes the policy on the env, whose observations have "
            f"another shape than the policy's (padding max_nodes={base.max_nodes}, "
            f"max_edges={base.max_edges}; the policy's: max_nodes={settings['max_nodes']}, "
            f"max_edges={settings['max_edges']}): use 'greedy', 'sample' or 'local' on a "
            "graph beyond the policy's padding, or train with a larger one"
        )
    first = base.simulations
    greedy = rollout(model, env, graph=0, seed=seed)
    cost = base.simulations - first
    if budget <= 2 * cost:
        raise ConfigError(
            f"search 'active' needs a budget above {2 * cost} simulator evaluations on this "
            f"graph (a greedy episode costs {cost}: one before and one after fine-tuning), "
            f"got {budget}"
        )
    best = _Best(greedy.placement, greedy.runtime, greedy.feasible)
    if init is not None:
        best.offer(*init)
    steps = (budget - 2 * cost) * _steps_per_evaluation(base, cost)
    tuned = _copy(model, DummyVecEnv([lambda: env]), n_steps=int(steps) // ACTIVE_UPDATES)

    class _Budget(BaseCallback):
        """Offers every finished episode; stops while a last greedy episode still fits."""

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "placement" in info:
                    best.offer(info["placement"], info["runtime"], info["feasible"])
            return base.simulations - first + cost < budget

    tuned.learn(total_timesteps=10**9, callback=_Budget())
    final = rollout(tuned, env, graph=0, seed=seed)
    best.offer(final.placement, final.runtime, final.feasible)
    updates = tuned._n_updates // max(getattr(tuned, "n_epochs", 1), 1)
    return best.outcome(
        greedy_runtime=greedy.runtime,
        steps=int(tuned.num_timesteps),
        updates=int(updates),
        n_steps=int(tuned.n_steps),
    )


#: Active search sizes its rollouts so that its budget pays for about this many updates.
ACTIVE_UPDATES = 4


def _steps_per_evaluation(base: Any, greedy_cost: int) -> float:
    """Env steps one simulator evaluation buys, from the greedy episode (a sparse reward
    simulates once per episode, a dense one once per step)."""
    length = len(base.case.steps) * getattr(base, "passes", 1)
    return length / max(greedy_cost, 1)


def _copy(model: Any, venv: Any, n_steps: int) -> Any:
    """A copy of ``model`` training on ``venv`` with rollouts of ``n_steps`` (at least 8, at
    most the model's own); the original is left as it is."""
    n_steps = max(8, min(n_steps, model.n_steps))
    objects = {"n_steps": n_steps}
    if hasattr(model, "batch_size"):
        objects["batch_size"] = min(model.batch_size, n_steps)
    buffer = io.BytesIO()
    model.save(buffer)
    buffer.seek(0)
    copied = type(model).load(buffer, env=venv, device=model.device, custom_objects=objects)
    return in_memory_logger(copied)
