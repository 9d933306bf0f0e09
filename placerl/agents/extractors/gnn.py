"""``GnnExtractor``: two-way message passing over ``edge_index``.

The padded batch becomes one disjoint graph (padded nodes and edges dropped) so that each
round is a few tensor operations for the whole batch, with no Python loop over samples. Like
Placeto, every round passes messages both along the edges (from producers) and against them
(from consumers) and combines the two. The default round, ``sage``, is GraphSAGE's mean
aggregator written out (:class:`_MeanTwoWay`); ``gatv2`` and ``gin`` are PyTorch Geometric
layers.

After ``k`` rounds the current node's embedding depends only on the nodes within ``k`` hops
of it (either direction), so the rounds run on that neighbourhood alone, and round ``r``
updates only the nodes within ``k - 1 - r`` hops, the ones a later round still reads: the same
embedding as message passing over whole graphs, which made PPO updates the bottleneck (about 5x
fewer node updates than every round over the whole neighbourhood on 100-300-node graphs, half
the update time). :mod:`placerl.agents.extractors.message_plan` plans those rows and messages
once per forward pass, and :mod:`placerl.agents.extractors.row_classes` computes each round once
per class of rows that must get the same embedding (a minibatch holds one graph under many
partial placements). The graph embedding pools the first embedding of every node, computed
once per distinct node row (:func:`~placerl.agents.extractors.message_plan.node_bags`).

With ``per_node=True`` (the ``nodes`` head, which scores every node) the rounds run over every
node of the batch instead (where the classes save most), and the context pools the last
embeddings.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional as F

from placerl._extras import require
from placerl._registry import Registry
from placerl.agents.extractors.base import (
    PlacementExtractor,
    check_sizes,
    current_rows,
    masked_mean,
    node_embedding,
)
from placerl.agents.extractors.message_plan import (
    RoundPlan,
    gather_rows,
    node_bags,
    plan_batch,
)
from placerl.agents.extractors.round_cache import RoundCache
from placerl.agents.extractors.row_classes import SharedPlan, every_row, share_rows

#: ``hidden -> one two-way message-passing round``, chosen by name. A round is called as
#: ``round(h, step)`` with the round's :class:`RoundPlan` (see :class:`_PygTwoWay`).
GNN_LAYERS: Registry[Callable[[int], nn.Module]] = Registry("GNN layer")


def _pyg() -> object:
    return require("torch_geometric.nn", "GnnExtractor")


class _PygTwoWay(nn.Module):
    """One round of a PyG layer: a layer along the edges and one against them, concatenated
    and mixed.

    It computes the rows of a :class:`RoundPlan` (the rows a later round still reads, or their
    classes), reading messages from the input rows.
    """

    def __init__(
        self, conv: Callable[[int, int], nn.Module], hidden: int, self_loops: bool = False
    ) -> None:
        super().__init__()
        self.forward_conv, self.backward_conv = conv(hidden, hidden), conv(hidden, hidden)
        self.mix = nn.Linear(2 * hidden, hidden)
        self.self_loops = self_loops

    def forward(self, h: torch.Tensor, step: RoundPlan) -> torch.Tensor:
        """``(step.size, hidden)``: the round's output rows.

        Args:
            h: ``(rows, hidden)`` input embeddings.
            step: The round's :class:`RoundPlan`.
        """
        own = h.index_select(0, step.own)
        pair = (h, own)  # PyG's bipartite form: messages from the input rows to the outputs
        along, against = step.edges()
        if self.self_loops:  # each output row also reads its own input row (not row i -> i)
            loops = torch.stack([step.own, torch.arange(step.size, device=own.device)])
            along, against = torch.cat([along, loops], 1), torch.cat([against, loops], 1)
        both = torch.cat([self.forward_conv(pair, along), self.backward_conv(pair, against)], dim=1)
        return own + torch.relu(self.mix(torch.relu(both)))


class _MeanTwoWay(nn.Module):
    """GraphSAGE's mean aggregator (Hamilton et al. 2017), both ways: per direction, a linear
    layer of the neighbours' mean plus one of the node's own embedding; the two directions
    concatenated, then mixed, with a residual connection.

    The same function, parameters and initialization as two PyG ``SAGEConv`` layers and the
    mix (:class:`_PygTwoWay` with ``SAGEConv``), written out for speed: the plan's messages
    are summed into both directions at once (:meth:`RoundPlan.means`, a compiled kernel on
    the CPU), and ``[along mean | against mean | own]`` meets one block-structured
    ``(2 * hidden, 3 * hidden)`` weight (the zero blocks masked) in one matrix product: 7
    tensor operations a round instead of about 80 in PyG's propagate and scatter machinery,
    which dominated the small batches of rollouts. A
    ``SAGEConv`` checkpoint loads into it (:meth:`_load_from_state_dict`).
    """

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        # plain parameters (SB3's orthogonal initialization covers nn.Linear only, and left
        # PyG's layers alone too), drawn as two SAGEConv layers draw theirs: seeded runs start
        # from the weights they started from
        weight, bias = torch.zeros(2 * hidden, 3 * hidden), torch.zeros(2 * hidden)
        for half in range(2):
            rows = slice(half * hidden, (half + 1) * hidden)
            for _ in range(2):  # PyG's Linear draws when built and again when its conv resets
                weight[rows, rows] = _uniform(hidden, (hidden, hidden))
                bias[rows] = _uniform(hidden, (hidden,))
                weight[rows, 2 * hidden :] = _uniform(hidden, (hidden, hidden))
        self.weight, self.bias = nn.Parameter(weight), nn.Parameter(bias)
        mask = torch.zeros(2 * hidden, 3 * hidden)
        mask[:hidden, :hidden] = mask[hidden:, hidden : 2 * hidden] = 1  # each direction's mean
        mask[:, 2 * hidden :] = 1  # the node's own embedding, into both
        self.register_buffer("mask", mask, persistent=False)
        self.mix = nn.Linear(2 * hidden, hidden)

    def forward(self, h: torch.Tensor, step: RoundPlan) -> torch.Tensor:
        """``(step.size, hidden)``: the round's output rows (see :meth:`_PygTwoWay.forward`)."""
        own = h.index_select(0, step.own)
        inputs = torch.cat([step.means(h), own], dim=1)
        # the zero blocks stay zero (masked in training, zeroed on loading): a pass without
        # gradients (every rollout step) can skip the masking
        weight = self.weight * self.mask if torch.is_grad_enabled() else self.weight
        both = F.linear(inputs, weight, self.bias)
        return own + torch.relu(self.mix(torch.relu(both)))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        """Read a two-``SAGEConv`` checkpoint: each direction's ``lin_l`` (its neighbours'
        mean, with the bias) and ``lin_r`` (the node itself) become blocks of ``weight``."""
        if f"{prefix}forward_conv.lin_l.weight" in state_dict:
            weight = torch.zeros(2 * self.hidden, 3 * self.hidden)
            biases = []
            for half, conv in enumerate(("forward_conv", "backward_conv")):
                rows = slice(half * self.hidden, (half + 1) * self.hidden)
                weight[rows, rows] = state_dict.pop(f"{prefix}{conv}.lin_l.weight")
                weight[rows, 2 * self.hidden :] = state_dict.pop(f"{prefix}{conv}.lin_r.weight")
                biases.append(state_dict.pop(f"{prefix}{conv}.lin_l.bias"))
            state_dict[f"{prefix}weight"], state_dict[f"{prefix}bias"] = weight, torch.cat(biases)
        super()._load_from_state_dict(state_dict, prefix, *args)
        with torch.no_grad():
            self.weight.mul_(self.mask)


def _uniform(fan_in: int, shape: tuple[int, ...]) -> torch.Tensor:
    """PyG's default initialization of a linear layer's weight or bias."""
    bound = 1 / math.sqrt(fan_in)
    return torch.empty(shape).uniform_(-bound, bound)


@GNN_LAYERS.decorator("sage")
def _sage(hidden: int) -> nn.Module:
    """GraphSAGE (Hamilton et al. 2017), mean aggregation: :class:`_MeanTwoWay`."""
    return _MeanTwoWay(hidden)


@GNN_LAYERS.decorator("gatv2")
def _gatv2(hidden: int) -> nn.Module:
    """GATv2 (Brody et al. 2022), one attention head; nodes also attend to themselves."""
    return _PygTwoWay(
        lambda a, b: _pyg().GATv2Conv(a, b, heads=1, add_self_loops=False), hidden, self_loops=True
    )


@GNN_LAYERS.decorator("gin")
def _gin(hidden: int) -> nn.Module:
    """GIN (Xu et al. 2019) with a two-layer MLP."""

    def conv(a: int, b: int) -> nn.Module:
        net = nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b))
        return _pyg().GINConv(net, train_eps=True)

    return _PygTwoWay(conv, hidden)


class GnnExtractor(PlacementExtractor):
    """``rounds`` two-way message-passing rounds, then the current node and a pooled graph.

    Output context: the current node's embedding and the mean of all node embeddings.

    Args:
        observation_space: The env's ``Dict`` observation space (``observation="graph"``).
        layer: A :data:`GNN_LAYERS` name: ``sage`` (default), ``gatv2`` or ``gin``.
        hidden: Width of the node embeddings.
        rounds: Message-passing rounds (each reaches one hop further both ways).
        device_features: See :class:`~placerl.agents.extractors.base.PlacementExtractor`.
        per_node: Also output every node's embedding (see the module docstring).
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        layer: str = "sage",
        hidden: int = 64,
        rounds: int = 3,
        device_features: bool = True,
        per_node: bool = False,
    ) -> None:
        GNN_LAYERS[layer]  # fail fast on an unknown name
        check_sizes("GnnExtractor", hidden=hidden, rounds=rounds)
        super().__init__(
            observation_space, 2 * hidden, device_features, node_dim=hidden if per_node else 0
        )
        self.hidden = hidden
        self.embed = node_embedding(hidden)
        self.rounds = nn.ModuleList(GNN_LAYERS[layer](hidden) for _ in range(rounds))
        self._episode: RoundCache | None = None

    def context(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        nodes, node_mask = obs["nodes"], obs["node_mask"]
        plan = plan_batch(obs, len(self.rounds))
        if len(nodes) == 1:  # one observation: no rows to share; one first embedding serves both
            first = self.embed(nodes[0])
            pooled = first[node_mask[0] > 0].mean(dim=0, keepdim=True)
            shared = every_row(plan)
            h = first.index_select(0, shared.inputs)
        else:
            pooled = self._pooled_first_embedding(nodes, node_mask)
            shared = share_rows(plan, nodes)
            h = self.embed(nodes.flatten(0, 1)[shared.inputs])  # cheaper than indexing
        current = self._rounds(h, shared).index_select(0, shared.outputs)  # batch order
        return torch.cat([current, pooled], dim=1)

    @contextlib.contextmanager
    def episode(self) -> Iterator[None]:
        """Per node (``per_node=True``), each step of the block recomputes only the rows within
        ``k`` hops of the node rows that changed since the last (:class:`RoundCache`): a
        greedy episode's embeddings at a fraction of the cost, up to floating-point order."""
        if not self.node_dim:  # the rounds already cover the current node's neighbourhood only
            yield
            return
        outer, self._episode = self._episode, RoundCache(self.embed, self.rounds)
        try:
            yield
        finally:
            self._episode = outer  # a nested block leaves the outer one's cache as it was

    def _rounds(self, h: torch.Tensor, shared: SharedPlan) -> torch.Tensor:
        """The last round's embedding of each class of ``shared``, from the first embedding
        ``h`` of each input class."""
        for layer, step in zip(self.rounds, shared.rounds, strict=True):
            h = layer(h, step)
        return h

    def _pooled_first_embedding(self, nodes: torch.Tensor, node_mask: torch.Tensor) -> torch.Tensor:
        """``(B, hidden)``: the mean of every real node's first embedding, computed once per
        distinct node row (the same as embedding every row; at 300 nodes the embedding and
        pooling of every row was most of a PPO update)."""
        bags = node_bags(nodes, node_mask)
        return bags.means(self.embed(nodes.flatten(0, 1)[bags.distinct]))

    def encode(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not self.node_dim:
            return self.context(obs), None
        nodes, node_mask = obs["nodes"], obs["node_mask"]
        if self._episode is not None and len(nodes) == 1 and not torch.is_grad_enabled():
            h = self._episode.last_round(obs)
        else:
            shared = share_rows(plan_batch(obs, len(self.rounds), whole=True), nodes, whole=True)
            first = self.embed(nodes.flatten(0, 1)[shared.inputs])
            h = gather_rows(self._rounds(first, shared), shared.outputs)  # every row, in order
        states = h.reshape(*node_mask.shape, -1) * node_mask[..., None]
        context = torch.cat(
            [current_rows(states, obs["current"]), masked_mean(states, node_mask)], dim=1
        )
        return context, states
