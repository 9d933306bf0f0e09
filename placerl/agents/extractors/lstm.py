"""``LstmExtractor``: a bidirectional LSTM over the nodes in traversal order.

This is the sequence encoder of the seq2seq placers (Mirhoseini et al. 2017), and the place
where the traversal order shapes what a sequence model sees: row ``i`` of the observation is
node ``order[i]``, so two orders of one graph are two different sequences.
"""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from placerl.agents.extractors.base import (
    PlacementExtractor,
    check_sizes,
    current_rows,
    node_embedding,
)
from placerl.agents.extractors.shared_lstm import plan_sharing, shared_bidirectional, supports


class LstmExtractor(PlacementExtractor):
    """Bidirectional LSTM over the node rows, packed by ``node_mask``.

    Output context: the current node's state (both directions) and a summary of the whole
    sequence (the last forward state and the first backward state). With one layer, rows that
    samples of a minibatch share run once (:mod:`~placerl.agents.extractors.shared_lstm`).

    Args:
        observation_space: The env's ``Dict`` observation space.
        hidden: Width of the node embedding and of each direction's state is ``hidden // 2``.
        layers: Stacked LSTM layers.
        device_features: See :class:`~placerl.agents.extractors.base.PlacementExtractor`.
        per_node: Also output every row's state (both directions), for the ``nodes`` head.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        hidden: int = 64,
        layers: int = 1,
        device_features: bool = True,
        per_node: bool = False,
    ) -> None:
        check_sizes("LstmExtractor", hidden=hidden, layers=layers)
        super().__init__(
            observation_space,
            2 * hidden,
            device_features,
            node_dim=2 * (hidden // 2) if per_node else 0,
        )
        self.embed = node_embedding(hidden)
        self.lstm = nn.LSTM(
            hidden, hidden // 2, num_layers=layers, batch_first=True, bidirectional=True
        )
        self.state_dim = 2 * (hidden // 2)
        self.project = nn.Linear(2 * self.state_dim, 2 * hidden)

    def context(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.encode(obs)[0]

    def encode(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        nodes, mask = obs["nodes"], obs["node_mask"]
        lengths = mask.sum(dim=1).round().long().clamp_min(1).cpu()
        if bool((lengths == nodes.shape[1]).all()):  # no padding (one graph): packing only costs
            plan = plan_sharing(nodes, obs["current"]) if supports(self.lstm) else None
            if plan is None:
                states, (h_n, _) = self.lstm(self.embed(nodes))
            else:
                states, h_n = shared_bidirectional(self.lstm, self.embed, self.embed(nodes), plan)
        else:
            packed = pack_padded_sequence(
                self.embed(nodes), lengths, batch_first=True, enforce_sorted=False
            )
            out, (h_n, _) = self.lstm(packed)
            states, _ = pad_packed_sequence(out, batch_first=True, total_length=nodes.shape[1])
        summary = torch.cat([h_n[-2], h_n[-1]], dim=1)  # last layer: forward, backward
        current = current_rows(states, obs["current"])
        context = torch.relu(self.project(torch.cat([current, summary], dim=1)))
        return context, (states * mask[..., None] if self.node_dim else None)
