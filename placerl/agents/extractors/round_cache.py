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

    def __init__(
        self, embed: Callable[[torch.Tensor], torch.Tensor], rounds: Sequence[Round]
    ) -> None:
        self.embed, self.rounds = embed, list(rounds)
        self._nodes: torch.Tensor | None = None
        self._edges: tuple[torch.Tensor, torch.Tensor] | None = None
        self._flat: torch.Tensor | None = None
        self._layers: list[torch.Tensor] = []
        #: Rows recomputed by the last call, per layer (the first embedding, then each
        #: round): what the cache saved.
        self.updated: list[int] = []

    def last_round(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(max_nodes, hidden)``: the last round's embedding of every row of ``obs``, a
        batch of one observation.

        Rows are recomputed where ``obs``'s node rows differ from the last call's, and every
        row when the graph (``edge_index``, ``edge_mask``) differs. The cache changes only
        once the call succeeds: a step that raises leaves it as the last good call left it.
        """
        nodes, edges = obs["nodes"][0], (obs["edge_index"], obs["edge_mask"])
        if self._same_graph(nodes, *edges):
            changed = torch.nonzero((nodes != self._nodes).any(dim=1)).flatten().cpu().numpy()
            flat, layers, kept = self._flat, self._layers, self._edges
        else:  # every row, on the new graph's edges (copied: obs tensors may share env memory)
            changed = np.arange(nodes.shape[0], dtype=np.int64)
            flat, layers = flat_edges(*edges, nodes.shape[0]), []
            kept = (edges[0].clone(), edges[1].clone())
        updated = [0] * (len(self.rounds) + 1)
        if changed.size:
            layers, updated = self._recomputed(nodes, changed, flat, layers)
        self._nodes, self._edges, self._flat = nodes.clone(), kept, flat
        self._layers, self.updated = layers, updated
        return layers[-1]

    def _same_graph(
        self, nodes: torch.Tensor, edge_index: torch.Tensor, edge_mask: torch.Tensor
    ) -> bool:
        """Whether the cached layers are of ``nodes``' graph (the same rows and edges)."""
        return (
            self._edges is not None
            and self._nodes is not None
            and self._nodes.shape == nodes.shape
            and torch.equal(self._edges[0], edge_index)
            and torch.equal(self._edges[1], edge_mask)
        )

    def _recomputed(
        self,
        nodes: torch.Tensor,
        changed: np.ndarray,
        flat: torch.Tensor,
        cached: list[torch.Tensor],
    ) -> tuple[list[torch.Tensor], list[int]]:
        """Every layer with the rows within reach of ``changed`` recomputed (``cached``: the
        layers before, or none for a new graph), and how many rows each layer recomputed."""
        plan = plan_messages(
            torch.from_numpy(changed),
            flat,
            nodes.shape[0],
            len(self.rounds) + 1,
            device=nodes.device,
        )
        rows = plan.rows

        def replaced(layer: int, count: int, values: torch.Tensor) -> torch.Tensor:
            """Layer ``layer`` with its first ``count`` planned rows set to ``values`` (a new
            tensor: what earlier calls returned stays as it was)."""
            if not cached:  # a new graph: ``count`` covers every row
                base = values.new_empty(nodes.shape[0], values.shape[1])
            else:
                base = cached[layer]
            return base.index_copy(0, rows[:count], values)

        first = rows[: plan.within[0]]
        layers = [replaced(0, plan.within[0], self.embed(nodes.index_select(0, first)))]
        for r, layer in enumerate(self.rounds, start=1):
            inputs = layers[-1].index_select(0, rows)
            layers.append(replaced(r, plan.within[r], layer(inputs, plan.round(plan.within[r]))))
        return layers, [int(n) for n in plan.within[: len(self.rounds) + 1]]
