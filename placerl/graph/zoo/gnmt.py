"""GNMT (Wu et al. 2016): a deep LSTM encoder-decoder with additive attention.

As in the paper: 8 encoder layers, the first bidirectional; 8 decoder layers; residual
connections from the third layer up; the attention context, computed from the bottom decoder
layer's outputs, is fed to every upper decoder layer; a softmax projection over the vocabulary.
The decoder runs teacher-forced (all target steps at once), as in training.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from placerl.graph.zoo.base import ZooModel, register_model


@dataclass(frozen=True)
class GNMTConfig:
    """GNMT shape.

    Attributes:
        batch: Sentence pairs per step.
        src_len: Source tokens per sentence.
        tgt_len: Target tokens per sentence.
        vocab: Word-piece vocabulary (shared size for source and target).
        hidden: LSTM units per layer and direction.
        layers: Encoder layers and decoder layers (each).
        residual_from: Index of the first layer with a residual connection.
        dropout: Dropout between layers.
    """

    batch: int = 128
    src_len: int = 50
    tgt_len: int = 50
    vocab: int = 32000
    hidden: int = 1024
    layers: int = 8
    residual_from: int = 2
    dropout: float = 0.2


class AdditiveAttention(nn.Module):
    """Bahdanau attention: ``score(q, k) = v . tanh(W_q q + W_k k)``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden, bias=False)
        self.score = nn.Linear(hidden, 1)

    def forward(self, queries: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """Context vectors ``(batch, tgt_len, hidden)`` for every query over the memory."""
        energy = torch.tanh(self.query(queries).unsqueeze(2) + self.key(memory).unsqueeze(1))
        weights = self.score(energy).squeeze(-1).softmax(-1)
        return weights @ memory


class Encoder(nn.Module):
    """Embedding, a bidirectional bottom layer, then unidirectional layers."""

    def __init__(self, config: GNMTConfig) -> None:
        super().__init__()
        h = config.hidden
        self.embedding = nn.Embedding(config.vocab, h)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList([nn.LSTM(h, h, batch_first=True, bidirectional=True)])
        self.layers.append(nn.LSTM(2 * h, h, batch_first=True))
        self.layers.extend(nn.LSTM(h, h, batch_first=True) for _ in range(config.layers - 2))
        self.residual_from = config.residual_from

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        x = self.embedding(src)
        for i, lstm in enumerate(self.layers):
            out, _ = lstm(self.dropout(x))
            x = x + out if i >= self.residual_from else out
        return x


class Decoder(nn.Module):
    """Embedding, a bottom layer feeding the attention, upper layers fed the context."""

    def __init__(self, config: GNMTConfig) -> None:
        super().__init__()
        h = config.hidden
        self.embedding = nn.Embedding(config.vocab, h)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList([nn.LSTM(h, h, batch_first=True)])
        self.layers.extend(nn.LSTM(2 * h, h, batch_first=True) for _ in range(config.layers - 1))
        self.attention = AdditiveAttention(h)
        self.classifier = nn.Linear(h, config.vocab)
        self.residual_from = config.residual_from

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        x, _ = self.layers[0](self.dropout(self.embedding(tgt)))
        context = self.attention(x, memory)
        for i, lstm in enumerate(self.layers[1:], start=1):
            out, _ = lstm(self.dropout(torch.cat([x, context], -1)))
            x = x + out if i >= self.residual_from else out
        return self.classifier(x)


class GNMT(nn.Module):
    """Encoder and decoder; returns the target logits ``(batch, tgt_len, vocab)``."""

    def __init__(self, config: GNMTConfig) -> None:
        super().__init__()
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decoder(tgt, self.encoder(src))


def sentence_batch(config: GNMTConfig, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Source and target token ids, ``(batch, src_len)`` and ``(batch, tgt_len)``."""
    src = torch.randint(0, config.vocab, (config.batch, config.src_len), device=device)
    tgt = torch.randint(0, config.vocab, (config.batch, config.tgt_len), device=device)
    return src, tgt


register_model(
    ZooModel(
        name="gnmt",
        build=GNMT,
        inputs=sentence_batch,
        variants={
            "gnmt": GNMTConfig(),
            "small": GNMTConfig(batch=2, src_len=6, tgt_len=5, vocab=50, hidden=16, layers=3),
        },
        published_params={},
        doc="GNMT (Wu et al. 2016): 8+8 LSTM layers, bidirectional bottom, additive attention",
    )
)
