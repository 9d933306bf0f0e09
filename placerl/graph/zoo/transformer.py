"""Transformer encoders and decoders: BERT-base (Devlin et al. 2019) and GPT-2 small (Radford et
al. 2019), with the published layer layouts and parameter counts.

BERT is post-norm (``LayerNorm(x + sublayer(x))``) with word, position and token-type
embeddings and a tanh pooler on the first token; GPT-2 is pre-norm (``x + sublayer(LayerNorm(x))``)
with causal attention, a final layer norm and a language-model head tied to the word embedding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from placerl.errors import ConfigError
from placerl.graph.zoo.base import ZooModel, register_model


@dataclass(frozen=True)
class TransformerConfig:
    """Transformer shape.

    Attributes:
        style: ``bert`` (post-norm encoder, pooler) or ``gpt2`` (pre-norm causal decoder, tied
            language-model head).
        batch: Sequences per step.
        seq_len: Tokens per sequence.
        vocab: Vocabulary size.
        hidden: Model width.
        layers: Number of blocks.
        heads: Attention heads.
        ffn: Width of the feed-forward layer.
        max_positions: Size of the learned position table.
        type_vocab: Token types (BERT's segment embedding; unused by GPT-2).
    """

    style: str = "bert"
    batch: int = 32
    seq_len: int = 128
    vocab: int = 30522
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    ffn: int = 3072
    max_positions: int = 512
    type_vocab: int = 2


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention with one fused QKV projection."""

    def __init__(self, config: TransformerConfig, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = config.heads, causal
        if causal:  # True above the diagonal: the future a position may not attend to
            future = torch.ones(config.max_positions, config.max_positions).triu(1).bool()
            self.register_buffer("future", future, persistent=False)
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)
        self.proj = nn.Linear(config.hidden, config.hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(hidden // self.heads)
        if self.causal:
            scores = scores.masked_fill(self.future[:seq, :seq], float("-inf"))
        weights = self.dropout(scores.softmax(-1))
        context = (weights @ v).transpose(1, 2).reshape(batch, seq, hidden)
        return self.dropout(self.proj(context))


class FeedForward(nn.Module):
    """Two linear layers with a GELU between."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.hidden, config.ffn)
        self.fc2 = nn.Linear(config.ffn, config.hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.fc2(F.gelu(self.fc1(x))))


class PostNormBlock(nn.Module):
    """BERT's block: ``x = LN(x + attn(x)); x = LN(x + ffn(x))``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(config, causal=False)
        self.ln1 = nn.LayerNorm(config.hidden, eps=1e-12)
        self.mlp = FeedForward(config)
        self.ln2 = nn.LayerNorm(config.hidden, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class PreNormBlock(nn.Module):
    """GPT-2's block: ``x = x + attn(LN(x)); x = x + ffn(LN(x))`` with causal attention."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.hidden)
        self.attn = SelfAttention(config, causal=True)
        self.ln2 = nn.LayerNorm(config.hidden)
        self.mlp = FeedForward(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Bert(nn.Module):
    """BERT encoder: embeddings, post-norm blocks, tanh pooler on the first token."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab, config.hidden)
        self.position_embeddings = nn.Embedding(config.max_positions, config.hidden)
        self.token_type_embeddings = nn.Embedding(config.type_vocab, config.hidden)
        self.ln = nn.LayerNorm(config.hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.Sequential(*(PostNormBlock(config) for _ in range(config.layers)))
        self.pooler = nn.Linear(config.hidden, config.hidden)

    def forward(
        self, input_ids: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_type_ids)
        )
        x = self.layers(self.dropout(self.ln(x)))
        return x, torch.tanh(self.pooler(x[:, 0]))


class GPT2(nn.Module):
    """GPT-2 decoder: embeddings, pre-norm causal blocks, final norm, tied LM head."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(config.vocab, config.hidden)
        self.wpe = nn.Embedding(config.max_positions, config.hidden)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.Sequential(*(PreNormBlock(config) for _ in range(config.layers)))
        self.ln_f = nn.LayerNorm(config.hidden)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.dropout(self.wte(input_ids) + self.wpe(positions))
        x = self.ln_f(self.layers(x))
        return F.linear(x, self.wte.weight)  # the LM head shares the word embedding


_STYLES = {"bert": Bert, "gpt2": GPT2}


def build(config: TransformerConfig) -> nn.Module:
    """The BERT or GPT-2 model ``config.style`` names."""
    if config.style not in _STYLES:
        known = ", ".join(_STYLES)
        raise ConfigError(f"transformer style must be one of {known}, got {config.style!r}")
    return _STYLES[config.style](config)


def token_batch(config: TransformerConfig, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Token ids ``(batch, seq_len)`` (and, for BERT, token-type ids of the same shape)."""
    shape = (config.batch, config.seq_len)
    ids = torch.randint(0, config.vocab, shape, device=device)
    if config.style == "gpt2":
        return (ids,)
    return ids, torch.zeros(shape, dtype=torch.long, device=device)


_GPT2_SMALL = TransformerConfig(
    style="gpt2", batch=8, seq_len=1024, vocab=50257, max_positions=1024, type_vocab=1
)
_TINY = {"batch": 2, "seq_len": 8, "vocab": 100, "hidden": 16, "layers": 2, "heads": 2, "ffn": 32}

register_model(
    ZooModel(
        name="transformer",
        build=build,
        inputs=token_batch,
        variants={
            "bert_base": TransformerConfig(),
            "gpt2_small": _GPT2_SMALL,
            "bert_tiny": TransformerConfig(**_TINY, max_positions=8),
            "gpt2_tiny": TransformerConfig(**_TINY, style="gpt2", max_positions=8, type_vocab=1),
        },
        published_params={"bert_base": 109_482_240, "gpt2_small": 124_439_808},
        doc="BERT-base encoder (default) and GPT-2 small decoder (variant=gpt2_small)",
    )
)
