"""``make_agent``: an SB3 / sb3-contrib algorithm with a placerl extractor and head, by name.

Algorithms (the :data:`ALGORITHMS` registry):

* ``maskable_ppo`` (default) - sb3-contrib's MaskablePPO: the policy never picks a device the
  env's :meth:`~placerl.envs.base.PlacementEnvBase.action_masks` rules out.
* ``ppo``, ``a2c`` - SB3's PPO and A2C, without masks: an action the mask forbids is handled
  as the env's ``invalid_action`` option says (:mod:`placerl.envs.invalid`): ``nearest``
  (default) replaces it by the nearest allowed action, ``penalize`` does so and subtracts a
  penalty from the step's reward, ``raise`` raises.
* ``recurrent_ppo`` - sb3-contrib's RecurrentPPO with ``MultiInputLstmPolicy``: an LSTM across
  the steps of an episode, like the decoder of the seq2seq placers. It cannot use action
  masks (sb3-contrib has no masked recurrent policy), so a forbidden action it takes goes
  through the env's ``invalid_action`` option as well; and its LSTM sits between the
  extractor and the head, so it uses SB3's MLP head.

Heads (``head=``): ``devices`` (default where possible), the device-equivariant heads of
:mod:`placerl.agents.heads`; ``mlp``, SB3's MLP over the flat features, tied to one device count;
``nodes`` (``maskable_ppo`` only; the dual env's head), DOPPLER's select-then-place heads of
:mod:`placerl.agents.node_heads`; ``attention`` (``maskable_ppo`` only; the one-shot env's head),
GDP's attention over every node, :mod:`placerl.agents.attention_heads`; ``groups``
(``maskable_ppo`` only; the hierarchical env's head), Mirhoseini et al.'s grouper-placer,
:mod:`placerl.agents.group_heads`.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from placerl._extras import require
from placerl._options import check_int, check_options
from placerl._registry import Registry
from placerl.agents.schedules import parse_schedules
from placerl.errors import ConfigError

#: Hyperparameters shared by the PPO variants, chosen by measurement. Episodes are short and
#: the reward comes at the end, so no discounting. On a 100-node synthetic graph on 4 Placeto
#: GPUs (GNN, 4 envs, 12k steps) the final greedy runtime relative to HEFT was 1.204 with
#: SB3's learning rate 3e-4 and an entropy bonus of 0.01, 1.091 at 3e-4 without the bonus,
#: 1.013 at 1e-3 with it and 1.002 at 1e-3 without it; on the sanity problems the bonus kept
#: PPO in the alternating local optimum of ``branches`` for all three seeds. Two epochs at
#: twice that rate replaced 4 at 1e-3: over 16 seeds per graph and extractor no difference in
#: learning per env step was detectable (curve means 0.961x for the GNN, 1.012x for the
#: LSTM), in 0.57x to 0.80x the training time (benchmarks/results/archive/NOTEBOOK.md,
#: "Learning per env step").
PPO_DEFAULTS: dict[str, Any] = {
    "learning_rate": 2e-3,
    "n_steps": 256,
    "batch_size": 256,
    "n_epochs": 2,
    "gamma": 1.0,
    "gae_lambda": 0.95,
    "ent_coef": 0.0,
}

#: SB3's Adam settings for its policies (``eps``), with the update fused into one kernel per
#: parameter step: SB3's default, torch's per-tensor loop, took a tenth of a GNN's PPO update
#: on 2 cores (a minibatch's forward, backward and step went from 19.4 to 17.0 ms, 100 nodes).
ADAM: dict[str, Any] = {"eps": 1e-5, "fused": True}

#: The most env steps in a PPO rollout, all envs together (4 envs x 256 steps): with more envs,
#: each takes its share (8 envs x 128), so that batching the policy's forward pass over envs
#: leaves the updates as they were (see ``benchmarks/bench_learning_per_step.py``).
PPO_ROLLOUT = 1024


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm.

    Attributes:
        name: Registry name.
        module: Module of the SB3 class, imported on first use.
        cls_name: The SB3 class.
        policies: Policy (class path or SB3 policy name) per head.
        masks: The algorithm uses the env's action masks.
        defaults: Hyperparameters placerl passes unless overridden.
        rollout: The most env steps per rollout, all envs together: unless ``n_steps`` is
            given, each env takes the default ``n_steps`` or ``rollout / n_envs`` (rounded
            up), whichever is fewer, so that adding envs batches the policy's forward pass
            without changing how many steps each update sees.
        optimizer: The policy's ``optimizer_kwargs`` unless ``policy_kwargs`` gives them or
            an ``optimizer_class``.
    """

    name: str
    module: str
    cls_name: str
    policies: Mapping[str, str]
    masks: bool
    defaults: Mapping[str, Any] = field(default_factory=dict)
    rollout: int = 0
    optimizer: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> type:
        """The SB3 algorithm class."""
        return getattr(require(self.module, f"algorithm {self.name!r}"), self.cls_name)

    def policy(self, head: str) -> Any:
        """The policy class (or SB3 policy name) for ``head``."""
        if head not in self.policies:
            raise ConfigError(
                f"algorithm {self.name!r} has heads {', '.join(self.policies)}, not {head!r}"
            )
        target = self.policies[head]
        if ":" not in target:
            return target
        module, name = target.split(":")
        return getattr(importlib.import_module(module), name)


#: The RL algorithms :func:`make_agent` builds, by name (``agent.algo``).
ALGORITHMS: Registry[Algorithm] = Registry("algorithm")
_HEADS = "placerl.agents.heads"
for _algo in (
    Algorithm(
        "maskable_ppo",
        "sb3_contrib",
        "MaskablePPO",
        {
            "devices": f"{_HEADS}:MaskableDevicePolicy",
            "mlp": "MultiInputPolicy",
            "nodes": "placerl.agents.node_heads:MaskableNodePolicy",
            "attention": "placerl.agents.attention_heads:MaskableAttentionPolicy",
            "groups": "placerl.agents.group_heads:MaskableGroupPolicy",
        },
        masks=True,
        defaults=PPO_DEFAULTS,
        rollout=PPO_ROLLOUT,
        optimizer=ADAM,
    ),
    Algorithm(
        "ppo",
        "stable_baselines3",
        "PPO",
        {"devices": f"{_HEADS}:DevicePolicy", "mlp": "MultiInputPolicy"},
        masks=False,
        defaults=PPO_DEFAULTS,
        rollout=PPO_ROLLOUT,
        optimizer=ADAM,
    ),
    Algorithm(
        "a2c",
        "stable_baselines3",
        "A2C",
        {"devices": f"{_HEADS}:DevicePolicy", "mlp": "MultiInputPolicy"},
        masks=False,
        defaults={"gamma": 1.0, "n_steps": 32, "learning_rate": 1e-3},
    ),
    Algorithm(
        "recurrent_ppo",
        "sb3_contrib",
        "RecurrentPPO",
        {"mlp": "MultiInputLstmPolicy"},
        masks=False,
        defaults=PPO_DEFAULTS,
        rollout=PPO_ROLLOUT,
        optimizer=ADAM,
    ),
):
    ALGORITHMS.register(_algo.name, _algo)


def make_agent(
    algo: str,
    env: gym.Env | Any,
    extractor: str | None = "gnn",
    *,
    head: str | None = None,
    seed: int = 0,
    extractor_kwargs: Mapping[str, Any] | None = None,
    policy_kwargs: Mapping[str, Any] | None = None,
    device: str = "auto",
    verbose: int = 0,
    **hyperparams: Any,
) -> Any:
    """Build an SB3 model for a placement env.

    Args:
        algo: An :data:`ALGORITHMS` name (``maskable_ppo``, ``ppo``, ``a2c``, ``recurrent_ppo``).
        env: A placement env, or a vector env of them.
        extractor: ``gnn``, ``lstm``, ``mlp`` (:data:`~placerl.agents.extractors.EXTRACTORS`),
            or ``None`` for SB3's own ``CombinedExtractor``, which flattens every key into an
            MLP and needs the env's ``observation="flat"``.
        head: ``devices`` (device-equivariant; the default with a placerl extractor),
            ``mlp`` (SB3's; the default without one and for ``recurrent_ppo``), ``nodes``
            (select-then-place; the dual env's), ``attention`` (the one-shot env's) or
            ``groups`` (grouper-placer; the hierarchical env's); these need the ``gnn`` or
            ``lstm`` extractor, and are picked for their env.
        seed: Seeds the model (and through it the env).
        extractor_kwargs: Options of the extractor (``layer``, ``hidden``, ``rounds``, ...).
        policy_kwargs: Further SB3 ``policy_kwargs`` (``head_hidden`` for the device head).
        device: Torch device (``auto``, ``cpu``, ``cuda``).
        verbose: SB3 verbosity.
        **hyperparams: The algorithm's own arguments; they override :attr:`Algorithm.defaults`.
            ``learning_rate`` and the clip ranges may be schedules ``lin_<start>``
            (:mod:`placerl.agents.schedules`).

    Returns:
        The SB3 model, with the env's :meth:`~placerl.envs.base.PlacementEnvBase.settings` kept
        as ``model.placerl_settings`` (saved in its zip;
        :func:`~placerl.agents.placer.policy_placer` rebuilds the env from them).

    Raises:
        ConfigError: Unknown algorithm, extractor, head or hyperparameter; SB3's extractor on
            the ``graph`` observation.
    """
    from placerl.agents.extractors import EXTRACTORS

    spec = ALGORITHMS[algo]
    cls = spec.load()
    settings = _env_settings(env)
    needed = ENV_HEADS.get(settings.get("env"))
    if head is None:
        head = (needed or "devices") if extractor is not None else "mlp"
        head = head if head in spec.policies else "mlp"
    _check_head(head, settings.get("env"), extractor, algo)
    policy = spec.policy(head)
    kwargs = dict(policy_kwargs or {})
    if spec.optimizer and not {"optimizer_class", "optimizer_kwargs"} & kwargs.keys():
        kwargs["optimizer_kwargs"] = dict(spec.optimizer)  # for SB3's own optimizer class
    extractor_kwargs = {**(extractor_kwargs or {}), **({"per_node": True} if needed else {})}
    if extractor is None:
        if settings.get("observation") == "graph":
            raise ConfigError(
                "SB3's own extractor feeds raw edge indices to an MLP, which saturates and "
                "learns nothing: build the env with observation='flat', or pick an extractor "
                f"({', '.join(EXTRACTORS)})"
            )
        if head == "devices":
            raise ConfigError("the device head needs a placerl extractor (gnn, lstm, mlp)")
    else:
        extractor_cls = EXTRACTORS[extractor]
        check_options(
            extractor_cls.__init__,
            dict(extractor_kwargs or {}),
            what=f"extractor {extractor!r}",
            error=ConfigError,
            given=("self", "observation_space"),
        )
        kwargs["features_extractor_class"] = extractor_cls
        kwargs["features_extractor_kwargs"] = dict(extractor_kwargs or {})
    options = parse_schedules({**spec.defaults, **hyperparams})
    if spec.rollout and "n_steps" not in hyperparams:
        options["n_steps"] = min(options["n_steps"], -(-spec.rollout // _num_envs(env)))
    check_options(
        cls.__init__, options, what=f"algorithm {algo!r}", error=ConfigError, given=_GIVEN
    )
    for name in _COUNTS:  # SB3 takes 0 and trains nothing, or fails deep inside an update
        if name in options:
            check_int(options[name], f"option {name!r} of algorithm {algo!r}", minimum=1)
    if settings.get("num_devices") == 1:
        warnings.warn(
            "the env has one device: every placement puts every node there, so "
            "the policy has nothing to choose",
            UserWarning,
            stacklevel=2,
        )
    if "batch_size" in options and "n_steps" in options:
        options["batch_size"] = min(options["batch_size"], options["n_steps"] * _num_envs(env))
    model = cls(
        policy, env, policy_kwargs=kwargs, seed=seed, device=device, verbose=verbose, **options
    )
    model.placerl_settings = {**settings, "algo": algo, "extractor": extractor, "head": head}
    return in_memory_logger(model)


def in_memory_logger(model: Any) -> Any:
    """Give ``model`` an SB3 logger that keeps its records in memory (and prints them when
    ``model.verbose``): without one, every ``learn`` call leaves an empty ``SB3-<date>`` folder
    in the temporary directory. A model with ``tensorboard_log`` keeps SB3's own logger.

    Returns:
        ``model``.
    """
    if getattr(model, "tensorboard_log", None) is None:
        from stable_baselines3.common.logger import HumanOutputFormat, Logger

        outputs = [HumanOutputFormat(sys.stdout)] if model.verbose >= 1 else []
        model.set_logger(Logger(folder=None, output_formats=outputs))
    return model


#: The head an env kind's actions need (the other kinds take ``devices`` or ``mlp``): the dual
#: env's rows then devices, the one-shot env's device per row, the hierarchical env's group per
#: row then device per group.
ENV_HEADS = {"dual": "nodes", "one_shot": "attention", "hierarchical": "groups"}


def _check_head(head: str, env_kind: str | None, extractor: str | None, algo: str) -> None:
    """An env kind of :data:`ENV_HEADS` needs its head, and those heads need their env."""
    needed = ENV_HEADS.get(env_kind)
    if needed is not None and head != needed:
        raise ConfigError(
            f"the {env_kind} env needs head={needed!r} with algo='maskable_ppo' and extractor "
            f"'gnn' or 'lstm', got head={head!r}, algo={algo!r}"
        )
    if head in ENV_HEADS.values() and needed != head:
        kind = next(k for k, h in ENV_HEADS.items() if h == head)
        raise ConfigError(
            f"head={head!r} is the {kind} env's (env={kind!r}), not the {env_kind} env's"
        )
    if needed is not None and extractor not in ("gnn", "lstm"):
        raise ConfigError(f"head={head!r} needs extractor 'gnn' or 'lstm', got {extractor!r}")


#: Hyperparameters that count steps, samples or passes: each must be at least 1.
_COUNTS = ("n_steps", "batch_size", "n_epochs")

#: Arguments of the SB3 constructors that make_agent fills itself.
_GIVEN = ("self", "policy", "env", "policy_kwargs", "seed", "device", "verbose")


def _num_envs(env: Any) -> int:
    return getattr(env, "num_envs", 1)


def _env_settings(env: Any) -> dict[str, Any]:
    """The placement env's settings, from an env, a wrapped env or a vector env."""
    if hasattr(env, "env_method"):  # a VecEnv
        return env.env_method("settings", indices=[0])[0]
    unwrapped = getattr(env, "unwrapped", env)
    if not hasattr(unwrapped, "settings"):
        raise ConfigError(f"make_agent needs a placerl placement env, got {type(env).__name__}")
    return unwrapped.settings()
