"""Rows that compute the same embedding, computed once: a message plan by classes of rows.

A GNN round gives a row a function of its own embedding and of the multisets of its
neighbours' embeddings (along the edges and against them; the mean aggregator reads nothing
else). Two rows equal in all of these get the same new embedding, so the rows of one forward
pass fall into classes, round by round, as in the Weisfeiler-Lehman test: before the first
round a class is a distinct node row (bit for bit), and after round ``r`` a class is a distinct
(own class, sorted along-neighbour classes, sorted against-neighbour classes) of round
``r - 1``. :func:`share_rows` turns a row-level :class:`MessagePlan` into one round plan per
round over classes: each class computed once, from one representative row's messages.

Why: a PPO minibatch holds the same graph under many partial placements, and a node's
embedding changes only where a placement changed within reach of it. On 256 observations of
a 100-node graph the per-node rounds of the dual env compute about 1,500, 3,500 and 6,100
classes instead of 24,320 rows each; the neighbourhood rounds of the construct env about
2,300, 1,100 and 230 instead of 4,000, 1,200 and 256. The embeddings are those of every row
computed alone (a test compares them), up to the order of floating-point sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numba import njit

from placerl.agents.extractors.message_plan import (
    FNV_START,
    MessagePlan,
    RoundPlan,
    distinct_rows,
    fnv_mix,
    segment_starts,
)


@dataclass(frozen=True)
class SharedPlan:
    """A forward pass's rounds over classes of rows (see the module docstring).

    Attributes:
        inputs: ``(C,)`` flat batch row of one node row per input class: what to embed.
        rounds: One :class:`RoundPlan` per round, from the classes before it to those after.
        outputs: The last round's class of each seed (or, for a whole plan, of each row).
    """

    inputs: torch.Tensor
    rounds: list[RoundPlan]
    outputs: torch.Tensor


def share_rows(plan: MessagePlan, nodes: torch.Tensor, whole: bool = False) -> SharedPlan:
    """The rounds of ``plan`` over classes of rows.

    Args:
        plan: The row-level plan (:func:`~placerl.agents.extractors.message_plan.plan_batch`).
        nodes: ``(B, N, F)`` the batch's node rows (``plan.rows`` index them flattened).
        whole: The plan updates every row in every round (``plan_batch(..., whole=True)``).
    """
    hops = len(plan.within) - 1
    outputs = [plan.within[-1] if whole else plan.within[hops - 1 - r] for r in range(hops)]
    counts = [plan.messages(o) for o in outputs]
    flat = nodes.detach().flatten(0, 1)[plan.rows.cpu()]
    representatives, row_class = distinct_rows(flat.to("cpu", torch.float32).numpy())
    planned = _classes(
        row_class,
        plan.sources.cpu().numpy(),
        plan.targets.cpu().numpy(),
        plan.scale.cpu().numpy(),
        np.array(outputs, np.int64),
        np.array(counts, np.int64),
    )
    own, sources, targets, scale, classes, messages, final = planned
    device = plan.rows.device
    tensor = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    rounds, first_class, first_message = [], 0, 0
    for size, count in zip(classes.tolist(), messages.tolist(), strict=True):
        cut = slice(first_message, first_message + count)
        rounds.append(
            RoundPlan(
                tensor(own[first_class : first_class + size]),
                tensor(sources[cut]),
                tensor(targets[cut]),
                tensor(scale[cut]),
            )
        )
        first_class, first_message = first_class + size, first_message + count
    return SharedPlan(plan.rows[tensor(representatives)], rounds, tensor(final))


def every_row(plan: MessagePlan) -> SharedPlan:
    """The rounds of the neighbourhood plan ``plan`` with every row a class of its own (the
    seeds' last-round rows first, in order)."""
    hops = len(plan.within) - 1
    rounds = [plan.round(plan.within[hops - 1 - r]) for r in range(hops)]
    return SharedPlan(plan.rows, rounds, torch.arange(plan.within[0], device=plan.rows.device))


@njit(cache=True)
def _classes(
    row_class: np.ndarray,
    sources: np.ndarray,
    targets: np.ndarray,
    scale: np.ndarray,
    outputs: np.ndarray,
    counts: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Every round's classes and their representatives' messages, concatenated round after
    round: own input class per class, messages (input class, ``2 * class + direction``,
    scale), classes and messages per round, and the last round's class of each output row."""
    hops = outputs.size
    starts = segment_starts(targets[: counts.max()], 2 * outputs.max())  # targets' segments
    own_out = np.empty(outputs.sum(), np.int64)
    sources_out = np.empty(counts.sum(), np.int64)
    targets_out = np.empty(counts.sum(), np.int64)
    scale_out = np.empty(counts.sum(), np.float32)
    classes, messages = np.zeros(hops, np.int64), np.zeros(hops, np.int64)
    previous = row_class
    k_own = k_message = 0
    for r in range(hops):
        size = outputs[r]
        neighbours = np.empty(counts[r], np.int64)  # each segment's input classes, sorted
        for t in range(2 * size):
            for m in range(starts[t], starts[t + 1]):
                value, j = previous[sources[m]], m
                while j > starts[t] and neighbours[j - 1] > value:  # insertion sort
                    neighbours[j] = neighbours[j - 1]
                    j -= 1
                neighbours[j] = value
        capacity = 1
        while capacity < 2 * size + 2:
            capacity *= 2
        table = np.full(capacity, -1, np.int64)
        representatives = np.empty(size, np.int64)
        current = np.empty(size, np.int64)
        found = 0
        for v in range(size):
            key = fnv_mix(FNV_START, previous[v])  # over the class's defining values
            for t in (2 * v, 2 * v + 1):
                key = fnv_mix(key, starts[t + 1] - starts[t])
                for m in range(starts[t], starts[t + 1]):
                    key = fnv_mix(key, neighbours[m])
            slot = np.int64(key & np.uint64(capacity - 1))
            while True:
                index = table[slot]
                if index < 0:
                    table[slot] = found
                    representatives[found] = v
                    index = found
                    found += 1
                    break
                if _same(representatives[index], v, previous, starts, neighbours):
                    break
                slot = (slot + 1) & (capacity - 1)
            current[v] = index
        for c in range(found):  # each class from its representative's messages, in order
            u = representatives[c]
            own_out[k_own + c] = previous[u]
            for direction in range(2):
                t = 2 * u + direction
                for m in range(starts[t], starts[t + 1]):
                    sources_out[k_message] = previous[sources[m]]
                    targets_out[k_message] = 2 * c + direction
                    scale_out[k_message] = scale[m]
                    k_message += 1
                    messages[r] += 1
        k_own += found
        classes[r] = found
        previous = current
    return (
        own_out[:k_own],
        sources_out[:k_message],
        targets_out[:k_message],
        scale_out[:k_message],
        classes,
        messages,
        previous,
    )


@njit(cache=True)
def _same(u: int, v: int, previous: np.ndarray, starts: np.ndarray, neighbours: np.ndarray) -> bool:
    """Rows ``u`` and ``v`` have the same own class and the same sorted neighbour classes."""
    if previous[u] != previous[v]:
        return False
    for direction in range(2):
        a, b = 2 * u + direction, 2 * v + direction
        if starts[a + 1] - starts[a] != starts[b + 1] - starts[b]:
            return False
        for i in range(starts[a + 1] - starts[a]):
            if neighbours[starts[a] + i] != neighbours[starts[b] + i]:
                return False
    return True
