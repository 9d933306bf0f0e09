"""Run a trained model on a placement env: greedy with masks, or the best of sampled rollouts."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from placerl.agents.factory import ALGORITHMS
from placerl.agents.fitting import fit_to_env
from placerl.agents.unchecked import unchecked_distributions


@dataclass(frozen=True, eq=False)
class Rollout:
    """One episode of a policy.

    Attributes:
        graph_index: The env's graph the episode ran on.
        runtime: Final (penalized when infeasible) runtime in seconds; on the refine env, that
            of the best placement the episode passed through (:class:`VisitedBest`).
        feasible: The outcome's placement is feasible.
        placement: The final placement (on the refine env, the best one passed through).
        episode_return: Sum of the rewards.
        reference_runtime: The env's reference runtime for the graph (the scale rewards use).
    """

    graph_index: int
    runtime: float
    feasible: bool
    placement: np.ndarray
    episode_return: float
    reference_runtime: float

    @classmethod
    def ended(cls, info: dict[str, Any], episode_return: float) -> Rollout:
        """The episode whose last step returned ``info``."""
        return cls(
            int(info["graph_index"]),
            float(info["runtime"]),
            bool(info["feasible"]),
            info["placement"],
            episode_return,
            float(info["reference_runtime"]),
        )


class VisitedBest:
    """The fastest feasible placement an episode of the refine env passed through.

    Every step of ``placerl/PlacementRefine-v1`` holds a complete placement, simulated for the
    dense reward, and the episode's start is one too: a refining policy's outcome is the best
    of them, at no extra evaluation, so it never ends worse than where it started (Placeto
    reports the best placement found). The other envs' steps hold no complete placement: for
    them the outcome is the episode's end.
    """

    def __init__(self, env: Any) -> None:
        self._base = getattr(env, "unwrapped", env)
        self._active = getattr(self._base, "kind", "") == "refine"
        self._best: tuple[float, np.ndarray] | None = None

    def see(self, info: dict[str, Any]) -> None:
        """Note the placement the env holds now (``info`` from its reset or step)."""
        if not (self._active and info.get("feasible", False)):
            return
        if self._best is None or info["runtime"] < self._best[0]:
            self._best = (float(info["runtime"]), self._base.placement.copy())

    def outcome(self, run: Rollout) -> Rollout:
        """``run``, or the best placement visited when it is faster (or ``run`` infeasible)."""
        if self._best is None or (run.feasible and run.runtime <= self._best[0]):
            return run
        return dataclasses.replace(
            run, runtime=self._best[0], feasible=True, placement=self._best[1]
        )


def uses_masks(model: Any) -> bool:
    """Whether ``model`` (built by :func:`~placerl.agents.make_agent`) predicts with masks."""
    settings = getattr(model, "placerl_settings", None)
    if settings is not None:
        return ALGORITHMS[settings["algo"]].masks
    return type(model).__name__ == "MaskablePPO"


def rollout(
    model: Any,
    env: Any,
    *,
    graph: int | None = None,
    deterministic: bool = True,
    seed: int | None = None,
    incremental: bool = True,
) -> Rollout:
    """Run one episode of ``model`` on the placement env ``env`` (not a vector env).

    Masked algorithms predict with
    :meth:`~placerl.envs.base.PlacementEnvBase.action_masks` (a plain ``predict`` would drop them);
    recurrent ones carry their state through the episode. On the refine env the outcome is
    the best placement the episode passed through (:class:`VisitedBest`). A per-node policy
    on a graph beyond its padding plays rebuilt for the env's
    (:func:`~placerl.agents.fitting.fit_to_env`).

    Args:
        model: An SB3 model.
        env: A placement env.
        graph: The env's graph index (default: the env samples one).
        deterministic: Greedy actions; ``False`` samples from the policy.
        seed: Reset seed.
        incremental: Let the policy reuse, at each step, what it computed at the last
            (:func:`one_episode`: the same embeddings up to floating-point order, so the same
            actions but for near-ties); ``False`` recomputes everything at every step.
    """
    options = None if graph is None else {"graph": graph}
    model = fit_to_env(model, env)  # itself, unless the env's padding is larger
    obs, info = env.reset(seed=seed, options=options)
    visited = VisitedBest(env)
    visited.see(info)
    total, done = 0.0, False
    with playing(model, incremental=incremental) as act:
        while not done:
            obs, reward, terminated, truncated, info = env.step(act(obs, env, deterministic))
            visited.see(info)
            total, done = total + reward, terminated or truncated
    return visited.outcome(Rollout.ended(info, total))


@contextlib.contextmanager
def playing(
    model: Any,
    *,
    incremental: bool = True,
) -> Iterator[Callable[[dict[str, np.ndarray], Any, bool], Any]]:
    """A block in which ``model`` plays one episode, in torch's inference mode.

    Args:
        model: An SB3 model.
        incremental: Let its extractors reuse what they computed at the last step
            (:func:`one_episode`).

    Yields:
        ``act(obs, env, deterministic)``: the model's action in ``env``'s current state
        (masked where the algorithm masks; a recurrent model carries its state from call to
        call).
    """
    act = _recurrent_actor(model) if _is_recurrent(model) else _actor(model)
    model.policy.set_training_mode(False)
    reuse = one_episode(model.policy) if incremental else contextlib.nullcontext()
    # inference mode: no autograd bookkeeping at all (6% of a greedy step at 300 nodes)
    with torch.inference_mode(), unchecked_distributions(), reuse:
        yield act


@contextlib.contextmanager
def one_episode(policy: torch.nn.Module) -> Iterator[None]:
    """A block in which ``policy`` sees one env's episode, step after step: each of its
    extractors may reuse what it computed for the last step
    (:meth:`~placerl.agents.extractors.base.PlacementExtractor.episode`)."""
    with contextlib.ExitStack() as stack:
        for module in policy.modules():
            episode = getattr(module, "episode", None)  # placerl's extractors have one
            if callable(episode):
                stack.enter_context(episode())
        yield


def as_action(values: Any) -> int | np.ndarray:
    """One env's action from a policy's output: an int (``Discrete``) or an int array (the
    one-shot env's ``MultiDiscrete``)."""
    array = np.asarray(values.cpu() if isinstance(values, torch.Tensor) else values)
    return int(array) if array.ndim == 0 else array.astype(np.int64)


def _is_recurrent(model: Any) -> bool:
    return hasattr(model.policy, "lstm_actor")


def _actor(model: Any) -> Callable[[dict[str, np.ndarray], Any, bool], Any]:
    """One action per call straight from the policy's distribution: ``predict``'s checks and
    conversions, paid on every step of an episode, cost about a quarter of a greedy rollout.
    A greedy action over a ``Discrete`` space skips the distribution objects too
    (:func:`_most_likely`), and a ``Dict`` of non-image boxes (every placerl env's) goes to
    the extractor cast to floats, all that SB3's preprocessing does to it."""
    from stable_baselines3.common.policies import BasePolicy

    policy = model.policy
    masked = uses_masks(model)
    device = policy.device  # a property that walks the parameters: once, not every step
    categorical = isinstance(model.action_space, spaces.Discrete)
    space = model.observation_space
    plain_boxes = isinstance(space, spaces.Dict) and all(
        isinstance(box, spaces.Box) and box.dtype != np.uint8 for box in space.values()
    )
    dtype = torch.float32 if plain_boxes else None

    def act(obs: dict[str, np.ndarray], env: Any, deterministic: bool) -> Any:
        batch = {
            k: torch.as_tensor(v, dtype=dtype, device=device).unsqueeze(0) for k, v in obs.items()
        }
        masks = getattr(env, "unwrapped", env).action_masks  # wrappers do not forward it
        if deterministic and categorical:
            # BasePolicy's extract_features, as get_distribution calls it (ActorCriticPolicy's
            # own returns a pair when the extractors are not shared)
            features = (
                policy.pi_features_extractor(batch)
                if plain_boxes
                else BasePolicy.extract_features(policy, batch, policy.pi_features_extractor)
            )
            return _most_likely(policy, features, masks() if masked else None)
        extra = {"action_masks": masks()[None]} if masked else {}
        distribution = policy.get_distribution(batch, **extra)
        return as_action(distribution.get_actions(deterministic=deterministic)[0])

    return act


def _most_likely(policy: Any, features: torch.Tensor, masks: np.ndarray | None) -> int:
    """The greedy action of a feed-forward SB3 actor-critic policy over a ``Discrete`` space,
    given its actor's features: what its (masked) categorical's mode gives, ties included,
    without building the distribution objects (a tenth of a greedy step at 300 nodes).

    The mode is the first largest probability. Normalizing (over every logit, masked ones
    too), masking and the softmax keep the logits' order but may round near-equal ones into a
    tie, so the largest allowed logit is the mode when no other allowed one is within rounding
    of it (relative to the largest logit); otherwise the probabilities are computed as
    sb3-contrib's ``MaskableCategorical`` computes them."""
    logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
    raw = logits[0].cpu().numpy()
    values = raw if masks is None else np.where(masks, raw, -np.inf)
    best = int(np.argmax(values))
    if np.count_nonzero(values >= values[best] - NEAR_TIE * (1.0 + np.abs(raw).max())) == 1:
        return best
    logits = logits - logits.logsumexp(dim=-1, keepdim=True)
    if masks is not None:
        allowed = torch.as_tensor(masks, dtype=torch.bool, device=logits.device)
        logits = torch.where(allowed.reshape(logits.shape), logits, logits.new_tensor(-1e8))
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)
    return int(torch.softmax(logits, dim=-1).argmax())


#: Logits closer than this (relative) may round into a tie on their way to probabilities.
NEAR_TIE = 1e-5


def _recurrent_actor(model: Any) -> Callable[[dict[str, np.ndarray], Any, bool], Any]:
    """``predict`` with the LSTM state carried from step to step."""
    memory: dict[str, Any] = {"state": None, "start": np.ones(1, dtype=bool)}

    def act(obs: dict[str, np.ndarray], env: Any, deterministic: bool) -> Any:
        action, memory["state"] = model.predict(
            obs, state=memory["state"], episode_start=memory["start"], deterministic=deterministic
        )
        memory["start"] = np.zeros(1, dtype=bool)
        return as_action(action)

    return act


def best_rollout(
    model: Any,
    env: Any,
    *,
    graph: int | None = None,
    samples: int = 0,
    seed: int = 0,
    greedy: Rollout | None = None,
) -> tuple[Rollout, Rollout]:
    """The greedy rollout and the best of it and ``samples`` sampled ones (feasible first);
    ``greedy``: the greedy rollout, when it has run already."""
    greedy = rollout(model, env, graph=graph, seed=seed) if greedy is None else greedy
    best = greedy
    for k in range(samples):
        candidate = rollout(model, env, graph=graph, deterministic=False, seed=seed + 1 + k)
        if (not best.feasible, best.runtime) > (not candidate.feasible, candidate.runtime):
            best = candidate
    return greedy, best


def sampled_rollouts(
    model: Any,
    env: Any,
    count: int,
    *,
    graph: int = 0,
    seed: int = 0,
    max_simulations: float = np.inf,
) -> tuple[list[Rollout], int]:
    """``count`` sampled episodes of ``model`` on ``env``'s graph, stepped side by side in
    copies of the env so that each step is one batched forward pass of the policy (episode
    ``k`` is reset with seed ``seed + k``). A recurrent model runs them one after another.

    Args:
        max_simulations: Stop as soon as the copies have made this many simulator
            evaluations; the episodes unfinished then are dropped.

    Returns:
        The finished episodes, and the simulator evaluations the copies made.
    """
    if _is_recurrent(model):
        return _sampled_one_by_one(model, env, count, graph, seed, max_simulations)
    copies = [copy.deepcopy(env) for _ in range(count)]  # wrappers included
    bases = [getattr(c, "unwrapped", c) for c in copies]
    first = [b.simulations for b in bases]
    visits = [VisitedBest(c) for c in copies]
    observations = []
    for k, (c, visited) in enumerate(zip(copies, visits, strict=True)):
        obs, info = c.reset(seed=seed + k, options={"graph": graph})
        observations.append(obs)
        visited.see(info)
    policy, masked = model.policy, uses_masks(model)
    totals, finished = [0.0] * count, [None] * count

    def spent() -> int:
        return sum(b.simulations - f for b, f in zip(bases, first, strict=True))

    model.policy.set_training_mode(False)
    with torch.inference_mode():
        while any(f is None for f in finished) and spent() < max_simulations:
            live = [k for k in range(count) if finished[k] is None]
            batch = {
                key: torch.as_tensor(
                    np.stack([observations[k][key] for k in live]), device=policy.device
                )
                for key in observations[0]
            }
            extra = (
                {"action_masks": np.stack([bases[k].action_masks() for k in live])}
                if masked
                else {}
            )
            actions = policy.get_distribution(batch, **extra).get_actions(deterministic=False)
            for k, action in zip(live, actions.cpu().numpy(), strict=True):
                if spent() >= max_simulations:
                    break
                observations[k], reward, terminated, truncated, info = copies[k].step(
                    as_action(action)
                )
                totals[k] += reward
                visits[k].see(info)
                if terminated or truncated:
                    finished[k] = visits[k].outcome(Rollout.ended(info, totals[k]))
    return [f for f in finished if f is not None], spent()


def _sampled_one_by_one(
    model: Any, env: Any, count: int, graph: int, seed: int, max_simulations: float
) -> tuple[list[Rollout], int]:
    """:func:`sampled_rollouts` for a recurrent model: whole episodes in a copy of the env,
    while the costliest so far still fits."""
    env = copy.deepcopy(env)
    base = getattr(env, "unwrapped", env)
    runs, start, cost = [], base.simulations, 0
    for k in range(count):
        before = base.simulations
        if before - start + cost > max_simulations:
            break
        runs.append(rollout(model, env, graph=graph, deterministic=False, seed=seed + k))
        cost = max(cost, base.simulations - before)
    return runs, base.simulations - start


class GreedyEpisodes:
    """The greedy episodes of ``env``, each run once per weights of the policy.

    A greedy episode (reset seed 0, the most likely action at every step) is a function of the
    policy's weights and the graph, on an env whose episodes depend on nothing else (not one
    wrapped in :class:`~placerl.envs.StartFromBest`). Training asks for the same ones again:
    the periodic evaluations between two PPO updates run the weights the rollback check ran
    after the update, the weights a check restores ran before, and the final evaluation
    repeats the last check: 8 of the 14 greedy episodes of an order-study job (5,000 steps,
    an evaluation every 1,000). The episodes of the last ``keep`` weights are kept, by a
    digest of the policy's state (``keep=0``: none, every call runs its episodes).

    Attributes:
        env: The env the episodes run on.
        runs: Episodes run.
        reused: Episodes answered from memory.
    """

    def __init__(self, env: Any, keep: int = 8) -> None:
        self.env, self.keep = env, keep
        self._by_weights: dict[bytes, dict[int, Rollout]] = {}  # oldest first
        self.runs = self.reused = 0

    def rollouts(
        self, model: Any, indices: Sequence[int] | np.ndarray | None = None
    ) -> list[Rollout]:
        """The greedy episode of ``model`` on every graph of the env (or those at ``indices``)."""
        graphs = range(len(self.env.graphs)) if indices is None else indices
        known = self._episodes_of(model)
        results = []
        for g in map(int, graphs):
            if g in known:
                self.reused += 1
            else:
                known[g] = rollout(model, self.env, graph=g, seed=0)
                self.runs += 1
            results.append(known[g])
        return results

    def score(
        self,
        model: Any,
        indices: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[list[Rollout], float]:
        """:meth:`rollouts` and their mean runtime over the reference runtime (the score
        evaluations and rollback compare)."""
        results = self.rollouts(model, indices)
        return results, float(np.mean([r.runtime / r.reference_runtime for r in results]))

    def _episodes_of(self, model: Any) -> dict[int, Rollout]:
        """The episodes known for ``model``'s weights (a fresh dict if none), now the newest."""
        if self.keep <= 0:
            return {}
        digest = hashlib.blake2b(digest_size=16)
        for tensor in model.policy.state_dict().values():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        key = digest.digest()
        known = self._by_weights.pop(key, {})
        self._by_weights[key] = known
        while len(self._by_weights) > self.keep:
            del self._by_weights[next(iter(self._by_weights))]
        return known


def spread_graphs(count: int, chosen: int) -> np.ndarray:
    """``chosen`` graph indices spread evenly over ``0 .. count - 1`` (the first always, the
    last too when ``chosen`` is at least 2; all of them when ``chosen`` is 0 or at least
    ``count``)."""
    if chosen <= 0 or chosen >= count:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, chosen).round().astype(np.int64))
