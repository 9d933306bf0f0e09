"""A policy on another env's shapes: the same weights in a network built for that env.

A policy's *network* is built for the observation and action spaces it trained on: a padding
of ``max_nodes`` rows, and one device row (and one action) per device of its cluster. Its
*weights* need not be: placerl's extractors embed each node and pass messages with shared
layers, read no per-device node column (:mod:`placerl.agents.extractors.base`), and the
device and node heads score each device, row or group with shared layers, so none of their
parameters has a node-count or device-count dimension. :func:`fit_to_env` builds the policy
again for the env's spaces and loads the weights into it: a policy places graphs of any size
(the hierarchical planner's grouper-placer, trained on graphs of tens of nodes, places ones of
100k) on clusters of any device count (one trained on 4 devices places on 2 or 8).

Whether every parameter keeps its shape is checked, not assumed: a policy whose weights do
depend on the padding (SB3's own extractor, which flattens the observation) or on the device
count (a head with one output per device: ``attention``, ``group``, SB3's ``mlp``) is refused,
naming the parameter. The ``device`` head (every env but dual, one-shot and hierarchical) and
the dual env's ``nodes`` head place on any device count.
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
    return space_shapes(model.observation_space) == space_shapes(
        env.observation_space
    ) and space_shapes(model.action_space) == space_shapes(env.action_space)


def reads_any_size(model: Any) -> bool:
    """Whether ``model`` places graphs of any size as it is: a feed-forward policy whose
    placerl extractor summarizes the graph (its context: message passing, pooling; no per-node
    states laid out by row), so that its output does not depend on the padding. The envs
    whose actions name rows (dual, one-shot, hierarchical) need per-node states: those place
    a graph beyond their padding rebuilt for it (:func:`fit_to_env`). A recurrent policy
    acts through SB3's ``predict``, which refuses observations of another shape than the
    model's: it reads only graphs within its padding."""
    from placerl.agents.extractors.base import PlacementExtractor

    extractors = (model.policy.pi_features_extractor, model.policy.vf_features_extractor)
    return not _is_recurrent(model) and all(
        isinstance(e, PlacementExtractor) and not e.node_dim for e in extractors
    )


def places_any_size(model: Any) -> bool:
    """Whether ``model`` places graphs beyond its padding: as it is (:func:`reads_any_size`)
    or rebuilt for a larger one (:func:`fit_to_env`): a feed-forward policy over placerl's
    extractors, whose parameters have no node-count dimension."""
    from placerl.agents.extractors.base import PlacementExtractor

    extractors = (model.policy.pi_features_extractor, model.policy.vf_features_extractor)
    return not _is_recurrent(model) and all(isinstance(e, PlacementExtractor) for e in extractors)


def _is_recurrent(model: Any) -> bool:
    return hasattr(model.policy, "lstm_actor")


def fit_to_env(model: Any, env: Any) -> Any:
    """``model``, or a copy of it whose policy is built for ``env``'s spaces and holds the
    same weights (see the module): ``model`` itself when its network reads ``env`` as built
    (:func:`fits`), or reads it as it is (:func:`reads_any_size`, on as many devices).

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
            shape), or a policy with a parameter whose shape depends on the padding or the
            device count, naming the parameter and what the policy reads.
    """
    same_devices = model_devices(model) == env_devices(env)
    if fits(model, env) or (same_devices and reads_any_size(model)):
        return model
    if _is_recurrent(model):
        raise ConfigError(
            "a recurrent policy acts through SB3's predict, which reads only "
            "observations of the shape it was trained on: train it with the "
            "padding and the cluster it must read"
        )
    policy = model.policy
    parameters = policy._get_constructor_parameters()  # what SB3's own policy.save() keeps
    parameters.update(observation_space=env.observation_space, action_space=env.action_space)
    rebuilt = type(policy)(**parameters)
    weights = policy.state_dict()
    for name, tensor in rebuilt.state_dict().items():
        if name not in weights or weights[name].shape != tensor.shape:
            raise ConfigError(_tied(name, weights.get(name), tensor, model, env, same_devices))
    rebuilt.load_state_dict(weights)
    rebuilt.to(policy.device).set_training_mode(False)
    fitted = copy.copy(model)  # shallow: the algorithm's state is shared, never trained here
    fitted.policy = rebuilt
    fitted.observation_space, fitted.action_space = env.observation_space, env.action_space
    return fitted


def model_devices(model: Any) -> int | None:
    """The device count ``model`` was trained on (``None``: not a placerl model)."""
    return (getattr(model, "placerl_settings", None) or {}).get("num_devices")


def env_devices(env: Any) -> int | None:
    """The device count of a placement env (wrappers are fine)."""
    return getattr(getattr(env, "unwrapped", env), "num_devices", None)


def _tied(name: str, had: Any, wanted: Any, model: Any, env: Any, same_devices: bool) -> str:
    """Why parameter ``name`` does not fit ``env``: what the policy's network is tied to."""
    shape = tuple(had.shape) if had is not None else "no such parameter"
    if same_devices:
        return (
            f"the policy's parameter {name!r} has shape {shape} for its padding and "
            f"{tuple(wanted.shape)} for the env's: its network's weights depend on the "
            "padding (SB3's own extractor flattens every node), so it reads only graphs "
            "within the padding it was trained with"
        )
    trained, given = model_devices(model), env_devices(env)
    return (
        f"the policy was trained on {trained} devices and the cluster has {given}; its "
        f"parameter {name!r} has shape {shape} there and {tuple(wanted.shape)} here: its "
        "network has one output or input per device (the attention, group or mlp head, "
        f"or SB3's own extractor), so it places on {trained} devices only; policies "
        "with the device or nodes head place on any device count"
    )
