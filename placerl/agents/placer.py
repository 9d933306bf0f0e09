"""A trained policy is a placer: ``place("policy", graph, cluster, path="model.zip")``, or
one that ships with placerl: ``place("policy", graph, cluster, pretrained="cifar10")``
(:mod:`placerl.agents.pretrained`).

Importing this module registers the ``policy`` placer; :data:`placerl.baselines.PLACERS` imports
it on first lookup through the ``placerl.placers`` entry point, so ``place("policy", ...)``
works without importing :mod:`placerl.agents` first. SB3 loads only when a policy runs.
"""

from __future__ import annotations

import functools
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from placerl._extras import require
from placerl.agents.fitting import fit_to_env, places_any_size
from placerl.agents.fitting import reads_any_size as reads_any_size  # callers import it here
from placerl.baselines.api import register_placer
from placerl.baselines.problem import Problem
from placerl.errors import ConfigError

#: Options of the policy placer and the searches renamed since an earlier version: the start
#: placement is ``init`` everywhere (as ``local_search``'s and the refine env's).
RENAMED_OPTIONS = {"start": "init", "initial": "init"}


def load_model(path: str | os.PathLike[str], device: str = "auto") -> Any:
    """Load a model saved by :func:`placerl.train.train` (or any model of ``make_agent``).

    Raises:
        ConfigError: No such file, not a zip file, a zip without placerl's settings, or a
            policy trained on observations of another version than this placerl's envs give.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no policy file at {path}")
    if not zipfile.is_zipfile(path):
        raise ConfigError(
            f"{path} is not a model zip (as placerl.train saves model.zip); was it truncated "
            "or overwritten?"
        )
    return _load(str(path.resolve()), path.stat().st_mtime_ns, device)


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: int, device: str) -> Any:
    from placerl.agents.factory import ALGORITHMS, in_memory_logger
    from placerl.envs.case import OBSERVATION_VERSION

    save_util = require("stable_baselines3.common.save_util", "the policy placer")
    data, _, _ = save_util.load_from_zip_file(path, load_data=True, device="cpu")
    settings = (data or {}).get("placerl_settings")
    if settings is None:
        raise ConfigError(f"{path} is not a placerl policy (no placerl_settings in its data)")
    version = settings.get("observation_version", 1)
    if version != OBSERVATION_VERSION:
        raise ConfigError(
            f"{path} was trained on observations of version {version}; this placerl's envs "
            f"give version {OBSERVATION_VERSION} (their features changed): train it again"
        )
    return in_memory_logger(ALGORITHMS[settings["algo"]].load().load(path, device=device))


def policy_placer(
    path: str | os.PathLike[str] | None = None,
    *,
    pretrained: str | None = None,
    search: str = "greedy",
    budget: int = 0,
    seed: int = 0,
    device: str = "auto",
    init: str | None = None,
    **renamed: Any,
) -> Callable[[Problem], np.ndarray]:
    """A placer that runs a trained policy on any graph whose padding fits.

    Args:
        path: The model zip (or give ``pretrained``).
        pretrained: The name of a policy that ships with placerl
            (:func:`placerl.agents.pretrained.shipped`), instead of ``path``.
        search: A search at inference (:data:`placerl.agents.search.SEARCHES`: ``greedy``,
            ``sample``, ``local``, ``ils``, ``active``).
        budget: The search's budget in simulator evaluations (0: its own end).
        seed: Seed of the search.
        device: Torch device for the policy.
        init: A placer spec whose placement the search starts from (e.g. ``best_of``); it
            never ends worse than that placement. A refining policy's episodes start from it
            (instead of the ``init`` it trained with, :func:`env_for`); any other policy's
            search also starts from it, beside the greedy placement
            (:func:`placerl.agents.search.run_search`).

    Returns:
        ``placer(problem) -> placement``: the search's best placement, on the env the policy was
        trained with, rebuilt for the problem's graph, cluster and objective.

    Raises:
        ConfigError: No such model, both or neither of ``path`` and ``pretrained``, an
            unknown pretrained name (listing the shipped ones), an unknown search or a bad
            budget (before any work); an option of an earlier name (``start``, ``initial``:
            now ``init``); a cluster of another device count for a policy with per-device
            parameters (:func:`~placerl.agents.fitting.fit_to_env`); for a pretrained policy,
            a cluster whose feature widths differ from those it was trained for (naming its
            cluster).
    """
    from placerl._env_ids import env_class
    from placerl.agents.search import check_search

    refuse_renamed("policy_placer", renamed)
    path, card = _policy_file(path, pretrained)
    check_search(search, budget)
    model = load_model(path, device)
    # a refinement starts from its env's start placement: that is where the search starts
    refines = "init" in env_class(model.placerl_settings["env"]).extra_arguments

    def run(problem: Problem) -> np.ndarray:
        from placerl.agents.pretrained import check_cluster, check_widths
        from placerl.agents.search import run_search

        if card is not None:  # before the env: building it may take seconds (init)
            check_cluster(card, problem.cluster)
        env = env_for(model, problem, init=init if refines else None)
        if card is not None:
            check_widths(card, env.observation_space)
        # a graph beyond the padding: the per-node policy rebuilt for it (run_search would
        # too; here it is explicit that the model placing is the fitted one)
        return run_search(
            fit_to_env(model, env),
            env,
            search,
            budget=budget,
            seed=seed,
            init=None if refines else init,
        ).placement

    return run


def _policy_file(
    path: str | os.PathLike[str] | None, pretrained: str | None
) -> tuple[str | os.PathLike[str], dict[str, Any] | None]:
    """The model zip of ``path`` or of the shipped policy ``pretrained`` (exactly one), with
    the shipped policy's card (``None`` for a file of the user's).

    Raises:
        ConfigError: Both or neither given; an unknown pretrained name (listing the shipped).
    """
    if (path is None) == (pretrained is None):
        given = "both" if path is not None else "neither"
        raise ConfigError(
            f"the policy placer takes a model zip (path=...) or a shipped "
            f"policy (pretrained=...), not {given}"
        )
    if pretrained is None:
        return path, None  # type: ignore[return-value]  # path is given here
    from placerl.agents.pretrained import load_card, pretrained_path

    return pretrained_path(pretrained), load_card(pretrained)


def env_for(model: Any, problem: Problem, *, init: str | None = None, **renamed: Any) -> Any:
    """The env ``model`` was trained with, on ``problem``'s graph, cluster and objective.

    A graph larger than the policy's padding gets a larger padding when the policy places
    graphs of any size (:func:`~placerl.agents.fitting.places_any_size`): a GNN trained on
    80-node graphs places a 300-node one as it is (:func:`reads_any_size`); a policy whose
    head reads per-node states (the hierarchical planner's grouper-placer) does so rebuilt
    for the larger padding (:func:`~placerl.agents.fitting.fit_to_env`, which
    :func:`~placerl.agents.search.run_search` and
    :func:`~placerl.agents.episodes.rollout` apply). A cluster of another device count gets
    the env on that cluster: the policy places there rebuilt for it, when its network has
    no per-device parameter (:func:`~placerl.agents.fitting.fit_to_env`, which refuses the
    others, naming the parameter).

    Args:
        model: A trained model (:func:`load_model`).
        problem: The graph, cluster and objective to place.
        init: For a policy that refines a placement, the placer spec to start from
            instead of the one it trained with (e.g. ``best_of?placers=heft,m_etf,m_sct``,
            which skips ``best_of``'s DP: seconds on large cells, where its split never wins
            under ``step_time``).

    Raises:
        ConfigError: A callable order, a graph larger than the
            padding of a policy that reads only graphs within it, ``init`` for a policy
            that starts from no placement, or ``initial`` (now ``init``).
    """
    from placerl._env_ids import env_class
    from placerl.envs.feature_sets import DEFAULT_FEATURES
    from placerl.envs.invalid import DEFAULT_INVALID_ACTION

    refuse_renamed("env_for", renamed)
    settings = model.placerl_settings
    if settings["order"] is None:
        raise ConfigError("the policy was trained with a callable order; it cannot be rebuilt")
    kwargs = {
        k: settings[k]
        for k in ("order", "order_seed", "memory", "observation", "max_nodes", "max_edges")
    }
    graph = problem.graph
    for what, size in (("max_nodes", graph.num_nodes), ("max_edges", graph.num_edges)):
        if size > settings[what] and not places_any_size(model):
            raise ConfigError(
                f"graph {graph.name!r} has {size} {what[4:]}; the policy's padding is "
                f"{what}={settings[what]}, and its network reads only graphs within it "
                f"(a recurrent policy or SB3's own extractor): train with a larger {what}"
            )
        kwargs[what] = max(size, settings[what])
    kwargs["fold"] = settings.get("fold", False)  # policies saved before folding existed
    # policies saved before invalid_action existed: the default
    kwargs["invalid_action"] = settings.get("invalid_action", DEFAULT_INVALID_ACTION)
    kwargs["features"] = settings.get("features", DEFAULT_FEATURES)  # saved before: HEFT's
    if "initial" in settings:  # saved before the refine env's ``initial`` became ``init``
        settings = {"init": settings["initial"], **settings}
    cls = env_class(settings["env"])
    kwargs.update(
        {
            name: settings[name]
            for name in cls.extra_arguments
            if name in settings and name not in cls.training_arguments
        }
    )
    if init is not None:
        if "init" not in cls.extra_arguments:
            raise ConfigError(
                f"init={init!r}: the policy's env ({settings['env']}) "
                "starts from no placement; only a refining policy takes one"
            )
        kwargs["init"] = init
    return cls(graph=graph, cluster=problem.cluster, objective=problem.objective, **kwargs)


@register_placer("policy", optimizes="any", needs_solvable=True, one_of=("path", "pretrained"))
def policy(
    problem: Problem,
    *,
    path: str | None = None,
    pretrained: str | None = None,
    search: str = "greedy",
    budget: int = 0,
    seed: int = 0,
    init: str | None = None,
) -> np.ndarray:
    """A trained policy (model zip of placerl.train at ``path``, or a shipped one by name:
    ``pretrained=cifar10``), with a search at inference, optionally started from another
    placer's placement (``init=best_of``: a refining policy's episodes start there, any
    other policy's search starts there too; see :func:`policy_placer`)."""
    return policy_placer(
        path,
        pretrained=pretrained,
        search=search,
        budget=budget,
        seed=seed,
        device="cpu",
        init=init,
    )(problem)


def refuse_renamed(what: str, options: dict[str, Any]) -> None:
    """Refuse the keyword arguments ``options`` of function ``what``: an earlier name with a
    :class:`ConfigError` naming its new one, any other as Python does.

    Raises:
        ConfigError: A name of :data:`RENAMED_OPTIONS`.
        TypeError: Any other name.
    """
    for name in sorted(options):
        if name in RENAMED_OPTIONS:
            raise ConfigError(f"{what}: option {name!r} is now {RENAMED_OPTIONS[name]!r}")
        raise TypeError(f"{what}() got an unexpected keyword argument {name!r}")
