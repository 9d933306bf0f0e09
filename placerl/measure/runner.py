"""Run one device's share of a placement: its steps in order, its messages, its timings.

A :class:`Runner` lives in one worker process. Each graph node's step runs its fx nodes on
real tensors. Values from other graph nodes enter a step as fresh autograd leaves (training
graphs), so a node's backward step is one ``torch.autograd.backward`` from its outputs to
those leaves, whatever device its neighbours are on; the leaves' gradients are what flows on.
Tensors travel as raw bytes, so any dtype moves the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils._pytree import tree_flatten, tree_map

from placerl.measure.layout import Layout
from placerl.measure.plan import Message, Step, WorkerPlan
from placerl.measure.program import LoadedProgram

__all__ = ["Repetition", "Runner", "Transport"]


class Transport(Protocol):
    """Messages between devices (:class:`~placerl.measure.transport.PipeTransport`)."""

    rank: int
    arena: torch.Tensor

    def send(self, data: torch.Tensor, peer: int, tag: int, slot: tuple[int, int]) -> None: ...

    def receive(self, peer: int, tag: int, slot: tuple[int, int]) -> torch.Tensor: ...

    def barrier(self) -> None: ...

    def synchronize(self) -> None: ...


@dataclass
class Repetition:
    """Timings of one run on one device (``time.perf_counter`` seconds, one clock for all the
    processes of a machine).

    Attributes:
        start: When the device started (after the barrier all devices leave together).
        end: When its last step finished.
        steps: ``(node, backward, start, end)`` of each step.
        outputs: The program outputs it computed (only when asked for).
        grads: Gradients of the parameters its steps used (training graphs, when asked for).
    """

    start: float
    end: float
    steps: list[tuple[int, bool, float, float]]
    outputs: dict[str, Any] = field(default_factory=dict)
    grads: dict[str, torch.Tensor] = field(default_factory=dict)


class Runner:
    """Runs :class:`~placerl.measure.plan.WorkerPlan` s of one program on one device.

    Args:
        loaded: The program, loaded in this process.
        layout: The program laid over the graph (from the coordinator).
        transport: Messages to the other devices.
    """

    def __init__(self, loaded: LoadedProgram, layout: Layout, transport: Transport) -> None:
        if loaded.signature != layout.signature:
            raise RuntimeError(
                "this process traced the module differently from the coordinator; "
                "measurement needs a deterministic trace"
            )
        self.loaded, self.layout, self.transport = loaded, layout, transport
        self.exits: list[list[str]] = [[] for _ in layout.forward]
        for value, owner in layout.owner.items():
            self.exits[owner].append(value)
        self._trainable = loaded.trainable

    def run(
        self,
        plan: WorkerPlan,
        repeats: int,
        outputs: bool = False,
        sync_steps: bool = False,
        arena: torch.Tensor | None = None,
    ) -> list[Repetition]:
        """Run ``plan`` ``repeats`` times, each after a barrier with the other devices.

        ``sync_steps``: wait for the device after every step, so that step times are device
        times (asynchronous devices); ``arena``: the shared payload buffer, when the
        coordinator made a new one.
        """
        if arena is not None:
            self.transport.arena = arena
        return [self._once(plan, outputs, sync_steps) for _ in range(repeats)]

    def ping(
        self, src: int, dst: int, sizes: list[int], repeats: int, arena: torch.Tensor | None = None
    ) -> list[float]:
        """Round trips: ``sizes`` bytes from ``src`` to ``dst`` the way runs send them, then
        one byte back; ``src`` returns the seconds of each (size-major), the others nothing.

        Timed on one clock, so unlike one-way times they hold no barrier skew.
        """
        if arena is not None:
            self.transport.arena = arena
        rank, transport, tag = self.transport.rank, self.transport, 0
        times = []
        device = self.loaded.device
        for size in sizes:
            payload = torch.ones(size, dtype=torch.uint8, device=device)
            ack = torch.zeros(1, dtype=torch.uint8, device=device)
            for _ in range(repeats):
                tag += 2
                transport.barrier()
                if rank == src:
                    began = time.perf_counter()
                    transport.send(payload, dst, tag, (0, size))
                    transport.receive(dst, tag + 1, (size, 1))
                    transport.synchronize()  # the copies done, not just launched
                    times.append(time.perf_counter() - began)
                elif rank == dst:
                    transport.receive(src, tag, (0, size))
                    transport.synchronize()
                    transport.send(ack, src, tag + 1, (size, 1))
        return times

    def _once(self, plan: WorkerPlan, outputs: bool, sync_steps: bool) -> Repetition:
        for tensor in self._trainable.values():
            tensor.grad = None
        state = _RunState(plan)
        self.transport.barrier()
        start = time.perf_counter()
        timings = []
        with torch.set_grad_enabled(self.layout.training):
            for step in plan.steps:
                self._await(step, state)  # waiting for inputs is not the step's own time
                began = time.perf_counter()
                (self._backward if step.backward else self._forward)(step, state)
                if sync_steps:
                    self.transport.synchronize()
                timings.append((step.node, step.backward, began, time.perf_counter()))
            self.transport.synchronize()
        end = time.perf_counter()
        if not outputs:
            return Repetition(start, end, timings)
        kept = {
            v: tree_map(_detached, state.values[v])
            for v in self.layout.outputs
            if v in state.values
        }
        grads = {n: t.grad.cpu() for n, t in self._trainable.items() if t.grad is not None}
        return Repetition(start, end, timings, kept, grads)

    # ------------------------------------------------------------------------ messages
    def _receive(self, message: Message, which: list[int]) -> list[torch.Tensor]:
        """The tensors of one message (leaves ``which`` of its value), once they arrived."""
        info = self.layout.values[message.value]
        return [
            self.transport.receive(message.peer, tag, slot)
            .view(info.leaves[k].dtype)
            .reshape(info.leaves[k].shape)
            for k, tag, slot in zip(which, message.tags, message.slots, strict=True)
        ]

    def _send(self, leaves: list[torch.Tensor], message: Message) -> None:
        for leaf, tag, slot in zip(leaves, message.tags, message.slots, strict=True):
            self.transport.send(_as_bytes(leaf), message.peer, tag, slot)

    def _await(self, step: Step, state: _RunState) -> None:
        """Take the step's messages: its inputs (forward) or its outputs' gradients."""
        if not step.backward:
            for value in self.layout.reads[step.node]:
                if value not in state.values:
                    info = self.layout.values[value]
                    tensors = self._receive(state.inbox[value], info.tensors)
                    state.values[value] = _rebuild(info, tensors, self.loaded.device)
            return
        for value in self.exits[step.node]:
            info = self.layout.values[value]
            total = state.grads.setdefault(value, {})
            for message in state.grad_inbox.get(value, ()):
                for k, g in zip(info.grads, self._receive(message, info.grads), strict=True):
                    _accumulate(total, k, g)

    # ------------------------------------------------------------------------- forward
    def _forward(self, step: Step, state: _RunState) -> None:
        env: dict[str, Any] = {}
        leaves: dict[str, Any] = {}
        mutated = self.layout.mutated[step.node]
        for value in self.layout.reads[step.node]:
            base = state.values[value]
            if self.layout.training:
                base = leaves[value] = _leaves_for_grad(base, self.layout.values[value].grads)
            env[value] = _copy(base) if value in mutated else base
        loaded, constants = self.loaded, self.layout.constants

        def lookup(node: Any) -> Any:
            name = node.name
            if name in env:
                return env[name]
            if name in loaded.state:
                return loaded.state[name]
            return constants[name]

        for name in self.layout.members[step.node]:
            node = loaded.nodes[name]
            is_input = node.op == "placeholder"
            env[name] = loaded.inputs[name] if is_input else loaded.call(node, lookup)
            state.values[name] = env[name]
        if self.layout.training:
            state.saved[step.node] = (env, leaves)
        for message in step.sends:
            info = self.layout.values[message.value]
            flat = _flat(state.values[message.value])
            self._send([flat[k] for k in info.tensors], message)

    # ------------------------------------------------------------------------ backward
    def _backward(self, step: Step, state: _RunState) -> None:
        env, inputs = state.saved.pop(step.node)
        tensors, grads = [], []
        for value in self.exits[step.node]:
            info = self.layout.values[value]
            leaves = _flat(env[value])
            total = state.grads.pop(value, {})
            for k in info.grads:
                if value in self.layout.outputs:  # a graph output: backward from its sum
                    _accumulate(total, k, torch.ones_like(leaves[k]))
                if k in total and leaves[k].requires_grad:
                    tensors.append(leaves[k])
                    grads.append(total[k])
        if tensors:
            torch.autograd.backward(tensors, grads)
        for value in self.layout.reads[step.node]:
            info = self.layout.values[value]
            leaves = _flat(inputs[value])
            into = state.remote_grads if value in state.inbox else state.grads
            total = into.setdefault(value, {})
            for k in info.grads:
                grad = leaves[k].grad
                _accumulate(total, k, torch.zeros_like(leaves[k]) if grad is None else grad)
        for message in step.sends:
            total = state.remote_grads.pop(message.value)
            self._send([total[k] for k in self.layout.values[message.value].grads], message)


@dataclass
class _RunState:
    """What one run of a plan holds on one device."""

    plan: WorkerPlan
    values: dict[str, Any] = field(default_factory=dict)
    saved: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    grads: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict)
    remote_grads: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inbox = {m.value: m for m in self.plan.receives}
        self.grad_inbox: dict[str, list[Message]] = {}
        for m in self.plan.grad_receives:
            self.grad_inbox.setdefault(m.value, []).append(m)


def _accumulate(total: dict[int, torch.Tensor], k: int, grad: torch.Tensor) -> None:
    total[k] = total[k] + grad if k in total else grad


def _flat(value: Any) -> list[Any]:
    return tree_flatten(value)[0]


def _as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def _rebuild(info: Any, tensors: list[torch.Tensor], device: torch.device) -> Any:
    """A received value: its tensors (views of the arena), empty tensors and constants."""
    received = dict(zip(info.tensors, tensors, strict=True))
    leaves = [
        received[k]
        if k in received
        else torch.empty(leaf.shape, dtype=leaf.dtype, device=device)
        if leaf.is_tensor
        else leaf.constant
        for k, leaf in enumerate(info.leaves)
    ]
    return info.unflatten(leaves)


def _leaves_for_grad(value: Any, grads: list[int]) -> Any:
    """``value`` with every gradient-carrying tensor replaced by a fresh autograd leaf."""
    leaves, spec = tree_flatten(value)
    wanted = set(grads)
    fresh = [
        leaf.detach().requires_grad_(True) if k in wanted else leaf for k, leaf in enumerate(leaves)
    ]
    return spec.unflatten(fresh)


def _detached(x: Any) -> Any:
    # A copy on the host: received values are views of the shared arena, which the next run
    # overwrites, and GPU tensors go back to the coordinator.
    return x.detach().cpu().clone() if isinstance(x, torch.Tensor) else x


def _copy(value: Any) -> Any:
    """A copy of every tensor of ``value`` (differentiable: gradients reach the original)."""
    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, value)
