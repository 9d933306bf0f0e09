"""The ``attention`` head: GDP's one-shot placer, attention over every node, then its device.

For the one-shot env (:class:`~placerl.envs.one_shot.OneShotPlacementEnv`), whose action is a
device per node row. The extractor runs with ``per_node=True`` (message passing over every
node: GDP's GraphSAGE embeddings) and a transformer encoder lets every node attend to every
other (GDP's placement network; padding rows are left out of the attention); a shared linear
layer then gives each row its device logits, all rows at once. The value head pools the attended
states. Like GDP it is tied to one device count: in one shot there is no placed state to
describe each device by.

Plugged into sb3-contrib's maskable policy through ``_build``, as the other heads are.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from torch import nn

from placerl.agents.extractors.base import PlacementExtractor, check_sizes, masked_mean, mlp
from placerl.errors import ConfigError


class NodeAttention(nn.Module):
    """``(B, N, hidden)`` attended node states and their ``(B, N)`` mask from the latent.

    Args:
        extractor: The per-node extractor whose output this module reads.
        hidden: Width of the transformer.
        layers: Transformer encoder layers.
        heads: Attention heads (must divide ``hidden``).
    """

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int,
                 heads: int) -> None:  # fmt: skip
        super().__init__()
        self.num_nodes, self.node_dim = extractor.num_nodes, extractor.node_dim
        self.start = extractor.context_dim + extractor.num_devices * extractor.device_dim + 1
        self.project = nn.Linear(self.node_dim + extractor.context_dim, hidden)
        self.context_dim = extractor.context_dim
        layer = nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=2 * hidden,
                                           dropout=0.0, batch_first=True)  # fmt: skip
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

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int,
                 heads: int) -> None:  # fmt: skip
        super().__init__()
        self.attend = NodeAttention(extractor, hidden, layers, heads)
        self.score = nn.Linear(hidden, extractor.num_devices)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        attended, _ = self.attend(latent)
        return self.score(attended).flatten(1)


class AttentionValue(nn.Module):
    """Value head: an MLP over the mean of the attended states of the real nodes."""

    def __init__(self, extractor: PlacementExtractor, hidden: int, layers: int,
                 heads: int) -> None:  # fmt: skip
        super().__init__()
        self.attend = NodeAttention(extractor, hidden, layers, heads)
        self.value = mlp([hidden, hidden, 1], nn.Tanh)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        attended, mask = self.attend(latent)
        return self.value(masked_mean(attended, mask))


class MaskableAttentionPolicy(MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's maskable multi-input policy with the one-shot attention heads.

    Args (beyond SB3's): ``head_hidden`` (transformer width, default 64), ``attention_layers``
    (default 2) and ``attention_heads`` (default 4). ``net_arch`` is fixed to no shared MLP and
    the extractor must be built with ``per_node=True`` (``make_agent`` does both).
    """

    def __init__(self, *args: Any, head_hidden: int = 64, attention_layers: int = 2,
                 attention_heads: int = 4, **kwargs: Any) -> None:  # fmt: skip
        if kwargs.get("net_arch") not in (None, [], {"pi": [], "vf": []}):
            raise ConfigError("the attention head reads the extractor's output; drop net_arch")
        check_sizes("the attention head", head_hidden=head_hidden,
                    attention_layers=attention_layers, attention_heads=attention_heads)
        if head_hidden % attention_heads:
            raise ConfigError(
                f"attention_heads={attention_heads} must divide head_hidden={head_hidden}"
            )
        kwargs["net_arch"] = {"pi": [], "vf": []}
        self.head_hidden = head_hidden
        self.attention_layers, self.attention_heads = attention_layers, attention_heads
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        extractor = self.features_extractor
        if not isinstance(extractor, PlacementExtractor) or not extractor.node_dim:
            raise ConfigError(
                "the attention head needs a placerl extractor built with per_node=True (gnn or "
                f"lstm), got {type(extractor).__name__}"
            )
        sizes = (extractor, self.head_hidden, self.attention_layers, self.attention_heads)
        self.action_net, self.value_net = AttentionScorer(*sizes), AttentionValue(*sizes)
        if self.ortho_init:  # SB3's gains: small initial logits, unit value scale
            self.action_net.score.apply(partial(self.init_weights, gain=0.01))
            self.value_net.value.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.value_net.value[-1].apply(partial(self.init_weights, gain=1.0))
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(head_hidden=self.head_hidden, attention_layers=self.attention_layers,
                    attention_heads=self.attention_heads)  # fmt: skip
        return data
