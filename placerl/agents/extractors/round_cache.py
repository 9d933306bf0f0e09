"""Every round's embeddings of one episode's last observation, updated where the rows changed.

A per-node GNN (the dual env's ``nodes`` head) embeds every node of the graph at every step,
but between two steps of an episode only a few node rows change: the node that became
current, the group that was placed. After round ``r`` only the nodes within ``r`` hops of a
changed row can have a new embedding, so :class:`RoundCache` keeps each round's embedding of
every node and recomputes only those: in a greedy episode on a 300-node layered graph, with 3
rounds, about a fifth of the rows per step.

The rows it recomputes are those of a :class:`~placerl.agents.extractors.message_plan.MessagePlan`
seeded at the changed rows (``hops`` = rounds + 1, so that round ``r``'s outputs are the rows
within ``r`` hops and the rows they read are planned too). The embeddings are those of the
whole forward pass up to the order of floating-point operations (a test compares them).

Only a single observation without gradients takes this path (one env's episode at
inference); a batch, or a pass that records gradients, runs the whole forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from placerl.agents.extractors.message_plan import RoundPlan, flat_edges, plan_messages

#: One round of the extractor: input rows and a plan to the plan's output rows.
Round = Callable[[torch.Tensor, RoundPlan], torch.Tensor]


class RoundCache:
    """Each round's embedding of every node row of the last observation seen.

    Args:
        embed: The rows' first embedding, ``(R, F) -> (R, hidden)``.
        rounds: The message-passing rounds, in order.
    """

    def __init__(self, embed: Callable[[torch.Tensor], torch.Tensor],
                 rounds: Sequence[Round]) -> None:  # fmt: skip
        self.embed, self.rounds = embed, list(rounds)
        self._nodes: torch.Tensor | None = None
        self._edges: tuple[torch.Tensor, torch.Tensor] | None = None
        self._flat: torch.Tensor | None = None
        self._layers: list[torch.Tensor] = []
        #: Rows recomputed by the last call, per round (first embedding first): for tests
        #: and benchmarks.
        self.updated: list[int] = []

    def last_round(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(max_nodes, hidden)``: the last round's embedding of every row of ``obs``, a
        batch of one observation.

        Rows are recomputed where ``obs``'s node rows differ from the last call's, and every
        row when the graph (``edge_index``, ``edge_mask``) differs.
        """
        nodes = obs["nodes"][0]
        changed = self._changed_rows(nodes, obs["edge_index"], obs["edge_mask"])
        self._nodes = nodes.clone()
        if changed.size:
            self._update(nodes, changed)
        else:
            self.updated = [0] * (len(self.rounds) + 1)
        return self._layers[-1]

    def _changed_rows(self, nodes: torch.Tensor, edge_index: torch.Tensor,
                      edge_mask: torch.Tensor) -> np.ndarray:  # fmt: skip
        """Rows whose embedding may differ from the cached one (every row for a new graph)."""
        same_graph = (self._edges is not None and self._nodes is not None
                      and self._nodes.shape == nodes.shape
                      and torch.equal(self._edges[0], edge_index)
                      and torch.equal(self._edges[1], edge_mask))  # fmt: skip
        if not same_graph:
            self._edges = (edge_index.clone(), edge_mask.clone())
            self._flat = flat_edges(edge_index, edge_mask, nodes.shape[0])
            self._layers = []
            return np.arange(nodes.shape[0], dtype=np.int64)
        return torch.nonzero((nodes != self._nodes).any(dim=1)).flatten().cpu().numpy()

    def _update(self, nodes: torch.Tensor, changed: np.ndarray) -> None:
        """Recompute, round by round, the rows within reach of ``changed``."""
        plan = plan_messages(torch.from_numpy(changed), self._flat, nodes.shape[0],
                             len(self.rounds) + 1)  # fmt: skip
        rows = plan.rows
        first = rows[: plan.within[0]]
        layers = [self._replace(0, first, self.embed(nodes.index_select(0, first)))]
        for r, layer in enumerate(self.rounds, start=1):
            outputs = rows[: plan.within[r]]
            inputs = layers[-1].index_select(0, rows)
            layers.append(self._replace(r, outputs, layer(inputs, plan.round(plan.within[r]))))
        self._layers = layers
        self.updated = [int(n) for n in plan.within[: len(self.rounds) + 1]]

    def _replace(self, layer: int, rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Layer ``layer``'s cached rows with ``rows`` replaced by ``values`` (a new tensor:
        what earlier calls returned stays as it was)."""
        if layer >= len(self._layers):  # a new graph: every row is in ``rows``
            return values.new_empty(self._nodes.shape[0], values.shape[1]).index_copy(
                0, rows, values)  # fmt: skip
        return self._layers[layer].index_copy(0, rows, values)
