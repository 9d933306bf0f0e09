"""What every placerl feature extractor shares: reading the padded batch and the device rows.

An extractor maps the env's ``Dict`` observation (see :class:`placerl.envs.PlacementEnv`) to
one flat vector laid out as ``[context | device rows]``:

* ``context`` (``context_dim`` values): what the extractor's encoder says about the current node
  and the graph (subclasses implement :meth:`PlacementExtractor.context`);
* one row of ``device_dim`` values per device: the share of the graph's compute and memory
  already placed on it (from the ``nodes`` one-hot columns) followed, unless
  ``device_features=False``, by the env's ``devices`` features (what HEFT sees).

The encoders read the ``nodes`` columns that do not depend on the device count
(:data:`NODE_INPUTS`: the static features, the placed and current flags, HEFT's rank); the
one-hot device columns reach the policy through the device rows only. So no parameter has a
device-count dimension: a policy trained on 4 devices places on 2 or 8, rebuilt for the
cluster's observation space (:func:`~placerl.agents.fitting.fit_to_env`). Where a node sits
reaches the current node's decision as the device rows' ``transfer`` (and, with HEFT's
features, ``start`` and ``finish``) columns, which price its placed neighbours' devices.

The device-equivariant heads of :mod:`placerl.agents.heads` read that layout back, score every
device with one shared network, and so work for any device count. An extractor built with
``per_node=True`` (for the heads that score every node, :mod:`placerl.agents.node_heads` and
:mod:`placerl.agents.attention_heads`) appends the phase flag (1 when a node is current), the
``node_mask`` and every node row's state, ``(max_nodes, node_dim)`` flattened; then, when the
observation has ``groups`` (the hierarchical env's group of every row, one-hot), those too,
``(max_nodes, group_dim)`` flattened, for :mod:`placerl.agents.group_heads`.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from placerl._options import check_int
from placerl.envs.case import COST, MEM_BYTES, NUM_BASE_FEATURES
from placerl.errors import ConfigError

#: Per-device summary columns computed from the ``nodes`` observation (compute, memory shares).
NUM_SUMMARY = 2
#: The ``nodes`` columns the encoders read: those before the per-device one-hot columns.
NODE_INPUTS = NUM_BASE_FEATURES


class PlacementExtractor(BaseFeaturesExtractor):
    """Base class: subclasses turn the batch into a ``(B, context_dim)`` context.

    Args:
        observation_space: The env's ``Dict`` space (``graph`` observation mode for the graph
            extractors).
        context_dim: Width of :meth:`context`'s output.
        device_features: Append the env's ``devices`` features to every device row.
        node_dim: Width of the per-node states appended to the output (0: none).

    Attributes:
        context_dim: Width of the context part of the output.
        node_dim: Width of one node's state in the output (0 when the output has none).
        group_dim: Width of one row's group one-hot in the output (0 when it has none).
        num_devices: Devices of the observation space.
        device_dim: Width of one device row.
        num_features: Width of the node rows the encoder reads (:data:`NODE_INPUTS`).
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        context_dim: int,
        device_features: bool = True,
        node_dim: int = 0,
    ) -> None:
        missing = {"nodes", "edge_index", "edge_mask", "node_mask", "current", "devices"}
        missing -= set(getattr(observation_space, "spaces", {}))
        if missing:
            raise ConfigError(
                "placerl extractors read the observation of the placerl placement envs; "
                f"this space lacks {', '.join(sorted(missing))}"
            )
        num_nodes, num_features = observation_space["nodes"].shape
        num_devices, num_device_features = observation_space["devices"].shape
        if num_features != NODE_INPUTS + num_devices:
            raise ConfigError(
                f"placerl extractors read {NODE_INPUTS} node columns and one per device; this "
                f"space's nodes have {num_features} columns for {num_devices} devices"
            )
        self.num_devices = num_devices
        self.device_features = bool(device_features)
        self.device_dim = NUM_SUMMARY + (num_device_features if device_features else 0)
        self.context_dim = context_dim
        self.num_nodes, self.num_features = num_nodes, NODE_INPUTS
        self.node_dim = node_dim
        groups = observation_space.spaces.get("groups")
        self.group_dim = int(groups.shape[1]) if node_dim and groups is not None else 0
        nodes_part = 1 + num_nodes * (1 + node_dim + self.group_dim) if node_dim else 0
        super().__init__(
            observation_space, context_dim + num_devices * self.device_dim + nodes_part
        )

    def context(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(B, context_dim)``: what the encoder says about the current node and the graph."""
        raise NotImplementedError

    def encode(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The context and, when ``node_dim`` > 0, every row's state ``(B, N, node_dim)``."""
        return self.context(obs), None

    @contextlib.contextmanager
    def episode(self) -> Iterator[None]:
        """A block in which calls see the observations of one episode, step after step (one
        env, no gradients): an extractor may reuse what it computed for the last one. Not
        thread-safe: one episode at a time per extractor. Here a no-op."""
        yield

    def device_rows(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(B, D, device_dim)``: placed compute and memory shares, then the HEFT features."""
        nodes = obs["nodes"]
        onehot = nodes[..., NUM_BASE_FEATURES : NUM_BASE_FEATURES + self.num_devices]  # (B, N, D)
        weights = nodes[..., [COST, MEM_BYTES]]  # (B, N, 2)
        totals = weights.sum(dim=1, keepdim=True).clamp_min(1e-9)  # (B, 1, 2)
        shares = onehot.transpose(1, 2) @ (weights / totals)  # (B, D, 2)
        if not self.device_features:
            return shares
        return torch.cat([shares, obs["devices"]], dim=-1)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        context, states = self.encode(obs)
        parts = [context, self.device_rows(obs).flatten(1)]
        if self.node_dim:
            phase = obs["current"].sum(dim=1, keepdim=True)
            parts += [phase, obs["node_mask"], states.flatten(1)]
            if self.group_dim:
                parts.append(obs["groups"].flatten(1))
        return torch.cat(parts, dim=1)


class NodeInputs(nn.Module):
    """The :data:`NODE_INPUTS` columns of node rows ``(..., F)``: what the encoders read."""

    def forward(self, nodes: torch.Tensor) -> torch.Tensor:
        return nodes[..., :NODE_INPUTS]


def node_embedding(hidden: int) -> nn.Sequential:
    """The first layer of the encoders: node rows' :data:`NODE_INPUTS` columns to ``hidden``
    values, ReLU (the one-hot device columns are not read: see the module)."""
    return nn.Sequential(NodeInputs(), nn.Linear(NODE_INPUTS, hidden), nn.ReLU())


def check_sizes(owner: str, **sizes: Any) -> None:
    """Refuse layer widths and counts below 1, naming ``owner``'s option (a zero width builds
    empty tensors that train nothing, without an error from torch)."""
    for name, value in sizes.items():
        check_int(value, f"{owner} option {name!r}", minimum=1)


def current_rows(hidden: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """``(B, H)``: each sample's row of ``hidden`` (B, N, H) at its one-hot ``current`` row."""
    return torch.einsum("bnh,bn->bh", hidden, current)


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, H)``: mean of ``hidden`` (B, N, H) over the rows where ``mask`` (B, N) is 1."""
    return torch.einsum("bnh,bn->bh", hidden, mask) / mask.sum(dim=1, keepdim=True).clamp_min(1)


def mlp(sizes: list[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear layers of the given sizes with ``activation`` between them (none at the end)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers)
