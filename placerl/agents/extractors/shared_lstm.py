"""A one-layer bidirectional LSTM over a minibatch whose samples share rows, each shared run
computed once.

A PPO minibatch holds a graph (or a few) under many partial placements, and constructing a
placement in traversal order touches the rows in order:

* **Backward direction.** The rows after the current node are still the graph's static rows,
  the same in every sample of that graph, and the backward direction reads them first: its
  states there are computed once per graph (the graph's "donor" run), and each sample runs
  only its own head of rows, starting from the donor's state.
* **Forward direction.** The rows before the current node are final: a later sample of the
  same episode has the same ones. The forward direction's states there are computed once, on
  the sample that reaches furthest (the "root"), and each sample runs only from its current
  node on, starting from its root's state. Which samples share a prefix is found by a
  fingerprint of every prefix and then checked row by row, so a fingerprint collision costs
  only the saving.

Samples are grouped into buckets of equal count by how many rows they must run; a bucket runs
as many rows as its longest sample needs. The extra rows a shorter sample runs are its own
rows, so the states and every parameter's gradient are the plain ``lstm(x)``'s up to float
rounding (tests check them); the gradient with respect to a shared row of ``x`` goes to the
run that read it once (the root sample; the donor's own embedding of the graph), not to every
sample holding a copy of the row. A direction whose buckets would save less than
:data:`SAVING` of its rows runs plainly. In PPO's updates on 256 samples of a 100-node graph,
a minibatch's forward, backward and Adam step take 0.7-0.8x their plain time; rollouts and
evaluations, which need no gradients, run plainly (see :func:`plan_sharing`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from placerl.envs.case import CURRENT, NUM_BASE_FEATURES, PLACED, START

#: The base columns of a ``nodes`` row that placing nodes writes (the device one-hot columns
#: after the base ones are written too); a row where all are zero is the graph's static row.
DYNAMIC_BASE_COLUMNS = (PLACED, CURRENT, START)

#: Samples are split into this many buckets of equal count by rows to run: more buckets run
#: fewer rows but make more LSTM calls (3 to 6 were equally fast for 256 samples of 100 rows
#: on 2 cores, 8 slower).
BUCKETS = 4

#: Below this many samples the buckets' extra calls cost more than the rows they save.
MIN_SAMPLES = 32

#: The least share of a direction's rows its buckets must save to be used.
SAVING = 0.2

#: Above this many samples the forward direction runs plainly: finding roots compares every
#: pair of samples (0.5 GB at 8,192).
MAX_PREFIX_SAMPLES = 2048

_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")

#: Bucket: its samples' indices and the row where its run starts (forward) or the number of
#: rows it runs (backward).
Bucket = tuple[torch.Tensor, int]
Buckets = tuple[Bucket, ...]
#: The samples whose rows others share, and each sample's index among them.
Roots = tuple[torch.Tensor, torch.Tensor]
#: An LSTM direction's ``(h, c)``, each ``(1, B, hidden)``.
State = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class SharingPlan:
    """Which rows each sample runs through each direction itself.

    Attributes:
        graphs: ``(G, N, F)`` each distinct graph's static rows (its donor sequence).
        graph_of: ``(B,)`` the index in ``graphs`` of each sample's graph.
        backward: Buckets running rows ``length - 1 .. 0`` from their graphs' donor states.
        roots: ``(R,)`` the samples whose rows before each bucket's start others share.
        root_of: ``(B,)`` the index in ``roots`` of each sample's root.
        forward: Buckets running rows ``start .. N - 1`` from their roots' states at ``start``.
    """

    graphs: torch.Tensor
    graph_of: torch.Tensor
    backward: Buckets
    roots: torch.Tensor
    root_of: torch.Tensor
    forward: Buckets


def dynamic_columns(num_features: int) -> list[int]:
    """The ``nodes`` columns that placing nodes writes: see :data:`DYNAMIC_BASE_COLUMNS`."""
    return [*DYNAMIC_BASE_COLUMNS, *range(NUM_BASE_FEATURES, num_features)]


def plan_sharing(nodes: torch.Tensor, current: torch.Tensor) -> SharingPlan | None:
    """Plan both directions over an unpadded batch.

    Args:
        nodes: ``(B, N, F)`` the observations' node rows, every row a real node (no padding).
        current: ``(B, N)`` the one-hot current row of each sample (all zero: none).

    Returns:
        The plan, or None when the saving would not pay: without gradients (oneDNN's inference
        kernel runs the plain LSTM as fast: 30 ms plain against 33 ms shared for 256 samples of
        100 rows on one thread, where with gradients the plain pass takes 133 ms and the shared
        one 89), off the CPU, below :data:`MIN_SAMPLES` samples, for rows without placerl's
        column layout, or when neither direction would save :data:`SAVING` of its rows (e.g.
        refine envs, where every row is placed). Above :data:`MAX_PREFIX_SAMPLES` samples the
        forward direction runs plainly.
    """
    batch, _, num_features = nodes.shape
    if (
        batch < MIN_SAMPLES
        or nodes.device.type != "cpu"
        or not torch.is_grad_enabled()
        or num_features < NUM_BASE_FEATURES
    ):
        return None
    dynamic = dynamic_columns(num_features)
    touched = (nodes[:, :, dynamic] != 0).any(dim=2)
    every = torch.arange(batch)
    backward = _backward_buckets(touched)
    (roots, root_of), forward = (
        _forward_buckets(nodes, current) if batch <= MAX_PREFIX_SAMPLES else ((every, every), None)
    )
    if backward is None and forward is None:
        return None
    if backward is None:  # every sample from its last row: no donor rows are read
        graphs, graph_of = nodes[:1], torch.zeros_like(every)
    else:
        graphs, graph_of = _distinct_graphs(nodes, dynamic)
    if forward is None:
        roots, root_of, forward = every[:1], torch.zeros_like(every), ((every, 0),)  # row 0 on
    return SharingPlan(
        graphs, graph_of, backward or ((every, nodes.shape[1]),), roots, root_of, forward
    )


def supports(lstm: nn.LSTM) -> bool:
    """Whether :func:`shared_bidirectional` can run ``lstm``: one bidirectional layer over
    batch-first rows, with biases and without projections."""
    return (
        lstm.num_layers == 1
        and lstm.bidirectional
        and lstm.batch_first
        and lstm.bias
        and not lstm.proj_size
    )


def shared_bidirectional(
    lstm: nn.LSTM, embed: nn.Module, x: torch.Tensor, plan: SharingPlan
) -> tuple[torch.Tensor, torch.Tensor]:
    """``lstm(x)`` computed as ``plan`` shares the rows.

    Args:
        lstm: An LSTM that :func:`supports` accepts.
        embed: The module that embedded ``x`` from the observation's rows; it embeds the donor
            graphs' rows the same way.
        x: ``(B, N, H)`` the embedded rows of the observations ``plan`` was made from.
        plan: From :func:`plan_sharing`.

    Returns:
        The states ``(B, N, 2 * hidden)`` and the final states ``(2, B, hidden)`` (forward,
        backward), as ``lstm(x)`` gives them.

    Raises:
        ValueError: ``lstm`` is not one :func:`supports`.
    """
    if not supports(lstm):
        raise ValueError(
            "shared_bidirectional runs one bidirectional batch-first LSTM layer "
            f"with biases and no projection, not {lstm}"
        )
    forward_states, forward_last = _forward(lstm, x, plan)
    backward_states, backward_first = _backward(lstm, embed(plan.graphs), x, plan)
    return (
        torch.cat([forward_states, backward_states], dim=2),
        torch.cat([forward_last, backward_first]),
    )


def _distinct_graphs(nodes: torch.Tensor, dynamic: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The samples' distinct static rows ``(G, N, F)`` and each sample's index among them.

    Grouped by a fingerprint and then checked row by row (``torch.unique`` over whole samples
    compares them one pair at a time: 3 of a plan's 7 ms); a collision falls back to it."""
    static = nodes.clone()
    static[:, :, dynamic] = 0
    _, graph_of = torch.unique(_prefix_fingerprints(static)[:, -1], return_inverse=True)
    first = torch.full((int(graph_of.max()) + 1,), len(nodes)).scatter_reduce(
        0, graph_of, torch.arange(len(nodes)), "amin"
    )
    graphs = static[first]
    if not torch.equal(graphs[graph_of], static):
        graphs, graph_of = torch.unique(static.flatten(1), dim=0, return_inverse=True)
        graphs = graphs.view(-1, *nodes.shape[1:])
    return graphs, graph_of


def _backward_buckets(touched: torch.Tensor) -> Buckets | None:
    """Each sample must run its rows up to its last touched one (at least row 0)."""
    rows = torch.arange(1, touched.shape[1] + 1)
    own = (touched * rows).amax(dim=1).clamp_min(1)
    buckets = tuple(
        (chunk, int(own[chunk].max()))
        for chunk in torch.argsort(own, descending=True).chunk(BUCKETS)
    )
    return buckets if _saves(buckets, touched.shape, lambda length: length) else None


def _forward_buckets(nodes: torch.Tensor, current: torch.Tensor) -> tuple[Roots, Buckets | None]:
    """Each sample shares its rows before the current one with the sample whose rows start
    the same and whose current row is furthest on (its root): the roots, each sample's index
    among them, and the buckets (None when they would not save enough)."""
    batch, num_nodes, _ = nodes.shape
    prefix = current.argmax(dim=1) * (current.amax(dim=1) > 0)
    fingerprints = _prefix_fingerprints(nodes)  # (B, N + 1)
    mine = fingerprints.gather(1, prefix[:, None])  # (B, 1)
    theirs = fingerprints[:, prefix].T  # (B, B): [b, r] = r's fingerprint of b's prefix
    candidates = (theirs == mine) & (prefix[None, :] >= prefix[:, None])
    root = torch.argmax(candidates * (prefix[None, :] + 1), dim=1)  # the first furthest
    same = (nodes == nodes[root]).all(dim=2) | (torch.arange(num_nodes) >= prefix[:, None])
    root = torch.where(same.all(dim=1), root, torch.arange(batch))
    roots, root_of = torch.unique(root, return_inverse=True)
    buckets = tuple(
        (chunk, int(prefix[chunk].min())) for chunk in torch.argsort(prefix).chunk(BUCKETS)
    )
    extra = len(roots) * max(start for _, start in buckets)
    saves = _saves(buckets, (batch, num_nodes), lambda start: num_nodes - start, extra)
    return (roots, root_of), buckets if saves else None


def _saves(
    buckets: Buckets, shape: tuple[int, ...], rows: Callable[[int], int], extra: int = 0
) -> bool:
    """Whether running ``rows(value)`` rows per bucket sample, plus ``extra``, saves
    :data:`SAVING` of the plain ``batch x num_nodes`` rows."""
    cost = extra + sum(len(chunk) * rows(value) for chunk, value in buckets)
    return cost <= (1 - SAVING) * shape[0] * shape[1]


@functools.cache
def _random_weights(num_features: int, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)  # its own: torch's global stream is untouched
    return (
        torch.rand(num_features, generator=generator, dtype=torch.float64) + 0.5,
        torch.rand(num_nodes, generator=generator, dtype=torch.float64) + 0.5,
    )


def _prefix_fingerprints(nodes: torch.Tensor) -> torch.Tensor:
    """``(B, N + 1)``: column ``i`` is a fingerprint of rows ``0 .. i - 1``; equal prefixes
    give bit-equal fingerprints (the same sums in the same order)."""
    by_feature, by_row = _random_weights(nodes.shape[2], nodes.shape[1])
    codes = (nodes.double() * by_feature).sum(dim=2) * by_row  # no BLAS: the same sum per row
    return torch.cat([codes.new_zeros(len(codes), 1), codes.cumsum(dim=1)], dim=1)


def _forward(
    lstm: nn.LSTM, x: torch.Tensor, plan: SharingPlan
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward direction: the roots' prefixes once, then each bucket from its roots'
    states; every row's state ``(B, N, hidden)`` and the last one ``(1, B, hidden)``."""
    starts = sorted({start for _, start in plan.forward})
    shared = _chained(lstm, "", _rows(x, plan.roots), starts)
    parts, lasts = [], []
    for (chunk, start), rows in zip(plan.forward, _bucketed(x, plan.forward), strict=True):
        states, (h0, c0) = shared[start]
        roots = plan.root_of[chunk]
        own, (last, _) = _direction(
            lstm, "", rows[:, start:], (_rows(h0, roots, 1), _rows(c0, roots, 1))
        )
        parts.append(torch.cat([_rows(states, roots), own], dim=1))
        lasts.append(last)
    return _unsorted(parts, lasts, plan.forward)


def _backward(
    lstm: nn.LSTM, graphs: torch.Tensor, x: torch.Tensor, plan: SharingPlan
) -> tuple[torch.Tensor, torch.Tensor]:
    """The backward direction: the donor graphs' tails once, then each bucket from its
    graphs' states; every row's state ``(B, N, hidden)`` and row 0's ``(1, B, hidden)``."""
    lengths = sorted({length for _, length in plan.backward}, reverse=True)
    shared = _chained(lstm, "_reverse", graphs, lengths)
    parts, firsts = [], []
    for (chunk, length), rows in zip(plan.backward, _bucketed(x, plan.backward), strict=True):
        states, (h0, c0) = shared[length]
        graph = plan.graph_of[chunk]
        own, (first, _) = _direction(
            lstm, "_reverse", rows[:, :length].flip(1), (_rows(h0, graph, 1), _rows(c0, graph, 1))
        )
        parts.append(torch.cat([own.flip(1), _rows(states, graph)], dim=1))
        firsts.append(first)
    return _unsorted(parts, firsts, plan.backward)


def _bucketed(x: torch.Tensor, buckets: Buckets) -> tuple[torch.Tensor, ...]:
    """``x``'s samples bucket by bucket: one permutation and one split, whose gradients are a
    gather and a concatenation (indexing each bucket would scatter into a zero copy of ``x``
    per bucket)."""
    order = torch.cat([chunk for chunk, _ in buckets])
    return _permuted(x, order).split([len(chunk) for chunk, _ in buckets])


def _unsorted(
    parts: list[torch.Tensor], finals: list[torch.Tensor], buckets: Buckets
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bucket results back in the samples' order."""
    inverse = torch.argsort(torch.cat([chunk for chunk, _ in buckets]))
    return _permuted(torch.cat(parts), inverse), _rows(torch.cat(finals, dim=1), inverse, 1)


class _Permutation(torch.autograd.Function):
    """``t[order]`` for a permutation ``order`` of ``t``'s rows, its gradient a gather too."""

    @staticmethod
    def forward(ctx, t: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(order)
        return torch.index_select(t, 0, order)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (order,) = ctx.saved_tensors
        return torch.index_select(grad, 0, torch.argsort(order)), None


def _permuted(t: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    return _Permutation.apply(t, order)


def _rows(t: torch.Tensor, index: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """``t``'s entries ``index`` along ``dim``: ``index_select``, whose CPU kernel copies whole
    rows (0.1 ms for 256 samples of 100 rows of 64, where ``t[index]`` takes 0.7 ms)."""
    return torch.index_select(t, dim, index)


def _chained(
    lstm: nn.LSTM, suffix: str, x: torch.Tensor, stops: list[int]
) -> dict[int, tuple[torch.Tensor, State]]:
    """One direction (``""`` forward from row 0, ``"_reverse"`` backward from the last row)
    over ``x``, stopping at each row of ``stops`` in reading order: per stop, the states of
    the rows read so far (in row order) and ``(h, c)`` on reaching it."""
    count, num_nodes, _ = x.shape
    reverse = suffix == "_reverse"
    zero = x.new_zeros(1, count, lstm.hidden_size)
    at, state = (num_nodes if reverse else 0), (zero, zero)
    states = x.new_zeros(count, 0, lstm.hidden_size)
    shared = {}
    for stop in stops:
        if stop != at:
            rows = x[:, stop:at].flip(1) if reverse else x[:, at:stop]
            run, state = _direction(lstm, suffix, rows, state)
            states = torch.cat([run.flip(1), states] if reverse else [states, run], dim=1)
            at = stop
        shared[stop] = (states, state)
    return shared


def _direction(
    lstm: nn.LSTM, suffix: str, x: torch.Tensor, state: State
) -> tuple[torch.Tensor, State]:
    """One direction of a one-layer bidirectional ``lstm`` (``""`` forward, ``"_reverse"``
    backward) as a unidirectional LSTM over ``x`` in the order given, from ``state``: the
    kernel ``nn.LSTM`` itself calls, given that direction's weights (no module is swapped,
    so concurrent passes cannot see each other's weights)."""
    weights = [getattr(lstm, name + suffix) for name in _WEIGHTS]
    states, h, c = torch.lstm(x, state, weights, True, 1, 0.0, lstm.training, False, True)
    return states, (h, c)
