"""A per-node policy on a larger padding: the same weights in a network built for it.

A policy whose head scores every node row (the dual, one-shot and hierarchical envs' heads)
reads its extractor's output laid out row by row, ``max_nodes`` rows, and acts over
``max_nodes`` action rows: the *network* is tied to the padding it was built for. Its
*weights* are not: placerl's extractors embed each node and pass messages with shared
layers, and the heads score each row (or each group) with shared layers too, so no parameter
has a node-count dimension. :func:`fit_padding` builds the policy again for an env of a
larger padding and loads the weights into it: the policy places graphs of any size, as the
hierarchical planner's grouper-placer must (trained on graphs of tens of nodes, placing
ones of 100k).

Whether every parameter keeps its shape is checked, not assumed: a policy whose weights do
depend on the padding (SB3's own extractor, which flattens the observation) is refused by
name.
"""

from __future__ import annotations

import copy
from typing import Any

from gymnasium import spaces

from placerl.errors import ConfigError


def space_shapes(space: spaces.Space) -> dict[str, tuple[int, ...]]:
    """The shape of every part of ``space`` (a ``Dict``'s keys, a ``MultiDiscrete``'s
    ``nvec``): all a policy's network depends on (bounds are not)."""
    if isinstance(space, spaces.Dict):
        return {key: tuple(part.shape) for key, part in space.spaces.items()}
    if isinstance(space, spaces.MultiDiscrete):
        return {"nvec": tuple(space.nvec.tolist())}
    return {"": (*space.shape, int(getattr(space, "n", 0)))}


def fits(model: Any, env: Any) -> bool:
    """Whether ``model``'s network reads ``env``'s observations and acts in its action space
    as built (the same shapes)."""
    return (space_shapes(model.observation_space) == space_shapes(env.observation_space)
            and space_shapes(model.action_space) == space_shapes(env.action_space))  # fmt: skip


def reads_any_size(model: Any) -> bool:
    """Whether ``model`` places graphs of any size as it is: a feed-forward policy whose
    placerl extractor summarizes the graph (its context: message passing, pooling; no per-node
    states laid out by row), so that its output does not depend on the padding. The envs
    whose actions name rows (dual, one-shot, hierarchical) need per-node states: those place
    a graph beyond their padding rebuilt for it (:func:`fit_padding`). A recurrent policy
    acts through SB3's ``predict``, which refuses observations of another shape than the
    model's: it reads only graphs within its padding."""
    from placerl.agents.extractors.base import PlacementExtractor

    extractors = (model.policy.pi_features_extractor, model.policy.vf_features_extractor)
    return not _is_recurrent(model) and all(
        isinstance(e, PlacementExtractor) and not e.node_dim for e in extractors
    )


def places_any_size(model: Any) -> bool:
    """Whether ``model`` places graphs beyond its padding: as it is (:func:`reads_any_size`)
    or rebuilt for a larger one (:func:`fit_padding`): a feed-forward policy over placerl's
    extractors, whose parameters have no node-count dimension."""
    from placerl.agents.extractors.base import PlacementExtractor

    extractors = (model.policy.pi_features_extractor, model.policy.vf_features_extractor)
    return not _is_recurrent(model) and all(isinstance(e, PlacementExtractor)
                                            for e in extractors)  # fmt: skip


def _is_recurrent(model: Any) -> bool:
    return hasattr(model.policy, "lstm_actor")


def fit_padding(model: Any, env: Any) -> Any:
    """``model``, or a copy of it whose policy is built for ``env``'s padding and holds the
    same weights (see the module): ``model`` itself when its network reads ``env`` as built
    (:func:`fits`, :func:`reads_any_size`).

    The copy shares everything but the policy and its spaces with ``model``: it is for
    placing (greedy and sampled episodes, the searches that run them), not for training.
    Building the policy costs about what building it for training did (its optimizer
    included), once per call: call it once per env.

    Args:
        model: A feed-forward model of :func:`~placerl.agents.make_agent` (or
            :func:`placerl.train.train`).
        env: A placement env (wrappers are fine) of the env kind the model was trained on.

    Raises:
        ConfigError: A recurrent model (SB3's ``predict`` refuses observations of another
            shape), or a policy with a parameter whose shape depends on the padding, naming
            the parameter.
    """
    if fits(model, env) or reads_any_size(model):
        return model
    if _is_recurrent(model):
        raise ConfigError("a recurrent policy acts through SB3's predict, which reads only "
                          "observations of the shape it was trained on: train it with the "
                          "padding it must read")  # fmt: skip
    policy = model.policy
    parameters = policy._get_constructor_parameters()  # what SB3's own policy.save() keeps
    parameters.update(observation_space=env.observation_space, action_space=env.action_space)
    rebuilt = type(policy)(**parameters)
    weights = policy.state_dict()
    for name, tensor in rebuilt.state_dict().items():
        if name not in weights or weights[name].shape != tensor.shape:
            had = tuple(weights[name].shape) if name in weights else "no such parameter"
            raise ConfigError(
                f"the policy's parameter {name!r} has shape {had} for its padding and "
                f"{tuple(tensor.shape)} for the env's: its network's weights depend on the "
                "padding (SB3's own extractor flattens every node), so it reads only graphs "
                "within the padding it was trained with"
            )
    rebuilt.load_state_dict(weights)
    rebuilt.to(policy.device).set_training_mode(False)
    fitted = copy.copy(model)  # shallow: the algorithm's state is shared, never trained here
    fitted.policy = rebuilt
    fitted.observation_space, fitted.action_space = env.observation_space, env.action_space
    return fitted
