"""Cost models: how long a placement takes, and whether it fits.

``simulate(graph, placement, cluster, objective)`` is a pure function returning a
:class:`SimResult`; :class:`CostModel` precomputes what depends only on graph and cluster so that
repeated ``evaluate(placement)`` calls (one per env step) pay only for the simulation. The hot
loops are numba-compiled (:mod:`placerl.sim.kernels`); :mod:`placerl.sim.reference` is a slow,
obviously correct pure-Python simulator with the same semantics that the tests compare against.

Objectives
==========

``step_time`` - the time of one execution of the graph (one training step when the graph holds
backward nodes), by discrete-event simulation:

* Each device runs one op at a time. An op is *ready* on its device once all its inputs are
  there; its ready time is the arrival time of its last input (0 for ops without inputs).
  Whenever a device is free it starts, among its ready ops, the one that became ready first
  (ties: lower node index).
* An op's duration on device ``d`` is ``costs[kind(d)]`` when the node has a cost for that kind,
  else ``cost / speed(d)``. After each op of nonzero duration the device stays idle for the
  cluster's ``op_gap``.
* Outputs reach consumers on the same device when the op finishes. Cross-device transfers follow
  the cluster's ``comm_model``. The time of one edge ``e = (u, v)`` from device ``s`` to ``d`` is
  its explicit ``time`` when given, else ``latency[s, d] + bytes(e) / bandwidth[s, d]`` (edge
  bytes default to the producer's ``out_bytes``):

  - ``placeto``: each device has one outgoing channel. When an op with at least one consumer on
    another device finishes, one transfer is queued on its device's channel; it serves all
    remote consumers, whatever their devices, and lasts the longest of their edge times. A
    channel serves transfers one at a time in the order they were queued; after each transfer it
    stays idle for the cluster's ``transfer_gap``.
  - ``links``: one link per ordered device pair. One transfer per (producer, destination device),
    lasting the longest edge time to that device, queued on link ``(s, d)`` when the producer
    finishes (destinations in device order); a link carries one transfer at a time in queue
    order, then idles ``transfer_gap``.
  - ``ideal``: no contention: the transfer to each destination device arrives ``max edge time``
    after the producer finishes.

* Simultaneous events: all op completions at time ``t`` are applied (their outputs sent, their
  consumers' ready times updated) before any device picks its next op at ``t``, and each free
  device picks at most one op per such round. An op of zero duration started at ``t`` completes
  at ``t`` and is applied in the next round at ``t``.
* ``runtime`` is the finish time of the last op. ``busy`` is each device's compute time and
  ``comm`` the time its outgoing channel (``placeto``) or links (``links``, ``ideal``) spent
  transferring.

``pipeline`` - the max-load objective of Tarnawski et al. (NeurIPS 2020): the time per sample of
a steady-state pipeline. A device's load is the sum of its nodes' durations plus communication:
every node with a consumer on another device charges its transfer time once to its own device
and once to each other device holding one of its consumers. The transfer time of node ``u`` to
device ``d`` is the longest edge time from ``u`` to a consumer on ``d`` (edge times as above);
its own device is charged the longest of these. CPU-kind devices pay no communication.
``runtime`` is the largest load; ``busy`` and ``comm`` split each load.

Memory and feasibility
======================

A device's resident memory is the sum of its nodes' ``mem_bytes``. Under ``step_time`` its peak
also counts live activations: the output of ``u`` (``out_bytes``) lives on ``u``'s device from
``u``'s start until its last local consumer finishes and every remote copy has arrived, and on
each remote consumer device from the copy's arrival until the last consumer there finishes (at
equal times allocations count before frees). A placement is infeasible when some device's peak
memory exceeds its capacity (``memory_excess`` reports by how much), when a colocation group is
split across devices, or when a node sits on a device kind it cannot run on (cost ``inf``; the
runtime is then ``inf``). Infeasible placements still get a runtime, so envs can mask or
penalize; :func:`penalized_runtime` turns it into the one number rewards and references use.
"""

from placerl.sim import incremental  # noqa: F401  (registers the incremental objectives)
from placerl.sim.bounds import LOWER_BOUNDS, lower_bound
from placerl.sim.model import OBJECTIVES, CostModel, parse_objective, simulate
from placerl.sim.penalty import INFEASIBLE_FACTOR, clearly_faster, penalized_runtime
from placerl.sim.result import SimResult
from placerl.sim.strategy import StrategyCost, StrategySpace

# isort: split

__all__ = [
    "INFEASIBLE_FACTOR",
    "LOWER_BOUNDS",
    "OBJECTIVES",
    "CostModel",
    "SimResult",
    "StrategyCost",
    "StrategySpace",
    "clearly_faster",
    "lower_bound",
    "parse_objective",
    "penalized_runtime",
    "simulate",
]
