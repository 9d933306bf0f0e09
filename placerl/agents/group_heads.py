"""The ``groups`` head: Mirhoseini et al.'s hierarchical planner, a grouper then a placer.

For the hierarchical env (:class:`~placerl.envs.hierarchical.PlacementHierarchicalEnv`), whose
episode is a group step (a group per node row) then a place step (a device per group). The
extractor runs with ``per_node=True`` and so outputs every node row's state, and, from the
observation, every row's group one-hot (all 0 in the group step).

* Grouper: one shared network scores every node's groups from its state and the graph context
  (the paper's feed-forward grouper over operation embeddings).
* Placer: a group's embedding is the mean state of its nodes and its share of them; a
  transformer encoder lets the groups attend to each other (the paper's placer is a seq2seq
  LSTM with attention over the groups), then a linear layer gives each group its device logits.

The env's masks leave the allowed choices; padding entries are 0 (masked out by the env's
mask, or a row's only choice). The value head pools the node states with the step flag. Like
the paper's placer it is tied to one device count.
"""

from __future__ import annotations

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from torch import nn

from placerl.agents.extractors.base import PlacementExtractor, masked_mean, mlp
from placerl.agents.head_policy import HeadPolicy
from placerl.errors import ConfigError


class _Layout(nn.Module):
    """Reads the per-node extractor's output back: context, node states, node mask, groups."""

    def __init__(self, extractor: PlacementExtractor) -> None:
        super().__init__()
        if not extractor.group_dim:
            raise ConfigError(
                "the groups head needs the hierarchical env's observation (its "
                "'groups' key); use env='hierarchical'"
            )
        self.context_dim, self.node_dim = extractor.context_dim, extractor.node_dim
        self.num_nodes, self.num_groups = extractor.num_nodes, extractor.group_dim
        self.start = extractor.context_dim + extractor.num_devices * extractor.device_dim + 1

    def forward(self, latent: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch, n = latent.shape[0], self.num_nodes
        mask = latent[:, self.start : self.start + n]
        states_end = self.start + n * (1 + self.node_dim)
        states = latent[:, self.start + n : states_end].reshape(batch, n, self.node_dim)
        groups = latent[:, states_end:].reshape(batch, n, self.num_groups)
        return latent[:, : self.context_dim], states, mask, groups


class GroupPlacerScorer(nn.Module):
    """Action head over ``MultiDiscrete([max(G, D)] * N)``: group logits per node in the group
    step, device logits per group in the place step.

    Args:
        extractor: The per-node extractor whose output this head reads.
        hidden: Width of the grouper and the placer.
        num_devices: Devices (the placer's logits).
        choices: Choices per row of the action space.
    """

    def __init__(
        self, extractor: PlacementExtractor, hidden: int, num_devices: int, choices: int
    ) -> None:
        super().__init__()
        self.layout = _Layout(extractor)
        self.choices, self.num_devices = choices, num_devices
        context, node, groups = extractor.context_dim, extractor.node_dim, extractor.group_dim
        self.grouper = mlp([node + context, hidden, hidden, groups], nn.Tanh)
        self.embed = nn.Linear(node + 1 + context, hidden)
        layer = nn.TransformerEncoderLayer(
            hidden, 4 if hidden % 4 == 0 else 1, 2 * hidden, dropout=0.0, batch_first=True
        )
        self.attend = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.place = nn.Linear(hidden, num_devices)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        context, states, mask, groups = self.layout(latent)
        n, g = groups.shape[1:]
        per_node = torch.cat([states, context[:, None, :].expand(-1, n, -1)], dim=-1)
        group_logits = self.grouper(per_node)  # (B, N, G)
        members = groups * mask[..., None]  # (B, N, G)
        sizes = members.sum(dim=1)  # (B, G)
        means = torch.einsum("bng,bnh->bgh", members, states) / sizes.clamp_min(1)[..., None]
        share = sizes / mask.sum(dim=1, keepdim=True).clamp_min(1)
        pooled = [means, share[..., None], context[:, None, :].expand(-1, g, -1)]
        embedded = self.embed(torch.cat(pooled, dim=-1))
        empty = sizes < 0.5
        empty = empty & ~empty.all(dim=1, keepdim=True)  # the group step: nothing to leave out
        device_logits = self.place(self.attend(embedded, src_key_padding_mask=empty))
        placing = groups.flatten(1).any(dim=1)  # the place step has groups in the observation
        rows = _fit(group_logits, n, self.choices)
        devices = _fit(device_logits, n, self.choices)
        return torch.where(placing[:, None, None], devices, rows).flatten(1)


class GroupPlacerValue(nn.Module):
    """Value head: an MLP over the mean node state, the context and the step flag."""

    def __init__(self, extractor: PlacementExtractor, hidden: int) -> None:
        super().__init__()
        self.layout = _Layout(extractor)
        self.value = mlp(
            [extractor.node_dim + extractor.context_dim + 1, hidden, hidden, 1], nn.Tanh
        )

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        context, states, mask, groups = self.layout(latent)
        placing = groups.flatten(1).any(dim=1, keepdim=True).float()
        return self.value(torch.cat([masked_mean(states, mask), context, placing], dim=-1))


def _fit(scores: torch.Tensor, rows: int, choices: int) -> torch.Tensor:
    """``scores`` ``(B, r, c)`` zero-padded (or cut) to ``(B, rows, choices)``."""
    scores = scores[:, :rows, :choices]
    pad = (0, choices - scores.shape[2], 0, rows - scores.shape[1])
    return torch.nn.functional.pad(scores, pad)


class MaskableGroupPolicy(HeadPolicy, MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's maskable multi-input policy with the grouper-placer heads.

    ``head_hidden`` sets the width of the grouper and the placer; the extractor must be built
    with ``per_node=True`` (``make_agent`` does it) on the hierarchical env.
    """

    head_name, per_node = "groups", True

    def _heads(self, extractor: PlacementExtractor) -> None:
        choices = int(self.action_space.nvec[0])
        self.action_net = GroupPlacerScorer(
            extractor, self.head_hidden, extractor.num_devices, choices
        )
        self.value_net = GroupPlacerValue(extractor, self.head_hidden)
        self._gain(self.action_net.grouper, np.sqrt(2))
        self._gain(self.action_net.grouper[-1], 0.01)
        self._gain(self.action_net.place, 0.01)
        self._gain(self.value_net.value, np.sqrt(2))
        self._gain(self.value_net.value[-1], 1.0)
