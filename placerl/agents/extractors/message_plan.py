"""Which rows a GNN round updates and which messages it sums: planned once per forward pass.

The GNN extractor embeds the current node of every sample of a flat batch. After ``k`` rounds
that embedding depends only on the nodes within ``k`` hops (edges taken both ways), and round
``r`` needs new embeddings only for the nodes within ``k - 1 - r`` hops. :func:`plan_messages`
finds those nodes (a breadth-first search from every seed), lists them nearest first, so that
each round's outputs are a prefix of the rows, and lists every message two ways, sorted by
target: along an edge (producer to consumer) into target row ``2 * consumer``, against it into
``2 * producer + 1``. A round that updates the first ``o`` rows then sums a prefix of the
messages into a ``(2 * o, hidden)`` buffer, which is ``(o, 2 * hidden)``: both directions side
by side, with no filtering.

Why a compiled kernel: the same search in torch took about 40 tensor operations per forward
pass (a fifth of a rollout step's policy time on 2 cores, and more than the arithmetic on
the small batches of a rollout); this is one call of a few microseconds per thousand edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable


@dataclass(frozen=True)
class MessagePlan:
    """The rows and messages of the rounds of one forward pass (see the module docstring).

    Attributes:
        rows: ``(R,)`` batch row of each planned row, nearest first (the seeds first, in
            order).
        within: ``within[k]``: how many rows are at most ``k`` hops from a seed.
        sources: ``(M,)`` planned row each message reads.
        targets: ``(M,)`` ``2 * row`` (along an edge) or ``2 * row + 1`` (against it), sorted.
        scale: ``(M,)`` 1 / the number of messages of its target: sums become means.
        upto: ``upto[k]``: how many messages have a target among the first ``within[k]`` rows.
    """

    rows: torch.Tensor
    within: list[int]
    sources: torch.Tensor
    targets: torch.Tensor
    scale: torch.Tensor
    upto: list[int]

    def messages(self, outputs: int) -> int:
        """How many messages (a prefix) reach the first ``outputs`` rows."""
        return self.upto[self.within.index(outputs)]

    def round(self, outputs: int) -> RoundPlan:
        """The round that updates the first ``outputs`` rows (one of ``within``)."""
        count = self.messages(outputs)
        own = torch.arange(outputs, device=self.rows.device)
        return RoundPlan(own, self.sources[:count], self.targets[:count], self.scale[:count])


@dataclass(frozen=True)
class RoundPlan:
    """What one message-passing round computes: each output row from an input row (its own
    embedding) and the messages it sums.

    Attributes:
        own: ``(size,)`` the input row of each output row.
        sources: ``(M,)`` the input row each message reads.
        targets: ``(M,)`` ``2 * output row`` (along an edge) or ``2 * output row + 1``
            (against it), sorted.
        scale: ``(M,)`` 1 / the number of messages of its target: sums become means.
    """

    own: torch.Tensor
    sources: torch.Tensor
    targets: torch.Tensor
    scale: torch.Tensor

    @property
    def size(self) -> int:
        """Output rows."""
        return self.own.numel()

    def means(self, h: torch.Tensor) -> torch.Tensor:
        """``(size, 2 * hidden)``: each output row's mean message along the graph's edges,
        then its mean message against them (zeros where it has none), from input rows ``h``."""
        sums = message_sums(h, self.sources, self.targets, self.scale, 2 * self.size)
        return sums.view(self.size, 2 * h.shape[1])

    def edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(2, E)`` edge indices (input row, output row) of the messages along the graph's
        edges, and of those against them."""
        along = self.targets % 2 == 0
        return (
            torch.stack([self.sources[along], self.targets[along] // 2]),
            torch.stack([self.sources[~along], self.targets[~along] // 2]),
        )


def gather_rows(h: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``h[index]``, whose backward sums by row with :func:`message_sums`' kernel on the CPU
    (torch's is a serial scatter)."""
    ones = torch.ones(index.numel(), dtype=h.dtype, device=h.device)
    return message_sums(h, index, torch.arange(index.numel(), device=h.device), ones, index.numel())


def message_sums(
    h: torch.Tensor,
    sources: torch.Tensor,
    targets: torch.Tensor,
    scale: torch.Tensor,
    num_targets: int,
) -> torch.Tensor:
    """``(num_targets, hidden)``: row ``t`` is the sum of ``scale[m] * h[sources[m]]`` over the
    messages ``m`` with ``targets[m] == t``, in message order.

    On the CPU a compiled kernel sums each target's messages (and, backwards, each source's
    gradients) directly: torch's ``index_select``, ``mul`` and ``index_add_`` (a serial
    ``scatter_add`` on the CPU) and their backward took about 20 times as long, a fifth of a
    GNN's PPO update. The sums are bit for bit those of the torch ops, which other devices
    (and dtypes) use.

    Args:
        h: ``(rows, hidden)`` embeddings.
        sources: ``(M,)`` row each message reads.
        targets: ``(M,)`` row each message is summed into, sorted.
        scale: ``(M,)`` each message's weight.
        num_targets: Rows of the result.
    """
    if h.device.type != "cpu" or h.dtype not in (torch.float32, torch.float64):
        messages = h.index_select(0, sources) * scale[:, None]
        return h.new_zeros(num_targets, h.shape[1]).index_add_(0, targets, messages)
    if not (h.requires_grad and torch.is_grad_enabled()):  # no autograd node to record
        return _forward_sums(h, sources, targets, scale, num_targets)
    return _CompiledSums.apply(h, sources, targets, scale, num_targets)


def _forward_sums(
    h: torch.Tensor,
    sources: torch.Tensor,
    targets: torch.Tensor,
    scale: torch.Tensor,
    num_targets: int,
) -> torch.Tensor:
    """:func:`message_sums` by the compiled kernel, without recording a gradient."""
    starts = segment_starts(targets.numpy(), num_targets)
    return torch.from_numpy(
        _segment_sums(h.detach().contiguous().numpy(), sources.numpy(), starts, scale.numpy())
    )


class _CompiledSums(torch.autograd.Function):
    """:func:`message_sums` on the CPU: forward by target, backward by source."""

    @staticmethod
    def forward(
        ctx: Any,
        h: torch.Tensor,
        sources: torch.Tensor,
        targets: torch.Tensor,
        scale: torch.Tensor,
        num_targets: int,
    ) -> torch.Tensor:
        ctx.save_for_backward(sources, targets, scale)
        ctx.num_rows = h.shape[0]
        return _forward_sums(h, sources, targets, scale, num_targets)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        sources, targets, scale = ctx.saved_tensors
        by_source = _sorted_by_source(sources.numpy(), targets.numpy(), scale.numpy(), ctx.num_rows)
        targets_, starts, scale_ = by_source
        grad_h = _segment_sums(grad.contiguous().numpy(), targets_, starts, scale_)
        return torch.from_numpy(grad_h), None, None, None, None


@njit(cache=True)
def segment_starts(keys: np.ndarray, segments: int) -> np.ndarray:
    """Where each of ``segments`` segments starts in the sorted ``keys`` (and the end)."""
    starts = np.zeros(segments + 1, np.int64)
    previous = 0
    for key in keys:
        if key < previous or key >= segments:  # unchecked, the kernels would write anywhere
            raise ValueError("message targets must be sorted and below the number of targets")
        starts[key + 1] += 1
        previous = key
    return np.cumsum(starts)


@njit(cache=True)
def _segment_sums(
    values: np.ndarray, reads: np.ndarray, starts: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Row ``t``: the sum of ``scale[m] * values[reads[m]]`` for ``m`` in segment ``t``."""
    for row in reads:
        if row < 0 or row >= values.shape[0]:
            raise ValueError("a message reads a row that does not exist")
    sums = np.zeros((starts.size - 1, values.shape[1]), values.dtype)
    for t in range(starts.size - 1):
        for m in range(starts[t], starts[t + 1]):
            row, weight = reads[m], scale[m]
            for j in range(values.shape[1]):
                sums[t, j] += weight * values[row, j]
    return sums


@njit(cache=True)
def _sorted_by_source(
    sources: np.ndarray, targets: np.ndarray, scale: np.ndarray, num_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The messages grouped by source (a stable counting sort: message order within a
    source): their targets, each source's segment starts, and their weights."""
    starts = np.zeros(num_rows + 1, np.int64)
    for source in sources:  # in range: the forward pass checked them
        starts[source + 1] += 1
    starts = np.cumsum(starts)
    fill = starts[:-1].copy()
    by_target, by_scale = np.empty_like(targets), np.empty_like(scale)
    for m in range(sources.size):
        slot = fill[sources[m]]
        by_target[slot], by_scale[slot] = targets[m], scale[m]
        fill[sources[m]] += 1
    return by_target, starts, by_scale


def plan_batch(obs: dict[str, torch.Tensor], hops: int, *, whole: bool = False) -> MessagePlan:
    """Plan ``hops`` rounds over a padded batch of observations as one disjoint graph.

    Args:
        obs: The batch (``edge_index``, ``edge_mask``, ``current``, ``node_mask``); sample
            ``b``'s node ``i`` is row ``b * max_nodes + i`` of the flat batch.
        hops: Message-passing rounds.
        whole: Update every row in every round instead of the current nodes' neighbourhoods.
    """
    current = obs["current"].detach().cpu().numpy()
    batch, num_nodes = current.shape
    src, dst = _real_edges(obs["edge_index"], obs["edge_mask"], num_nodes)
    seeds = np.arange(batch, dtype=np.int64) * num_nodes + current.argmax(axis=1)
    return _as_plan(_plan(seeds, src, dst, current.size, hops, whole), obs["edge_index"].device)


def flat_edges(edge_index: torch.Tensor, edge_mask: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``(2, E)`` on the CPU: the real edges of a padded batch (``edge_index``
    ``(B, 2, max_edges)``, ``edge_mask``) between flat rows, sample ``b``'s node ``i`` being
    row ``b * num_nodes + i``."""
    return torch.from_numpy(np.stack(_real_edges(edge_index, edge_mask, num_nodes)))


def _real_edges(
    edge_index: torch.Tensor, edge_mask: torch.Tensor, num_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`flat_edges` as the producer and consumer arrays (no copy into one tensor)."""
    return _flatten(edge_index.detach().cpu().numpy(), edge_mask.detach().cpu().numpy(), num_nodes)


def plan_messages(
    seeds: torch.Tensor | None,
    edges: torch.Tensor,
    num_nodes: int,
    hops: int,
    device: torch.device | None = None,
) -> MessagePlan:
    """Plan ``hops`` rounds for the nodes within ``hops`` edges of ``seeds``.

    Args:
        seeds: ``(S,)`` node indices, or ``None`` for every node (each round updates every
            row; the rows are the nodes in index order).
        edges: ``(2, E)`` producer and consumer node indices.
        num_nodes: Nodes in the flat batch.
        hops: Message-passing rounds.
        device: Where the plan goes (default: ``edges``' device).

    Returns:
        The plan.
    """
    device = edges.device if device is None else device
    edge_array = edges.detach().to("cpu", torch.int64).numpy()
    if seeds is None:
        seed_array, whole = np.arange(num_nodes, dtype=np.int64), True
    else:
        seed_array, whole = seeds.detach().to("cpu", torch.int64).numpy(), False
    planned = _plan(
        seed_array,
        np.ascontiguousarray(edge_array[0]),
        np.ascontiguousarray(edge_array[1]),
        num_nodes,
        hops,
        whole,
    )
    return _as_plan(planned, device)


def _as_plan(planned: tuple[np.ndarray, ...], device: torch.device) -> MessagePlan:
    rows, within, sources, targets, scale, upto = planned
    tensor = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return MessagePlan(
        tensor(rows),
        within.tolist(),
        tensor(sources),
        tensor(targets),
        tensor(scale),
        upto.tolist(),
    )


@njit(cache=True)
def _flatten(
    edge_index: np.ndarray, edge_mask: np.ndarray, num_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """The real edges of a padded batch as flat rows (sample ``b``'s at ``b * num_nodes``)."""
    batch = edge_index.shape[0]
    real = 0
    for b in range(batch):
        for e in range(edge_mask.shape[1]):
            real += edge_mask[b, e] > 0.5
    src, dst = np.empty(real, np.int64), np.empty(real, np.int64)
    real = 0
    for b in range(batch):
        offset = b * num_nodes
        for e in range(edge_mask.shape[1]):
            if edge_mask[b, e] > 0.5:
                src[real] = offset + np.int64(edge_index[b, 0, e])
                dst[real] = offset + np.int64(edge_index[b, 1, e])
                real += 1
    return src, dst


@njit(cache=True)
def _plan(
    seeds: np.ndarray, src: np.ndarray, dst: np.ndarray, num_nodes: int, hops: int, whole: bool
) -> tuple[np.ndarray, ...]:
    far = hops + 1
    distance = np.full(num_nodes, far, np.int64)
    if whole:
        distance[:] = 0
    else:
        # both-way adjacency (CSR), then a breadth-first search from every seed at once
        degree = np.zeros(num_nodes + 1, np.int64)
        for e in range(src.size):
            degree[src[e] + 1] += 1
            degree[dst[e] + 1] += 1
        start = np.cumsum(degree)
        fill = start[:-1].copy()
        neighbours = np.empty(2 * src.size, np.int64)
        for e in range(src.size):
            neighbours[fill[src[e]]] = dst[e]
            fill[src[e]] += 1
            neighbours[fill[dst[e]]] = src[e]
            fill[dst[e]] += 1
        frontier = np.empty(num_nodes, np.int64)
        size = 0
        for s in seeds:
            if distance[s] != 0:
                distance[s] = 0
                frontier[size] = s
                size += 1
        for k in range(1, hops + 1):
            reached = np.empty(num_nodes, np.int64)
            count = 0
            for i in range(size):
                node = frontier[i]
                for j in range(start[node], start[node + 1]):
                    other = neighbours[j]
                    if distance[other] == far:
                        distance[other] = k
                        reached[count] = other
                        count += 1
            frontier, size = reached, count
    # rows: by distance, then index (so the seeds come first, in index order: one per sample)
    within = np.zeros(far, np.int64)
    for node in range(num_nodes):
        if distance[node] < far:
            within[distance[node]] += 1
    within = np.cumsum(within)
    rows = np.empty(within[-1], np.int64)
    fill = np.zeros(far, np.int64)
    fill[1:] = within[:-1]
    position = np.full(num_nodes, -1, np.int64)
    for node in range(num_nodes):
        d = distance[node]
        if d < far:
            rows[fill[d]] = node
            position[node] = fill[d]
            fill[d] += 1
    # messages into rows a round updates (within hops - 1, or every row), sorted by target
    outputs = within[-1] if whole else within[max(hops - 1, 0)]
    per_target = np.zeros(2 * outputs + 1, np.int64)
    for e in range(src.size):
        a, b = position[src[e]], position[dst[e]]
        if a >= 0 and b >= 0:
            if b < outputs:
                per_target[2 * b + 1] += 1
            if a < outputs:
                per_target[2 * a + 2] += 1
    offset = np.cumsum(per_target)
    sources = np.empty(offset[-1], np.int64)
    targets = np.empty(offset[-1], np.int64)
    fill = offset[:-1].copy()
    for e in range(src.size):
        a, b = position[src[e]], position[dst[e]]
        if a >= 0 and b >= 0:
            if b < outputs:
                sources[fill[2 * b]] = a
                targets[fill[2 * b]] = 2 * b
                fill[2 * b] += 1
            if a < outputs:
                sources[fill[2 * a + 1]] = b
                targets[fill[2 * a + 1]] = 2 * a + 1
                fill[2 * a + 1] += 1
    scale = np.empty(offset[-1], np.float32)
    for m in range(targets.size):
        scale[m] = 1.0 / per_target[targets[m] + 1]
    upto = np.empty(far, np.int64)
    for k in range(far):
        upto[k] = offset[2 * min(within[k], outputs)]
    return rows, within, sources, targets, scale, upto


@dataclass(frozen=True)
class NodeBags:
    """Every sample's real node rows as bags of distinct rows (see :func:`node_bags`).

    Attributes:
        distinct: ``(U,)`` flat batch row of each distinct node row (its first occurrence).
        members: ``(M,)`` index into ``distinct`` of every real row, sample by sample.
        samples: ``(M,)`` the sample of each member (sorted).
        weights: ``(M,)`` 1 / the sample's real rows: the bags' sums are means.
        batch: Samples (a sample without real rows has an empty bag).
    """

    distinct: torch.Tensor
    members: torch.Tensor
    samples: torch.Tensor
    weights: torch.Tensor
    batch: int

    def means(self, values: torch.Tensor) -> torch.Tensor:
        """``(B, width)``: each sample's mean of ``values`` ``(U, width)`` over its real rows
        (``values[u]`` stands for every row equal to distinct row ``u``)."""
        return message_sums(values, self.members, self.samples, self.weights, self.batch)


def node_bags(nodes: torch.Tensor, node_mask: torch.Tensor) -> NodeBags:
    """Find the distinct node rows of a padded batch ``(B, N, F)`` (rows equal bit for bit).

    A graph embedding that pools a function of every node row need compute it once per
    distinct row: in a PPO minibatch of one graph a node's row takes a few values (unplaced,
    current, placed on each device), so at 300 nodes about 2k distinct rows stand for 77k.
    """
    found = _distinct_rows(
        nodes.detach().to("cpu", torch.float32).numpy(), node_mask.detach().cpu().numpy()
    )
    device = nodes.device
    return NodeBags(*(torch.from_numpy(a).to(device) for a in found), batch=nodes.shape[0])


#: FNV-1a's 64-bit offset basis: the start of the hashes of :func:`fnv_mix`.
FNV_START = np.uint64(1469598103934665603)


@njit(cache=True)
def fnv_mix(key: np.uint64, value: int) -> np.uint64:
    """FNV-1a: ``key`` with ``value`` mixed in (hash-table keys of the compiled kernels)."""
    return (key ^ np.uint64(value)) * np.uint64(1099511628211)


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first of each distinct row of ``rows`` ``(R, F)`` (float32, equal bit for bit), and
    the index of each row's distinct row among them."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    distinct, members, _, _ = _distinct_rows(rows[None], np.ones((1, len(rows)), np.float32))
    return distinct, members


@njit(cache=True)
def _distinct_rows(nodes: np.ndarray, node_mask: np.ndarray) -> tuple[np.ndarray, ...]:
    batch, num_nodes, width = nodes.shape
    bits = nodes.reshape(batch * num_nodes, width).view(np.uint32)
    real = 0
    for b in range(batch):
        for n in range(num_nodes):
            real += node_mask[b, n] > 0.5
    capacity = 1
    while capacity < 2 * real + 2:
        capacity *= 2
    table = np.full(capacity, -1, np.int64)  # open addressing: slot -> distinct index
    distinct = np.empty(real, np.int64)
    members = np.empty(real, np.int64)
    samples = np.empty(real, np.int64)
    weights = np.empty(real, np.float32)
    count = found = 0
    for b in range(batch):
        size = 0
        for n in range(num_nodes):
            size += node_mask[b, n] > 0.5
        for n in range(num_nodes):
            if node_mask[b, n] <= 0.5:
                continue
            row = b * num_nodes + n
            key = FNV_START  # FNV-1a over the row's float bits
            for f in range(width):
                key = fnv_mix(key, bits[row, f])
            slot = np.int64(key & np.uint64(capacity - 1))
            while True:
                index = table[slot]
                if index < 0:
                    table[slot] = found
                    distinct[found] = row
                    index = found
                    found += 1
                    break
                other = distinct[index]
                same = True
                for f in range(width):
                    if bits[row, f] != bits[other, f]:
                        same = False
                        break
                if same:
                    break
                slot = (slot + 1) & (capacity - 1)
            members[count], samples[count] = index, b
            weights[count] = 1.0 / size
            count += 1
    return distinct[:found].copy(), members, samples, weights
