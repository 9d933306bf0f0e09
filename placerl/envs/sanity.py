"""Tiny placement problems with known optima, for tests and learning checks.

Each :class:`SanityProblem` states its optimum analytically; the tests confirm it by brute
force over every placement. ``gymnasium.make("placerl/SanityChain-v1")`` and friends wrap them
in ``placerl/Placement-v1`` and report the optimum as ``info["optimal_runtime"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placerl._registry import Registry
from placerl.cluster import Cluster, homogeneous
from placerl.devices import GiB
from placerl.envs.placement import PlacementEnv
from placerl.graph import CompGraph


@dataclass(frozen=True)
class SanityProblem:
    """A graph, a cluster and the best achievable runtime (seconds) under ``step_time``."""

    name: str
    graph: CompGraph
    cluster: Cluster
    optimal_runtime: float
    lesson: str


SANITY_PROBLEMS: Registry[SanityProblem] = Registry("sanity problem")


def _chain() -> SanityProblem:
    nodes = [{"name": f"op{i}", "cost": 1e-3, "out_bytes": 1e6} for i in range(4)]
    edges = [(f"op{i}", f"op{i + 1}") for i in range(3)]
    return SanityProblem(
        "chain",
        CompGraph(nodes, edges, name="sanity-chain"),
        homogeneous(2, bandwidth=1e6, comm_model="ideal"),  # any cut costs a full second
        optimal_runtime=4e-3,
        lesson="a chain with heavy tensors belongs on one device",
    )


def _branches() -> SanityProblem:
    nodes = [{"name": "src", "cost": 0.0}, {"name": "sink", "cost": 0.0}]
    nodes += [{"name": f"{b}{i}", "cost": 1e-2} for b in "lr" for i in range(2)]
    edges = [
        ("src", "l0"),
        ("l0", "l1"),
        ("l1", "sink"),
        ("src", "r0"),
        ("r0", "r1"),
        ("r1", "sink"),
    ]
    return SanityProblem(
        "branches",
        CompGraph(nodes, edges, name="sanity-branches"),
        homogeneous(2, comm_model="ideal"),  # zero-byte tensors: transfers are free
        optimal_runtime=2e-2,
        lesson="two heavy independent branches run in parallel on two devices",
    )


def _memory() -> SanityProblem:
    nodes = [
        {"name": f"op{i}", "cost": 1e-3, "out_bytes": 1e3, "mem_bytes": 6 * GiB} for i in range(3)
    ]
    edges = [("op0", "op1"), ("op1", "op2")]
    return SanityProblem(
        "memory",
        CompGraph(nodes, edges, name="sanity-memory"),
        homogeneous(2, memory=16 * GiB, bandwidth=1e9, comm_model="ideal"),
        optimal_runtime=3e-3 + 1e3 / 1e9,  # 18 GiB must split: one cut of a 1 kB tensor
        lesson="a graph over one device's memory must be split",
    )


for _factory in (_chain, _branches, _memory):
    _problem = _factory()
    SANITY_PROBLEMS.register(_problem.name, _problem)


class SanityEnv(PlacementEnv):
    """``placerl/Placement-v1`` on a sanity problem; ``info["optimal_runtime"]`` is its optimum."""

    def __init__(self, problem: str, **kwargs: Any) -> None:
        self.problem = SANITY_PROBLEMS[problem]
        super().__init__(graph=self.problem.graph, cluster=self.problem.cluster, **kwargs)

    def _info(self, runtime: float | None, done: bool, **extra: Any) -> dict[str, Any]:
        return super()._info(runtime, done, optimal_runtime=self.problem.optimal_runtime, **extra)


def make_sanity_env(problem: str, **kwargs: Any) -> SanityEnv:
    """Entry point of the ``placerl/Sanity*-v1`` ids."""
    return SanityEnv(problem, **kwargs)
