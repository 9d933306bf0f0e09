"""The ``nodes`` head: DOPPLER's two policies, SEL (which ready node next) and PLC (its device).

For the dual env (:class:`~placerl.envs.dual.PlacementDualEnv`), whose action is a row in a
select step and a device in a place step. The extractor runs with ``per_node=True`` and so
outputs, after the ``[context | device rows]`` layout of
:class:`~placerl.agents.extractors.base.PlacementExtractor`, the phase flag, the node mask and
every node row's state. In a select step the head scores every row from its state and the
graph context with one shared network (node-equivariant, any graph size); in a place step it
scores the devices with the device-equivariant scorer of :mod:`placerl.agents.heads`. The env's mask
leaves the ready rows or the usable devices; the value head is the device heads' value.

Plugged into sb3-contrib's maskable policy by :class:`~placerl.agents.head_policy.HeadPolicy`.
"""

from __future__ import annotations

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from torch import nn
from torch.nn import functional as F

from placerl.agents.extractors.base import PlacementExtractor, mlp
from placerl.agents.head_policy import HeadPolicy
from placerl.agents.heads import DeviceScorer, DeviceValue

#: Logit of the padding entries of each phase's scores (the env's mask rules them out too).
_PAD = -1e8


class NodeDeviceScorer(nn.Module):
    """Action head over ``Discrete(max(N, D))``: row scores in a select step, device scores in
    a place step.

    Args:
        extractor: The per-node extractor whose output this head reads.
        hidden: Width of the shared scorers.
        actions: Size of the action space.
    """

    def __init__(self, extractor: PlacementExtractor, hidden: int, actions: int) -> None:
        super().__init__()
        self.context_dim, self.node_dim = extractor.context_dim, extractor.node_dim
        self.num_nodes, self.actions = extractor.num_nodes, actions
        self.devices_end = extractor.context_dim + extractor.num_devices * extractor.device_dim
        self.place = DeviceScorer(extractor.context_dim, extractor.device_dim, hidden)
        self.select = mlp([self.node_dim + self.context_dim, hidden, hidden, 1], nn.Tanh)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        devices = _padded(self.place(latent[:, : self.devices_end]), self.actions)
        selecting = (latent[:, self.devices_end] <= 0.5).nonzero().squeeze(1)
        if not selecting.numel():
            return devices
        rows = _padded(self._select_scores(latent[selecting]), self.actions)
        return devices.index_copy(0, selecting, rows)

    def _select_scores(self, latent: torch.Tensor) -> torch.Tensor:
        """``(B, N)``: the select scorer on every ``(row state, context)`` pair of the select
        steps' ``latent``. The first layer's context part is computed once per sample and
        broadcast over the rows (the same as scoring each concatenated pair: on a 100-node
        graph the pairs' first layer was most of a PPO update), and place steps, whose row
        scores are not used, are left out."""
        states = latent[:, self.devices_end + 1 + self.num_nodes :]  # after phase, node_mask
        states = states.reshape(latent.shape[0], self.num_nodes, self.node_dim)
        first, rest = self.select[0], self.select[1:]
        weight = first.weight
        hidden = (
            F.linear(states, weight[:, : self.node_dim], first.bias)
            + F.linear(latent[:, : self.context_dim], weight[:, self.node_dim :])[:, None, :]
        )
        return rest(hidden).squeeze(-1)


class NodeDeviceValue(nn.Module):
    """Value head: :class:`~placerl.agents.heads.DeviceValue` over ``[context | device rows]``."""

    def __init__(self, extractor: PlacementExtractor, hidden: int) -> None:
        super().__init__()
        self.devices_end = extractor.context_dim + extractor.num_devices * extractor.device_dim
        self.value = DeviceValue(extractor.context_dim, extractor.device_dim, hidden)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.value(latent[:, : self.devices_end])


def _padded(scores: torch.Tensor, size: int) -> torch.Tensor:
    if scores.shape[1] >= size:
        return scores[:, :size]
    return torch.nn.functional.pad(scores, (0, size - scores.shape[1]), value=_PAD)


class MaskableNodePolicy(HeadPolicy, MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's maskable multi-input policy with the select-then-place heads.

    ``head_hidden`` sets the width of the shared scorers; the extractor must be built with
    ``per_node=True`` (``make_agent`` does it).
    """

    head_name, per_node = "nodes", True

    def _heads(self, extractor: PlacementExtractor) -> None:
        self.action_net = NodeDeviceScorer(extractor, self.head_hidden, self.action_space.n)
        self.value_net = NodeDeviceValue(extractor, self.head_hidden)
        self._gain(self.action_net, np.sqrt(2))
        self._gain(self.action_net.place.score, 0.01)
        self._gain(self.action_net.select[-1], 0.01)
        self._gain(self.value_net, np.sqrt(2))
        self._gain(self.value_net.value.value, 1.0)
