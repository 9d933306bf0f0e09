"""The schedule of one placement: per device, its steps in order and the messages between them.

Each device runs its graph nodes in a fixed order: by simulated start time (the simulator's
list schedule of the same placement), ties in topological order. That order is a linear
extension of the graph on every device, so blocking receives cannot deadlock, and a device
does not wait on a late input while it has other work ready, as a dynamic scheduler would.

Messages carry a value's tensors forward (one per value and destination device, sent as
soon as the value is computed, received where it is first read) and, in training graphs, the
summed gradient of a value backward (one per value and reading device, sent after that
device's last backward step that reads it). Every message has its own tag and its own slot in
the shared arena (:mod:`placerl.measure.transport`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placerl.graph import CompGraph
from placerl.graph.orders import traversal_order
from placerl.measure.layout import Layout

__all__ = ["Message", "Step", "WorkerPlan", "make_plans"]


@dataclass(frozen=True)
class Message:
    """One value (or its gradient) moving between two devices.

    Attributes:
        value: The value's fx name.
        peer: The other device (destination of a send, source of a receive).
        tags: One tag per leaf that travels (tensor leaves forward, gradient leaves backward).
        slots: ``(offset, nbytes)`` of each leaf's bytes in the shared arena.
    """

    value: str
    peer: int
    tags: tuple[int, ...]
    slots: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Step:
    """One graph node run on a device.

    Attributes:
        node: Index into ``layout.forward`` of the forward node (also for backward steps).
        backward: True for the node's backward step.
        sends: Messages sent right after the step.
    """

    node: int
    backward: bool
    sends: tuple[Message, ...] = ()


@dataclass(frozen=True)
class WorkerPlan:
    """What one device does in one run of a placement.

    Attributes:
        steps: Its steps in order.
        receives: Values it receives (posted when the run starts, waited for when read).
        grad_receives: Gradients it receives for values it computed (sent by the last
            backward step reading the value on the peer device).
    """

    steps: tuple[Step, ...]
    receives: tuple[Message, ...] = ()
    grad_receives: tuple[Message, ...] = ()


#: Payload slots start at multiples of this many bytes (any dtype can view its slot).
ALIGN = 64


def make_plans(
    graph: CompGraph, layout: Layout, placement: np.ndarray, start: np.ndarray, num_devices: int
) -> tuple[list[WorkerPlan], int]:
    """One :class:`WorkerPlan` per device for ``placement``, and the arena bytes they need.

    Args:
        graph: The placed graph.
        layout: The program laid over it.
        placement: Device of every graph node (backward nodes on their forward node's device).
        start: Simulated start time of every graph node (orders each device's steps).
        num_devices: Number of devices.
    """
    topo = np.empty(graph.num_nodes, dtype=np.int64)
    topo[traversal_order(graph, "topo")] = np.arange(graph.num_nodes)
    device = placement[layout.forward]
    runs: list[list[tuple[float, int, int, bool]]] = [[] for _ in range(num_devices)]
    for i, v in enumerate(layout.forward):
        runs[device[i]].append((start[v], topo[v], i, False))
        b = layout.backward[i]
        if b >= 0:
            runs[device[i]].append((start[b], topo[b], i, True))
    order = [[(i, back) for _, _, i, back in sorted(run)] for run in runs]
    tags = iter(range(1, 1 << 62))
    arena = 0

    def message(value: str, peer: int, sizes: list[int]) -> Message:
        nonlocal arena
        slots = []
        for nbytes in sizes:
            slots.append((arena, nbytes))
            arena += -(-nbytes // ALIGN) * ALIGN
        return Message(value, peer, tuple(next(tags) for _ in sizes), tuple(slots))

    sends: dict[tuple[int, bool], list[Message]] = {}
    receives: list[list[Message]] = [[] for _ in range(num_devices)]
    grad_receives: list[list[Message]] = [[] for _ in range(num_devices)]
    for value, readers in _readers(layout).items():
        owner = layout.owner[value]
        info = layout.values[value]
        for d in sorted({int(device[r]) for r in readers} - {int(device[owner])}):
            here = int(device[owner])
            forward = message(value, d, [info.leaves[k].nbytes for k in info.tensors])
            sends.setdefault((owner, False), []).append(forward)
            receives[d].append(Message(value, here, forward.tags, forward.slots))
            if not (layout.training and info.grads):
                continue
            back = message(value, here, [info.leaves[k].nbytes for k in info.grads])
            last = [i for i, backward in order[d] if backward and i in readers]
            sends.setdefault((last[-1], True), []).append(back)
            grad_receives[here].append(Message(value, d, back.tags, back.slots))
    plans = [
        WorkerPlan(
            steps=tuple(Step(i, back, tuple(sends.get((i, back), ()))) for i, back in order[d]),
            receives=tuple(receives[d]),
            grad_receives=tuple(grad_receives[d]),
        )
        for d in range(num_devices)
    ]
    return plans, arena


def _readers(layout: Layout) -> dict[str, list[int]]:
    """Forward nodes (indices into ``layout.forward``) reading each crossing value."""
    readers: dict[str, list[int]] = {}
    for i, values in enumerate(layout.reads):
        for value in values:
            readers.setdefault(value, []).append(i)
    return readers
