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

from placerl.measure.layout import Layout, ValueInfo
from placerl.measure.plan import Message, Step, WorkerPlan
from placerl.measure.program import LoadedProgram

__all__ = ["Repetition", "Runner", "Transport"]


class Handle(Protocol):
    """A pending send or receive."""

    def wait(self) -> Any: ...


class Transport(Protocol):
    """Point-to-point messages between devices (``torch.distributed`` in workers)."""

    def isend(self, tensor: torch.Tensor, peer: int, tag: int) -> Handle: ...

    def irecv(self, tensor: torch.Tensor, peer: int, tag: int) -> Handle: ...

    def barrier(self) -> None: ...

    @property
    def rank(self) -> int: ...


@dataclass
class Repetition:
    """Timings of one run on one device (``time.perf_counter`` seconds, shared by the
    processes of one machine).

    Attributes:
        start: When the device started (after the barrier all devices leave together).
        end: When its last step finished and its last message was delivered.
        steps: ``(node, backward, start, end)`` of each step.
        outputs: The program outputs it computed (only when asked for).
    """

    start: float
    end: float
    steps: list[tuple[int, bool, float, float]]
    outputs: dict[str, Any] = field(default_factory=dict)


class _Inbox:
    """Receive buffers of one plan, posted at the start of every run."""

    def __init__(self, layout: Layout, messages: tuple[Message, ...], grads: bool) -> None:
        self.messages = {m.value: m for m in messages} if not grads else {}
        self.grad_messages: dict[str, list[Message]] = {}
        if grads:
            for m in messages:
                self.grad_messages.setdefault(m.value, []).append(m)
        self.layout = layout
        self.buffers: dict[tuple[str, int], list[torch.Tensor]] = {}
        for m in messages:
            info = layout.values[m.value]
            leaves = info.grads if grads else info.tensors
            self.buffers[m.value, m.peer] = [
                torch.empty(info.leaves[k].nbytes, dtype=torch.uint8) for k in leaves
            ]
        self.all = messages
        self.grads = grads
        self.pending: dict[tuple[str, int], list[Handle]] = {}

    def post(self, transport: Transport) -> None:
        for m in self.all:
            buffers = self.buffers[m.value, m.peer]
            self.pending[m.value, m.peer] = [
                transport.irecv(b, m.peer, tag) for b, tag in zip(buffers, m.tags, strict=True)
            ]

    def take(self, value: str, peer: int) -> list[torch.Tensor]:
        """The tensors of one message, once they arrived."""
        for handle in self.pending.pop((value, peer)):
            handle.wait()
        info = self.layout.values[value]
        leaves = info.grads if self.grads else info.tensors
        return [
            buf.view(info.leaves[k].dtype).reshape(info.leaves[k].shape)
            for buf, k in zip(self.buffers[value, peer], leaves, strict=True)
        ]


class Runner:
    """Runs :class:`WorkerPlan` s of one program on one device.

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
        self._trainable = [t for t in loaded.state.values()
                           if isinstance(t, torch.Tensor) and t.requires_grad]  # fmt: skip

    def run(self, plan: WorkerPlan, repeats: int, outputs: bool = False) -> list[Repetition]:
        """Run ``plan`` ``repeats`` times, each after a barrier with the other devices."""
        inbox = _Inbox(self.layout, plan.receives, grads=False)
        grad_inbox = _Inbox(self.layout, plan.grad_receives, grads=True)
        return [self._once(plan, inbox, grad_inbox, outputs) for _ in range(repeats)]

    def _once(self, plan: WorkerPlan, inbox: _Inbox, grad_inbox: _Inbox,
              outputs: bool) -> Repetition:  # fmt: skip
        for tensor in self._trainable:
            tensor.grad = None
        state = _RunState(inbox, grad_inbox)
        self.transport.barrier()
        start = time.perf_counter()
        inbox.post(self.transport)
        grad_inbox.post(self.transport)
        timings = []
        with torch.set_grad_enabled(self.layout.training):
            for step in plan.steps:
                self._await(step, state)  # waiting for inputs is not the step's own time
                began = time.perf_counter()
                (self._backward if step.backward else self._forward)(step, state)
                timings.append((step.node, step.backward, began, time.perf_counter()))
            for handle in state.sent:
                handle.wait()
        end = time.perf_counter()
        kept = {v: tree_map(_detached, state.values[v])
                for v in self.layout.outputs if v in state.values}  # fmt: skip
        return Repetition(start, end, timings, kept if outputs else {})

    def _await(self, step: Step, state: _RunState) -> None:
        """Take the step's messages: its inputs (forward) or its outputs' gradients."""
        if not step.backward:
            for value in self.layout.reads[step.node]:
                state.value(value, self.layout)
            return
        for value in self.exits[step.node]:
            info = self.layout.values[value]
            total = state.grads.setdefault(value, {})
            for peer_grads in state.grad_inbox_take(value):
                for k, g in zip(info.grads, peer_grads, strict=True):
                    total[k] = total[k] + g if k in total else g

    def ping(self, src: int, dst: int, sizes: list[int], repeats: int) -> list[float]:
        """Round trips: ``sizes`` bytes from ``src`` to ``dst`` the way runs send them, then
        one byte back; ``src`` returns the seconds of each (size-major), the others nothing.

        Timed on one clock, so unlike one-way times they hold no barrier skew.
        """
        rank, tag = self.transport.rank, 0
        ack = torch.zeros(1, dtype=torch.uint8)
        times = []
        for size in sizes:
            payload = torch.ones(size, dtype=torch.uint8)
            for _ in range(repeats):
                tag += 2
                self.transport.barrier()
                if rank == src:
                    began = time.perf_counter()
                    self.transport.isend(_as_bytes(payload), dst, tag).wait()
                    self.transport.irecv(ack, dst, tag + 1).wait()
                    times.append(time.perf_counter() - began)
                elif rank == dst:
                    self.transport.irecv(payload, src, tag).wait()
                    self.transport.isend(ack, src, tag + 1).wait()
        return times

    # ----------------------------------------------------------------------- forward
    def _forward(self, step: Step, state: _RunState) -> None:
        env: dict[str, Any] = {}
        leaves: dict[str, Any] = {}
        mutated = self.layout.mutated[step.node]
        for value in self.layout.reads[step.node]:
            base = state.value(value, self.layout)
            if self.layout.training:
                base = leaves[value] = _leaves_for_grad(base, self.layout.values[value])
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
            env[name] = loaded.inputs[name] if node.op == "placeholder" else loaded.call(node, lookup)
            state.values[name] = env[name]
        if self.layout.training:
            state.saved[step.node] = (env, leaves)
        for message in step.sends:
            info = self.layout.values[message.value]
            state.send(self.transport, _flat(state.values[message.value]), message, info.tensors)

    # ---------------------------------------------------------------------- backward
    def _backward(self, step: Step, state: _RunState) -> None:
        env, inputs = state.saved.pop(step.node)
        tensors, grads = [], []
        for value in self.exits[step.node]:
            info = self.layout.values[value]
            leaves = _flat(env[value])
            total = state.grads.pop(value, {})
            for k in info.grads:
                if value in self.layout.outputs:
                    seed = torch.ones_like(leaves[k])
                    total[k] = total[k] + seed if k in total else seed
                if k in total and leaves[k].requires_grad:
                    tensors.append(leaves[k])
                    grads.append(total[k])
        if tensors:
            torch.autograd.backward(tensors, grads)
        for value in self.layout.reads[step.node]:
            info = self.layout.values[value]
            leaves = _flat(inputs[value])
            into = state.remote_grads if value in state.inbox.messages else state.grads
            total = into.setdefault(value, {})
            for k in info.grads:
                g = leaves[k].grad
                if g is None:
                    g = torch.zeros_like(leaves[k])
                total[k] = total[k] + g if k in total else g
        for message in step.sends:
            total = state.remote_grads.pop(message.value)
            info = self.layout.values[message.value]
            grads_out = [total[k] for k in info.grads]
            state.send(self.transport, grads_out, message, range(len(grads_out)))


@dataclass
class _RunState:
    """What one run of a plan holds on one device."""

    inbox: _Inbox
    grad_inbox: _Inbox
    values: dict[str, Any] = field(default_factory=dict)
    saved: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    grads: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict)
    remote_grads: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict)
    sent: list[Handle] = field(default_factory=list)
    _keep: list[torch.Tensor] = field(default_factory=list)

    def value(self, name: str, layout: Layout) -> Any:
        """A value computed here, or received (waiting for it the first time)."""
        if name not in self.values:
            message = self.inbox.messages[name]
            self.values[name] = _rebuild(layout.values[name], self.inbox.take(name, message.peer))
        return self.values[name]

    def grad_inbox_take(self, value: str) -> list[list[torch.Tensor]]:
        """Gradients of ``value`` from every device that read it."""
        return [
            self.grad_inbox.take(value, m.peer)
            for m in self.grad_inbox.grad_messages.get(value, ())
        ]

    def send(self, transport: Transport, leaves: list[Any], message: Message,
             which: Any) -> None:  # fmt: skip
        for k, tag in zip(which, message.tags, strict=True):
            payload = _as_bytes(leaves[k])
            self._keep.append(payload)
            self.sent.append(transport.isend(payload, message.peer, tag))


def _flat(value: Any) -> list[Any]:
    return tree_flatten(value)[0]


def _as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A private byte copy (later in-place ops on the source cannot race the send)."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8).clone()


def _rebuild(info: ValueInfo, tensors: list[torch.Tensor]) -> Any:
    received = dict(zip(info.tensors, tensors, strict=True))
    leaves = [
        received[k] if k in received
        else torch.empty(leaf.shape, dtype=leaf.dtype) if leaf.is_tensor
        else leaf.constant
        for k, leaf in enumerate(info.leaves)
    ]  # fmt: skip
    return info.unflatten(leaves)


def _leaves_for_grad(value: Any, info: ValueInfo) -> Any:
    """``value`` with every gradient-carrying tensor replaced by a fresh autograd leaf."""
    leaves, spec = tree_flatten(value)
    wanted = set(info.grads)
    fresh = [
        leaf.detach().requires_grad_(True) if k in wanted else leaf
        for k, leaf in enumerate(leaves)
    ]
    return spec.unflatten(fresh)


def _detached(x: Any) -> Any:
    return x.detach() if isinstance(x, torch.Tensor) else x


def _copy(value: Any) -> Any:
    """A copy of every tensor of ``value`` (differentiable: gradients reach the original)."""
    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, value)

