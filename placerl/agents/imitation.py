"""Warm start by imitation: behaviour cloning of a baseline placer before RL.

DOPPLER (ICLR 2026) pretrains its placement policy on a critical-path heuristic before RL.
Here any registered placer can be the expert: at step ``t`` the expert action is the
placer's device for the node the env asks about (``order[t]``, or ``order[t mod N]`` when
refining); in the dual env's select steps it is the ready node of highest upward rank
(HEFT's order; :meth:`~placerl.envs.dual.PlacementDualEnv.expert_action`).
The refine env also has a state expert, ``best_move`` (:mod:`placerl.envs.experts`): the device
that makes the current placement fastest when only the current node moves, one step of
best-improvement local search, so that the clone learns which moves improve a placement.
The policy is fitted to those actions by cross-entropy over its masked
distribution, with the actions that keep a node where it is and those that move it weighted
to equal shares (refining, most expert actions keep: unweighted, a clone learns to keep every
node), and its value head to the returns of the episodes played, so that PPO's first updates
start from the expert's behaviour and a value scale that matches it.

A clone that errs once reaches states the expert's episodes never show, and errs more there.
DAgger (Ross, Gordon & Bagnell, AISTATS 2011) adds those states: in each ``round`` the clone
plays every graph greedily, the expert labels each state it visits, and the policy is fitted
again on all samples so far (one Adam optimizer throughout: a round refines the last fit).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from placerl._options import check_int
from placerl.agents.episodes import Rollout, VisitedBest, playing, rollout, uses_masks
from placerl.baselines.references import reference
from placerl.envs.experts import check_expert, is_state_expert
from placerl.errors import ConfigError


@dataclass(frozen=True)
class CloneReport:
    """What behaviour cloning did.

    Attributes:
        samples: (observation, expert action) pairs of the last fit: the expert's episodes'
            and, with DAgger rounds, those of the clone's episodes (a kept earlier fit saw
            fewer; ``loss`` and ``accuracy`` are over all of them).
        epochs: Passes over the samples in each fit.
        loss: Cross-entropy of the expert actions over all samples, at the end.
        accuracy: Share of samples where the greedy action is the expert's, at the end (a
            device-equivariant policy scores identical devices alike, so where the expert
            picks one of several identical devices this can be below 1 for a perfect clone).
        expert_runtime: Mean runtime of the expert's episodes (seconds; on the refine env
            the best placement an episode passed through, as for the policy).
        policy_runtime: Mean runtime of the kept weights' greedy episodes (seconds).
        rounds: DAgger rounds after the first fit.
        round_runtimes: Mean greedy runtime after the first fit and after each round.
        kept_round: The fit whose weights were kept (0: the first; the fastest of
            ``round_runtimes``, the earliest on ties).
    """

    samples: int
    epochs: int
    loss: float
    accuracy: float
    expert_runtime: float
    policy_runtime: float
    rounds: int = 0
    round_runtimes: tuple[float, ...] = ()
    kept_round: int = 0


@dataclass(frozen=True)
class Demonstrations:
    """Episodes, one per graph, as training samples labelled by an expert.

    Attributes:
        observations: Stacked observations.
        actions: The expert's actions.
        masks: The action masks.
        returns: Returns-to-go of the episodes played.
        keeps: Whether each expert action keeps the placement as it is.
        runtimes: Each episode's outcome runtime (on the refine env, the best placement it
            passed through: :class:`~placerl.agents.episodes.VisitedBest`).
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    masks: np.ndarray
    returns: np.ndarray
    keeps: np.ndarray
    runtimes: list[float]

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """Sample weights: actions that keep the placement as it is and those that change it
        weigh equal shares in all (1 everywhere when one kind is missing)."""
        return balanced_weights(self.keeps)

    def __add__(self, other: Demonstrations) -> Demonstrations:
        """Both sets of samples (weights balanced over the union)."""
        return Demonstrations(
            {k: np.concatenate([v, other.observations[k]]) for k, v in self.observations.items()},
            *(
                np.concatenate([getattr(self, name), getattr(other, name)])
                for name in ("actions", "masks", "returns", "keeps")
            ),
            self.runtimes + other.runtimes,
        )


def expert_episodes(env: Any, expert: str, model: Any | None = None) -> Demonstrations:
    """Label one episode per graph of ``env`` with ``expert``'s actions.

    Args:
        env: A placement env (not a vector env).
        expert: A placer spec (its placement's device for each node), or a state expert
            (:data:`placerl.envs.experts.STATE_EXPERTS`).
        model: ``None``: the expert plays. A model: it plays greedily instead (reset seed 0,
            as :func:`~placerl.agents.episodes.rollout`) and the expert labels the states it
            visits (DAgger's samples).

    Raises:
        ConfigError: A state expert the env cannot answer
            (:func:`~placerl.envs.experts.check_expert`).
    """
    check_expert(type(env), expert)
    observations: list[dict[str, np.ndarray]] = []
    actions, masks, returns, keeps, runtimes = [], [], [], [], []
    for g, graph in enumerate(env.graphs):
        label = _expert(env, graph, expert)
        obs, info = env.reset(seed=0, options={"graph": g})
        visited = VisitedBest(env)
        visited.see(info)
        rewards, kept, done = [], [], False
        with playing(model) if model is not None else contextlib.nullcontext() as play:
            while not done:
                action, mask = label(env), env.action_masks()
                kept.append(_allowed(mask, action))  # a move the mask rules out: no sample
                if kept[-1]:
                    observations.append(obs)
                    actions.append(action)
                    masks.append(mask)
                    keeps.append(env.keeps_placement(action))
                played = action if play is None else play(obs, env, True)
                obs, reward, terminated, truncated, info = env.step(played)
                visited.see(info)
                rewards.append(reward)
                done = terminated or truncated
        to_go = np.cumsum(rewards[::-1])[::-1]
        returns.extend(to_go[np.array(kept)].tolist())
        runtimes.append(visited.outcome(Rollout.ended(info, float(sum(rewards)))).runtime)
    stacked = {k: np.stack([o[k] for o in observations]) for k in observations[0]}
    return Demonstrations(
        stacked,
        np.array(actions),
        np.array(masks),
        np.array(returns, np.float32),
        np.array(keeps),
        runtimes,
    )


def _expert(env: Any, graph: Any, expert: str) -> Callable[[Any], Any]:
    """The expert's action in ``env``'s current state, on ``graph``."""
    if is_state_expert(expert):
        return lambda env: getattr(env, expert)()
    placement = reference(graph, env.cluster, env.objective, expert).placement
    return lambda env: env.expert_action(placement)


def balanced_weights(keeps: np.ndarray) -> np.ndarray:
    """Weights that give the samples where ``keeps`` holds and the others equal shares of the
    total (their mean is 1); all 1 when either kind is missing."""
    n, kept = len(keeps), int(keeps.sum())
    if kept in (0, n):
        return np.ones(n, np.float32)
    return np.where(keeps, n / (2 * kept), n / (2 * (n - kept))).astype(np.float32)


def _allowed(mask: np.ndarray, action: int | np.ndarray) -> bool:
    """Whether the mask allows the action (a device per row for the one-shot env)."""
    if np.ndim(action) == 0:
        return bool(mask[action])
    rows = mask.reshape(len(action), -1)
    return bool(rows[np.arange(len(action)), action].all())


def behaviour_clone(
    model: Any,
    env: Any,
    placer: str,
    *,
    epochs: int = 100,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    seed: int = 0,
    rounds: int = 0,
) -> CloneReport:
    """Fit ``model``'s policy to ``placer``'s actions on every graph of ``env``.

    Args:
        model: A model from :func:`~placerl.agents.make_agent` (not ``recurrent_ppo``).
        env: A placement env (not a vector env) with the model's settings.
        placer: A placer spec, computed through the shared reference cache, or a state expert
            (``best_move``: one best-improvement step from the refine env's current placement).
        epochs: Passes over the samples, in each fit.
        batch_size: Samples per gradient step.
        learning_rate: Adam's step size (a separate optimizer; the model's is left as is).
        seed: Seeds the minibatch shuffling.
        rounds: DAgger rounds after the first fit: the clone plays every graph greedily, the
            expert labels the states it visits, and the policy is fitted again on all samples
            so far. The weights kept are those of the fit whose greedy episodes were fastest
            on ``env``'s graphs (mean runtime in seconds: slower graphs weigh more).

    Raises:
        ConfigError: A recurrent model (its LSTM state would need whole sequences); epochs or
            batch_size below 1, rounds below 0, or a learning rate that is not a positive
            number; a state expert the env cannot answer.
    """
    if getattr(model.policy, "lstm_actor", None) is not None:
        raise ConfigError("behaviour cloning supports feed-forward policies, not recurrent_ppo")
    check_int(epochs, "behaviour cloning epochs", minimum=1)
    check_int(batch_size, "behaviour cloning batch_size", minimum=1)
    check_int(rounds, "behaviour cloning rounds", minimum=0)
    if isinstance(learning_rate, bool) or not (
        isinstance(learning_rate, int | float) and learning_rate > 0
    ):
        raise ConfigError(
            f"behaviour cloning learning_rate must be a number > 0, got {learning_rate!r}"
        )
    expert = demos = expert_episodes(env, placer)
    fit = functools.partial(
        _fit,
        model,
        torch.optim.Adam(model.policy.parameters(), lr=learning_rate),
        epochs=epochs,
        batch_size=batch_size,
        generator=np.random.default_rng(seed),
    )
    fit(demos)
    runtimes, weights = [], []
    for _ in range(rounds):
        played = expert_episodes(env, placer, model)  # the last fit's greedy episodes
        runtimes.append(float(np.mean(played.runtimes)))
        weights.append(copy.deepcopy(model.policy.state_dict()))
        demos = demos + played
        fit(demos)
    runtimes.append(
        float(
            np.mean([rollout(model, env, graph=g, seed=0).runtime for g in range(len(env.graphs))])
        )
    )
    kept = int(np.argmin(runtimes))
    if kept < rounds:
        model.policy.load_state_dict(weights[kept])
    with torch.no_grad():
        _, cross_entropy, accuracy = _loss(model, demos, slice(None))
    return CloneReport(
        len(demos.actions),
        epochs,
        float(cross_entropy),
        float(accuracy),
        float(np.mean(expert.runtimes)),
        runtimes[kept],
        rounds,
        tuple(runtimes),
        kept,
    )


def _fit(
    model: Any,
    optimizer: torch.optim.Optimizer,
    demos: Demonstrations,
    *,
    epochs: int,
    batch_size: int,
    generator: np.random.Generator,
) -> None:
    """``epochs`` passes of minibatch steps over ``demos``."""
    policy = model.policy
    policy.set_training_mode(True)
    n = len(demos.actions)
    for _ in range(epochs):
        for batch in np.array_split(generator.permutation(n), max(1, n // batch_size)):
            loss = _loss(model, demos, batch)[0]
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
    policy.set_training_mode(False)


def _loss(
    model: Any,
    demos: Demonstrations,
    batch: np.ndarray | slice,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(total loss, weighted cross-entropy, greedy accuracy) of the samples ``batch``."""
    policy = model.policy
    tensors, _ = policy.obs_to_tensor({k: v[batch] for k, v in demos.observations.items()})
    if uses_masks(model):
        distribution = policy.get_distribution(tensors, action_masks=demos.masks[batch])
    else:
        distribution = policy.get_distribution(tensors)
    target = torch.as_tensor(demos.actions[batch], device=policy.device)
    weights = torch.as_tensor(demos.weights[batch], device=policy.device)
    # The weights average 1 over all samples: a minibatch's sum over its size keeps each
    # sample's share whatever else the minibatch holds.
    cross_entropy = -(weights * distribution.log_prob(target)).sum() / len(weights)
    values = policy.predict_values(tensors).squeeze(-1)
    targets = torch.as_tensor(demos.returns[batch], device=policy.device)
    value_loss = torch.nn.functional.mse_loss(values, targets)
    greedy = distribution.mode()
    accuracy = (greedy == target).float().mean()
    return cross_entropy + 0.5 * value_loss, cross_entropy, accuracy
