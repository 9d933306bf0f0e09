"""What episodes over one graph share: the order, static features, references.

A :class:`GraphCase` is built once per (graph, cluster, objective, order) and never changes,
so that an env holds only episode state and ``reset(seed=s)`` cannot depend on history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from placerl.baselines.list_scheduling import upward_rank
from placerl.baselines.problem import Problem
from placerl.baselines.references import Reference, reference
from placerl.cluster import Cluster
from placerl.envs.device_features import DeviceTables
from placerl.graph import CompGraph
from placerl.graph.folding import fold_repeats
from placerl.graph.orders import traversal_order
from placerl.sim import CostModel

# Column layout of the "nodes" observation (documented in the env docstrings).
NUM_BASE_FEATURES = 10
#: Bumped whenever the observation's layout or meaning changes, and saved with every policy
#: (:meth:`placerl.envs.base.PlacementEnvBase.settings`): one trained on another version reads
#: these observations wrongly. 2: the ``RANK`` column and the ``devices`` features of HEFT's
#: own schedule (policies saved before carry no version: 1). 3: the policies' node encoders
#: read the columns before the device one-hot only (:mod:`placerl.agents.extractors.base`),
#: so that one policy places on any device count.
OBSERVATION_VERSION = 3
(COST, OUT_BYTES, MEM_BYTES, IN_DEGREE, OUT_DEGREE, POSITION, PLACED, CURRENT, START, RANK) = range(
    NUM_BASE_FEATURES
)


def _scaled(values: np.ndarray) -> np.ndarray:
    top = values.max()
    return values / top if top > 0 else np.zeros_like(values)


def static_features(graph: CompGraph, order: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Columns ``COST`` .. ``POSITION`` and ``RANK`` of the ``nodes`` observation, rows in
    ``order`` (the other columns zero); ``rank`` is every node's upward rank (HEFT's
    priority), scaled by its largest value."""
    a = graph.arrays
    degree = np.maximum(a.in_degree, a.out_degree).max()
    static = np.zeros((graph.num_nodes, NUM_BASE_FEATURES), dtype=np.float32)
    static[:, COST] = _scaled(a.cost)[order]
    static[:, OUT_BYTES] = _scaled(a.out_bytes)[order]
    static[:, MEM_BYTES] = _scaled(a.mem_bytes)[order]
    static[:, IN_DEGREE] = (a.in_degree / max(degree, 1))[order]
    static[:, OUT_DEGREE] = (a.out_degree / max(degree, 1))[order]
    static[:, POSITION] = np.arange(graph.num_nodes) / max(graph.num_nodes - 1, 1)
    static[:, RANK] = _scaled(rank)[order]
    return static


@dataclass(frozen=True, eq=False)
class GraphCase:
    """Everything about one graph that episodes reuse, built once per graph and never changed.

    Rows of the observation follow the traversal order: row ``i`` is node ``order[i]``.
    References come from the shared cache (:mod:`placerl.baselines.references`), not from the
    env, so vector-env workers compute each one once.
    """

    graph: CompGraph
    model: CostModel
    order: np.ndarray
    steps: np.ndarray
    row_of: np.ndarray
    static: np.ndarray
    edge_rows: np.ndarray
    members: list[np.ndarray]
    group_mem: np.ndarray
    rank: np.ndarray
    single_device: Reference
    reference: Reference
    device_tables: DeviceTables

    def unit_rows(self) -> np.ndarray:
        """One row per unit (a colocation group, with its copies when folding): the unit's
        first row among ``steps``, in order. Placing that row's node places the unit."""
        seen: set[int] = set()
        rows = []
        for row in self.steps:
            unit = int(self.members[int(self.order[row])].min())
            if unit not in seen:
                seen.add(unit)
                rows.append(int(row))
        return np.array(rows, dtype=np.int64)

    @property
    def reference_placement(self) -> np.ndarray:
        """The reference placer's placement."""
        return self.reference.placement

    @property
    def reference_runtime(self) -> float:
        """The runtime rewards are normalized by (penalized if the reference is infeasible)."""
        return self.reference.score

    @classmethod
    def build(
        cls,
        graph: CompGraph,
        cluster: Cluster,
        objective: str,
        order: Any,
        order_seed: int,
        reference_spec: str | Reference,
        fold: bool = False,
    ) -> GraphCase:
        """Compute everything about ``graph`` that its episodes share.

        Args:
            graph: The graph.
            cluster: The devices.
            objective: The cost model's objective.
            order: A traversal order name or callable; ``order_seed`` seeds random orders.
            order_seed: Seed of the random orders.
            reference_spec: A placer spec (computed through the shared reference cache) or a
                precomputed :class:`~placerl.baselines.references.Reference` for this graph.
            fold: Tie every copy of a repeated block (:func:`~placerl.graph.passes.fold_repeats`)
                to its first copy: the episode visits first copies only (``steps``), and a
                node's unit (``members``) holds its colocation group and its copies.
        """
        problem = Problem(graph, cluster, objective)
        model = problem.model  # one cost model for the case and HEFT's rank
        a = graph.arrays
        order_idx = traversal_order(graph, order, seed=order_seed)
        row_of = np.empty_like(order_idx)
        row_of[order_idx] = np.arange(graph.num_nodes)
        rank = upward_rank(problem)
        static = static_features(graph, order_idx, rank)
        members = model.colocation_members()
        steps = np.arange(graph.num_nodes)
        if fold:
            representative = fold_repeats(graph).representative
            members = _tied(members, representative)
            steps = np.flatnonzero(representative[order_idx] == order_idx)
        if isinstance(reference_spec, Reference):
            reference_spec.check_matches(graph, cluster, objective)
            ref = reference_spec
        else:
            ref = reference(graph, cluster, objective, reference_spec)
        return cls(
            graph=graph,
            model=model,
            order=order_idx,
            steps=steps,
            row_of=row_of,
            static=static,
            edge_rows=np.stack([row_of[a.src], row_of[a.dst]]),
            members=members,
            group_mem=np.array([a.mem_bytes[m].sum() for m in members]),
            rank=rank,
            single_device=reference(graph, cluster, objective, "single_device"),
            reference=ref,
            device_tables=DeviceTables.build(graph, cluster, model.durations, members),
        )


def _tied(members: list[np.ndarray], representative: np.ndarray) -> list[np.ndarray]:
    """Units joining colocation groups and the copies of each node (union-find)."""
    parent = np.arange(len(members))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for v, group in enumerate(members):
        for u in (*group.tolist(), int(representative[v])):
            a, b = root(v), root(u)
            if a != b:
                parent[max(a, b)] = min(a, b)
    roots = np.array([root(v) for v in range(len(members))])
    units = {r: np.flatnonzero(roots == r) for r in np.unique(roots)}
    return [units[r] for r in roots]
