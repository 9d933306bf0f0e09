"""``MlpExtractor``: no structure, the baseline that shows what structure is worth."""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import nn

from placerl.agents.extractors.base import (
    NODE_INPUTS,
    PlacementExtractor,
    check_sizes,
    current_rows,
    masked_mean,
    mlp,
)


class MlpExtractor(PlacementExtractor):
    """The current node's features plus the mean and max of every node's, through an MLP.

    Args:
        observation_space: The env's ``Dict`` observation space.
        hidden: Width of the hidden layers and of the context.
        layers: Number of hidden layers.
        device_features: See :class:`~placerl.agents.extractors.base.PlacementExtractor`.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        hidden: int = 64,
        layers: int = 2,
        device_features: bool = True,
    ) -> None:
        check_sizes("MlpExtractor", hidden=hidden, layers=layers)
        super().__init__(observation_space, hidden, device_features)
        self.net = mlp([3 * self.num_features] + [hidden] * layers)
        self.out = nn.ReLU()

    def context(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        nodes, mask = obs["nodes"][..., :NODE_INPUTS], obs["node_mask"]
        largest = nodes.masked_fill(mask[..., None] < 0.5, -1.0).amax(dim=1)
        summary = [current_rows(nodes, obs["current"]), masked_mean(nodes, mask), largest]
        return self.out(self.net(torch.cat(summary, dim=1)))
