"""A traced module with real weights, ready to run node by node in one process.

The coordinator and every worker load the same :class:`~placerl.measure.source.ModelSource`
and trace it the same way, so fx node names agree across processes: plans name nodes, not
objects. :func:`reference_run` runs the whole program once on the CPU and keeps every value:
the constants a split program needs (``x.size(0)`` and other non-tensor results), the shape of
every value that may cross devices, and which tensors carry gradients.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils._pytree import tree_map

from placerl.graph.torch_import import Program, import_module
from placerl.measure.source import ModelSource

__all__ = ["LoadedProgram", "load_program", "reference_run"]

_COMPUTE = ("call_function", "call_method", "call_module")


@dataclass
class LoadedProgram:
    """A program traced in this process, with real weights on ``device``.

    Attributes:
        program: The traced program.
        nodes: Its fx nodes by name.
        state: Value of every parameter, buffer and constant node, by fx name (trainable
            parameters require gradients in training graphs).
        inputs: Value of every user input placeholder, by fx name.
        trainable: Every parameter backward computes a gradient for, by name (placeholders
            of an exported program; leaf modules' own parameters at module granularity).
        device: Where the weights and inputs are.
        training: Whether the graph is a training graph.
        names: Imported graph node name of each fx node that became a graph node.
        signature: A hash of the node names and ops, to check that processes traced alike.
    """

    program: Program
    nodes: Mapping[str, fx.Node]
    state: dict[str, Any]
    inputs: dict[str, Any]
    trainable: dict[str, torch.Tensor]
    device: torch.device
    training: bool
    names: dict[str, str]
    signature: str
    _interpreter: fx.Interpreter

    @property
    def module(self) -> fx.GraphModule:
        """The graph module whose weights this program runs with."""
        return self._interpreter.module

    def call(self, node: fx.Node, lookup: Callable[[fx.Node], Any]) -> Any:
        """Run one compute node, reading its arguments through ``lookup``."""
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lookup)
        args, kwargs = tree_map(self._here, (args, kwargs))
        return getattr(self._interpreter, node.op)(node.target, args, kwargs)

    def _here(self, value: Any) -> Any:
        # Devices baked into the trace (zeros(..., device=cpu)) become the device run on.
        return self.device if isinstance(value, torch.device) else value


def load_program(source: ModelSource, device: str | torch.device = "cpu") -> LoadedProgram:
    """Build the module of ``source``, trace it, and put its weights and inputs on ``device``."""
    device = torch.device(device)
    module, inputs = source.load()
    imported = import_module(
        module, inputs, training=source.training, granularity=source.granularity
    )
    program = imported.program
    graph_module = program.module_on(device)
    graph_module.train(source.training)
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    values = dict(zip(placeholders, program.placeholders(device), strict=True))
    state, user = {}, {}
    for node in program.graph.nodes:
        if node.op == "get_attr":
            state[node.name] = fx.Interpreter(graph_module).fetch_attr(node.target)
        elif node.op == "placeholder" and node in program.inputs:
            user[node.name] = values[node]
        elif node.op == "placeholder":
            state[node.name] = _trainable(program, node, values[node], source.training)
    interpreter = fx.Interpreter(graph_module)
    trainable = {
        name: t for name, t in state.items() if isinstance(t, torch.Tensor) and t.requires_grad
    }
    if source.training:
        trainable.update((n, p) for n, p in graph_module.named_parameters() if p.requires_grad)
    return LoadedProgram(
        program=program,
        nodes={n.name: n for n in program.graph.nodes},
        state=state,
        inputs=user,
        trainable=trainable,
        device=device,
        training=source.training,
        names={node.name: name for node, name in imported.names.items()},
        signature=_signature(program.graph),
        _interpreter=interpreter,
    )


def _trainable(program: Program, node: fx.Node, value: Any, training: bool) -> Any:
    """A parameter of a training graph requires gradients, so backward computes them."""
    name = program.state_nodes.get(node)
    if training and name is not None and program.state[name].trainable:
        return value.detach().requires_grad_(True)
    return value


def _signature(graph: fx.Graph) -> str:
    text = "\n".join(f"{n.name}:{n.op}:{n.target}" for n in graph.nodes)
    return hashlib.sha256(text.encode()).hexdigest()


def reference_run(loaded: LoadedProgram) -> dict[str, Any]:
    """Run every node once, in program order; returns each node's value by fx name."""
    values: dict[str, Any] = {**loaded.state, **loaded.inputs}
    with torch.set_grad_enabled(loaded.training):
        for node in loaded.program.graph.nodes:
            if node.op in _COMPUTE:
                values[node.name] = loaded.call(node, lambda a: values[a.name])
    return values
