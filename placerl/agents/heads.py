"""Device-equivariant policy heads: one shared scorer applied to every device.

SB3's default head is a linear layer from a flat latent to ``D`` logits: it ties a policy to
one device count and must learn the same rule once per device. The heads here read the
``[context | device rows]`` layout of :class:`~placerl.agents.extractors.base.PlacementExtractor`
and score device ``d`` from ``(context, row d)`` with one network, so permuting the devices
permutes the logits and a policy runs on any device count. The value head pools the same
per-device encodings (a mean, invariant to order and count).

The policies plug into SB3 through :class:`~placerl.agents.head_policy.HeadPolicy`.
"""

from __future__ import annotations

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from torch import nn
from torch.nn import functional as F

from placerl.agents.extractors.base import PlacementExtractor, mlp
from placerl.agents.head_policy import HeadPolicy


class _PerDevice(nn.Module):
    """Encode each ``(context, device row)`` pair with one shared MLP: ``(B, D, hidden)``.

    The first layer's context part is the same for every device, so it is computed once per
    sample and broadcast over the rows (the same result as applying the MLP to each pair,
    with about a quarter of the work on 4 devices).
    """

    def __init__(self, context_dim: int, device_dim: int, hidden: int) -> None:
        super().__init__()
        self.context_dim, self.device_dim = context_dim, device_dim
        self.net = nn.Sequential(mlp([context_dim + device_dim, hidden, hidden]), nn.Tanh())

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        context = latent[:, : self.context_dim]
        rows = latent[:, self.context_dim :].reshape(latent.shape[0], -1, self.device_dim)
        first, *rest = self.net[0]
        weight = first.weight
        hidden = F.linear(context, weight[:, : self.context_dim])[:, None, :] + F.linear(
            rows, weight[:, self.context_dim :], first.bias
        )
        for layer in (*rest, self.net[1]):
            hidden = layer(hidden)
        return hidden


class DeviceScorer(nn.Module):
    """Action head: one logit per device from a shared scorer (device-equivariant)."""

    def __init__(self, context_dim: int, device_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.encode = _PerDevice(context_dim, device_dim, hidden)
        self.score = nn.Linear(hidden, 1)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.score(self.encode(latent)).squeeze(-1)


class DeviceValue(nn.Module):
    """Value head: the mean of the per-device encodings, then a linear layer (device-invariant)."""

    def __init__(self, context_dim: int, device_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.encode = _PerDevice(context_dim, device_dim, hidden)
        self.value = nn.Linear(hidden, 1)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.value(self.encode(latent).mean(dim=1))


class _DeviceHeads(HeadPolicy):
    """Mixin for SB3 actor-critic policies: device-equivariant action and value heads.

    ``head_hidden`` sets the width of the shared per-device networks.
    """

    head_name = "device"
    net_arch_hint = " (or use head='mlp' for SB3's MLP head)"

    def _heads(self, extractor: PlacementExtractor) -> None:
        sizes = (extractor.context_dim, extractor.device_dim, self.head_hidden)
        self.action_net, self.value_net = DeviceScorer(*sizes), DeviceValue(*sizes)
        self._gain(self.action_net, np.sqrt(2))
        self._gain(self.action_net.score, 0.01)
        self._gain(self.value_net, np.sqrt(2))
        self._gain(self.value_net.value, 1.0)


class MaskableDevicePolicy(_DeviceHeads, MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's maskable multi-input policy with device-equivariant heads."""


class DevicePolicy(_DeviceHeads, MultiInputActorCriticPolicy):
    """SB3's multi-input actor-critic policy with device-equivariant heads."""
