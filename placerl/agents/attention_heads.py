"""The ``attention`` head: GDP's one-shot placer, attention over every node, then its device.

For the one-shot env (:class:`~placerl.envs.one_shot.PlacementOneShotEnv`), whose action is a
device per node row. The extractor runs with ``per_node=True`` (message passing over every
node: GDP's GraphSAGE embeddings) and a transformer encoder lets every node attend to every
other (GDP's placement network; padding rows are left out of the attention); a shared linear
layer then gives each row its device logits, all rows at once. The value head pools the attended
states. Like GDP it is tied to one device count: in one shot there is no placed state to
describe each device by.

Plugged into sb3-contrib's maskable policy by :class:`~placerl.agents.head_policy.HeadPolicy`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from torch import nn

from placerl.agents.extractors.base import PlacementExtractor, check_sizes, masked_mean, mlp
from placerl.agents.head_policy import HeadPolicy
from placerl.errors import ConfigError


class NodeAttention(nn.Module):
    """``(B, N, hidden)`` attended node states and their ``(B, N)`` mask from the latent.

    Args:
        extractor: The per-node extractor whose output this module reads.
        hidden: Width of the transformer.
        layers: Transformer encoder layers.
        heads: Attention heads (must divide ``hidden``).
    """

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int, heads: int) -> None:
        super().__init__()
        self.num_nodes, self.node_dim = extractor.num_nodes, extractor.node_dim
        self.start = extractor.context_dim + extractor.num_devices * extractor.device_dim + 1
        self.project = nn.Linear(self.node_dim + extractor.context_dim, hidden)
        self.context_dim = extractor.context_dim
        layer = nn.TransformerEncoderLayer(
            hidden, heads, dim_feedforward=2 * hidden, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch = latent.shape[0]
        mask = latent[:, self.start : self.start + self.num_nodes]
        states = latent[:, self.start + self.num_nodes :].reshape(batch, self.num_nodes, -1)
        context = latent[:, None, : self.context_dim].expand(-1, self.num_nodes, -1)
        hidden = self.project(torch.cat([states, context], dim=-1))
        return self.encoder(hidden, src_key_padding_mask=mask < 0.5), mask


class AttentionScorer(nn.Module):
    """Action head over ``MultiDiscrete([D] * N)``: ``N * D`` logits, row by row."""

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int, heads: int) -> None:
        super().__init__()
        self.attend = NodeAttention(extractor, hidden, layers, heads)
        self.score = nn.Linear(hidden, extractor.num_devices)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        attended, _ = self.attend(latent)
        return self.score(attended).flatten(1)


class AttentionValue(nn.Module):
    """Value head: an MLP over the mean of the attended states of the real nodes."""

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int, heads: int) -> None:
        super().__init__()
        self.attend = NodeAttention(extractor, hidden, layers, heads)
        self.value = mlp([hidden, hidden, 1], nn.Tanh)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        attended, mask = self.attend(latent)
        return self.value(masked_mean(attended, mask))


class MaskableAttentionPolicy(HeadPolicy, MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's maskable multi-input policy with the one-shot attention heads.

    Args (beyond SB3's): ``head_hidden`` (transformer width, default 64), ``attention_layers``
    (default 2) and ``attention_heads`` (default 4). The extractor must be built with
    ``per_node=True`` (``make_agent`` does it).
    """

    head_name, per_node = "attention", True

    def __init__(
        self, *args: Any, attention_layers: int = 2, attention_heads: int = 4, **kwargs: Any
    ) -> None:
        hidden = kwargs.get("head_hidden", 64)
        check_sizes(
            "the attention head", attention_layers=attention_layers, attention_heads=attention_heads
        )
        if isinstance(hidden, int) and hidden % attention_heads:
            raise ConfigError(f"attention_heads={attention_heads} must divide head_hidden={hidden}")
        self.attention_layers, self.attention_heads = attention_layers, attention_heads
        super().__init__(*args, **kwargs)

    def _heads(self, extractor: PlacementExtractor) -> None:
        sizes = (extractor, self.head_hidden, self.attention_layers, self.attention_heads)
        self.action_net, self.value_net = AttentionScorer(*sizes), AttentionValue(*sizes)
        self._gain(self.action_net.score, 0.01)
        self._gain(self.value_net.value, np.sqrt(2))
        self._gain(self.value_net.value[-1], 1.0)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(attention_layers=self.attention_layers, attention_heads=self.attention_heads)
        return data
