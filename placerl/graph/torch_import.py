"""Import a ``torch.nn.Module`` as a cost-annotated :class:`~placerl.graph.CompGraph`.

:func:`from_module` traces the module, runs the trace node by node on the ``meta`` device (no
real compute, so a 110M-parameter model imports in seconds) and turns every op into a node:

* ``granularity="op"``: one node per ATen op of :func:`torch.export.export`'s graph. Tuple
  unpacking is folded into its producer; ops whose result nobody uses (BatchNorm's
  ``num_batches_tracked`` counter) are dropped.
* ``granularity="module"``: one node per call of a leaf module (a module without children) and
  per function or tensor method called outside leaf modules, through :mod:`torch.fx`. Leaf
  modules stay opaque, so code that torch.export cannot trace inside them still imports; a leaf
  that cannot run on ``meta`` tensors makes the import run on the example inputs for real.

Per node:

* ``attrs["flops"]``: counted by :class:`torch.utils.flop_counter.FlopCounterMode` around the
  node, so the nodes add up to torch's own count on the whole model (:func:`model_flops`).
* ``out_bytes``: bytes of the node's output tensors (all of them for tuple outputs); each edge
  carries the bytes of the outputs its consumer reads.
* ``mem_bytes``: parameters and buffers, counted at the first node that reads them. When
  ``training``, every trainable parameter counts ``2 + OPTIMIZER_STATES`` times (weights,
  gradients, Adam's two moments) and each node keeps the tensors it materialises (its
  ``out_bytes``) as activations saved for backward.
* ``cost`` and ``costs``: a roofline estimate, ``max(flops / peak, bytes / bandwidth)`` plus
  the launch overhead of :mod:`placerl.devices`, where bytes are the activations read,
  the weights read and the output written. ``cost`` is on the reference device (a V100);
  ``costs[kind]`` assume the device of :data:`placerl.devices.KIND_DEVICES`. Ops
  that only make a view (reshape, transpose, split) cost nothing, as do the input nodes.

Names keep the module path: ``layer3.2.conv1`` for a leaf module, ``layer3.2.conv1/conv2d``
for an op inside it, ``layer3.2/add`` for an op in a parent's ``forward``; repeats get ``_1``,
``_2``, ... The model's tensor inputs become nodes of op ``input``.

Example:
    >>> import torch
    >>> from placerl.graph.torch_import import from_module
    >>> g = from_module(torch.nn.Linear(8, 4), (torch.randn(2, 8),))
    >>> g.names
    ('input', 'linear')
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import logging
import operator
import os
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx, nn
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.flop_counter import FlopCounterMode

from placerl._registry import Registry
from placerl.devices import KIND_DEVICES, kind_costs, roofline_cost
from placerl.errors import ConfigError, GraphError
from placerl.graph.core import CompGraph
from placerl.graph.passes import _unique

__all__ = [
    "GRANULARITIES",
    "OPTIMIZER_STATES",
    "Imported",
    "NodeFailure",
    "NodeRecord",
    "Program",
    "from_module",
    "import_module",
    "measure",
    "model_flops",
    "output_ancestors",
    "run_program",
    "trace",
    "train_mode",
]

#: Optimizer tensors kept per trainable parameter when training (Adam's two moments).
OPTIMIZER_STATES = 2


# ------------------------------------------------------------------------ traced programs
@dataclass(frozen=True)
class StateTensor:
    """A parameter, buffer or constant the model reads."""

    nbytes: int
    numel: int
    trainable: bool


@dataclass
class Program:
    """A traced module, ready to run node by node on a device.

    Attributes:
        graph: The traced graph.
        state: Every parameter, buffer and constant, by canonical name (tied weights: one).
        reads: Canonical names of the state each compute node reads.
        scopes: Module path of each compute node (``""``: the root module).
        descriptions: ``(op, target, name)`` of each compute node.
        inputs: The placeholders that are the model's own inputs.
        module_on: ``device -> graph module`` whose weights live on that device.
        placeholders: ``device -> values`` of the graph's placeholders, in order.
        state_nodes: Canonical state name of each placeholder or ``get_attr`` node that
            reads a parameter, buffer or constant.
    """

    graph: fx.Graph
    state: dict[str, StateTensor]
    reads: dict[fx.Node, list[str]]
    scopes: dict[fx.Node, str]
    descriptions: dict[fx.Node, tuple[str, str, str]]
    inputs: list[fx.Node]
    module_on: Callable[[torch.device], fx.GraphModule]
    placeholders: Callable[[torch.device], list[Any]]
    state_nodes: dict[fx.Node, str]


TraceFn = Callable[[nn.Module, tuple[Any, ...]], Program]
#: How each granularity traces a module: ``fn(module, args) -> Program``.
GRANULARITIES: Registry[TraceFn] = Registry("granularity")


def trace(module: nn.Module, args: tuple[Any, ...], granularity: str = "op") -> Program:
    """Trace ``module`` on ``args`` at ``granularity`` (a :data:`GRANULARITIES` name)."""
    return GRANULARITIES[granularity](module, args)


def _state_of(module: nn.Module) -> tuple[dict[str, StateTensor], dict[str, str]]:
    """Parameters and buffers by first name, and every name -> its first name."""
    first: dict[int, str] = {}
    canonical: dict[str, str] = {}
    state: dict[str, StateTensor] = {}
    named = itertools.chain(
        module.named_parameters(remove_duplicate=False),
        module.named_buffers(remove_duplicate=False),
    )
    for name, tensor in named:
        canonical[name] = first.setdefault(id(tensor), name)
        if canonical[name] == name:
            trainable = isinstance(tensor, nn.Parameter) and tensor.requires_grad
            state[name] = StateTensor(_nbytes(tensor), tensor.numel(), trainable)
    return state, canonical


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return target._opname
    return getattr(target, "__name__", str(target))


def _target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return f"{getattr(target, '__module__', None) or 'builtins'}.{_op_name(target)}"


def _scope_of(node: fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    return next(reversed(stack.values()))[0] if stack else ""


def _qualified(scope: str, op: str) -> str:
    return f"{scope}/{op}" if scope else op


@GRANULARITIES.decorator("op")
def trace_ops(module: nn.Module, args: tuple[Any, ...]) -> Program:
    """One node per ATen op, through :func:`torch.export.export` (non-strict)."""
    with _quiet_export():
        try:
            exported = torch.export.export(module, args)
        except Exception as err:  # torch raises many types; all mean "cannot trace"
            raise _untraceable(module, err, "op") from None
    signature = exported.graph_signature
    state_names = {
        **signature.inputs_to_parameters,
        **signature.inputs_to_buffers,
        **signature.inputs_to_lifted_tensor_constants,
    }
    state, canonical = _state_of(module)
    graph = exported.graph_module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    state_nodes: dict[fx.Node, str] = {}
    for node in placeholders:
        if node.name in state_names:
            name = canonical.get(state_names[node.name], state_names[node.name])
            state_nodes[node] = name
            if name not in state:  # a lifted constant
                val = node.meta["val"]
                state[name] = StateTensor(_nbytes(val), val.numel(), trainable=False)
    reads, scopes, descriptions = {}, {}, {}
    for node in graph.nodes:
        if node.op == "call_function":
            reads[node] = [state_nodes[a] for a in node.all_input_nodes if a in state_nodes]
            scopes[node] = _scope_of(node)
            op = _op_name(node.target)
            descriptions[node] = (op, _target_name(node.target), _qualified(scopes[node], op))

    def values(device: torch.device) -> list[Any]:
        weights = {**exported.state_dict, **exported.constants}
        user = iter(tree_leaves(args))
        return [
            _on_device(
                weights[state_names[n.name]] if n.name in state_names else next(user),
                device,
                like=n.meta.get("val"),
            )
            for n in placeholders
        ]

    return Program(
        graph=graph,
        state=state,
        reads=reads,
        scopes=scopes,
        descriptions=descriptions,
        inputs=[n for n in placeholders if n.name in signature.user_inputs],
        module_on=lambda device: exported.graph_module,
        placeholders=values,
        state_nodes=state_nodes,
    )


class _LeafTracer(fx.Tracer):
    """Symbolic tracer that keeps every module without children opaque."""

    proxy_buffer_attributes = True  # buffers become get_attr nodes, like parameters

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return not any(m.children())


@GRANULARITIES.decorator("module")
def trace_modules(module: nn.Module, args: tuple[Any, ...]) -> Program:
    """One node per leaf-module call and per function outside leaves, through torch.fx."""
    try:
        graph = _LeafTracer().trace(module)
    except Exception as err:  # TraceError, TypeError on a Proxy, ...
        raise _untraceable(module, err, "module") from None
    state, canonical = _state_of(module)
    reads, scopes, descriptions, state_nodes = {}, {}, {}, {}
    for node in graph.nodes:
        if node.op == "get_attr":
            state_nodes[node] = canonical.get(node.target, node.target)
        if node.op == "call_module":
            leaf = module.get_submodule(node.target)
            own = itertools.chain(leaf.named_parameters(), leaf.named_buffers())
            reads[node] = [canonical[f"{node.target}.{name}"] for name, _ in own]
            scopes[node] = node.target
            cls = type(leaf)
            descriptions[node] = (cls.__name__, f"{cls.__module__}.{cls.__qualname__}", node.target)
        elif node.op in ("call_function", "call_method"):
            attrs = [a.target for a in node.all_input_nodes if a.op == "get_attr"]
            for name in attrs:
                if name not in canonical:  # a plain tensor attribute
                    tensor = _fetch(module, name)
                    canonical[name] = name
                    state[name] = StateTensor(_nbytes(tensor), tensor.numel(), trainable=False)
            reads[node] = [canonical[name] for name in attrs]
            scopes[node] = _scope_of(node)
            is_function = node.op == "call_function"
            op = _op_name(node.target) if is_function else node.target
            target = _target_name(node.target) if is_function else f"torch.Tensor.{op}"
            descriptions[node] = (op, target, _qualified(scopes[node], op))

    return Program(
        graph=graph,
        state=state,
        reads=reads,
        scopes=scopes,
        descriptions=descriptions,
        inputs=[n for n in graph.nodes if n.op == "placeholder"],
        module_on=lambda device: fx.GraphModule(_module_on(module, device), graph),
        placeholders=lambda device: [_on_device(a, device) for a in args],
        state_nodes=state_nodes,
    )


def _fetch(module: nn.Module, target: str) -> Any:
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _on_device(value: Any, device: torch.device, like: Any = None) -> Any:
    """A fresh copy of ``value`` on ``device``; on ``meta``, an empty tensor shaped ``like``."""
    if device.type == "meta" and isinstance(like, torch.Tensor):
        return torch.empty_strided(like.shape, like.stride(), dtype=like.dtype, device="meta")
    if not isinstance(value, torch.Tensor):
        return value
    if value.device.type == "meta" and device.type != "meta":
        raise GraphError(
            f"cannot run on {device}: the module's weights or inputs are on the meta device "
            "and hold no data; build the module on a real device"
        )
    return value.detach().to(device, copy=True)


def _module_on(module: nn.Module, device: torch.device) -> nn.Module:
    """A copy of ``module`` whose parameters and buffers are fresh tensors on ``device``."""
    memo: dict[int, Any] = {}
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        moved = _on_device(tensor, device)
        if isinstance(tensor, nn.Parameter):
            moved = nn.Parameter(moved, requires_grad=tensor.requires_grad)
        memo[id(tensor)] = moved
    return copy.deepcopy(module, memo)


# ------------------------------------------------------------------------- running nodes
#: ``hook(node, call, args, kwargs) -> value`` runs one compute node (``call(args, kwargs)``).
NodeHook = Callable[[fx.Node, Callable[[tuple, dict], Any], tuple, dict], Any]
_COMPUTE = ("call_function", "call_method", "call_module")


class NodeFailure(Exception):
    """A node raised while running; carries the node for the error message."""

    def __init__(self, node: fx.Node, error: Exception) -> None:
        super().__init__(f"{node.name}: {error}")
        self.node, self.error = node, error


class _HookedInterpreter(fx.Interpreter):
    """Runs a graph module on one device, passing each compute node (not tuple unpacking)
    through a hook. Device arguments baked into the trace (``zeros(..., device=cpu)``) are
    replaced by the device it runs on."""

    def __init__(self, module: fx.GraphModule, hook: NodeHook, device: torch.device) -> None:
        super().__init__(module)
        self.hook, self.device = hook, device

    def run_node(self, n: fx.Node) -> Any:
        if n.op not in _COMPUTE or self._unpacks(n):
            return super().run_node(n)
        args, kwargs = tree_map(self._on_this_device, self.fetch_args_kwargs_from_env(n))
        return self.hook(n, lambda a, k: getattr(self, n.op)(n.target, a, k), args, kwargs)

    def _on_this_device(self, value: Any) -> Any:
        return self.device if isinstance(value, torch.device) else value

    def _unpacks(self, n: fx.Node) -> bool:
        return n.target is operator.getitem and isinstance(self.env.get(n.args[0]), (tuple, list))


def run_program(program: Program, device: torch.device, hook: NodeHook) -> list[Any]:
    """Run every compute node of ``program`` on ``device`` through ``hook``.

    Returns:
        The placeholder values it ran on.
    """
    values = program.placeholders(device)
    _HookedInterpreter(program.module_on(device), hook, device).run(*values)
    return values


@dataclass(frozen=True)
class NodeRecord:
    """What running one node tells about it: FLOPs and its output tensors."""

    flops: int
    out_bytes: int
    shapes: list[list[int]]
    dtypes: list[str]
    view: bool


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _nbytes(value: Any) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(value))


def _is_view(value: Any, args: tuple, kwargs: dict) -> bool:
    """True if every output tensor is a view of an input (a reshape, a transpose, a split)."""
    inputs = _tensors((args, kwargs))
    bases = {id(t if t._base is None else t._base) for t in inputs}
    outputs = _tensors(value)
    return bool(outputs) and all(
        t._base is not None and id(t._base) in bases and not any(t is i for i in inputs)
        for t in outputs
    )


def _record(value: Any, flops: int = 0, args: tuple = (), kwargs: dict | None = None) -> NodeRecord:
    tensors = _tensors(value)
    return NodeRecord(
        flops=int(flops),
        out_bytes=_nbytes(tensors),
        shapes=[list(t.shape) for t in tensors],
        dtypes=[str(t.dtype).removeprefix("torch.") for t in tensors],
        view=_is_view(value, args, kwargs or {}),
    )


def measure(program: Program, device: torch.device) -> dict[fx.Node, NodeRecord]:
    """Run ``program`` on ``device``, recording each compute node's FLOPs and outputs.

    Raises:
        NodeFailure: A node raised; the error names it.
    """
    records: dict[fx.Node, NodeRecord] = {}

    def count(node: fx.Node, call: Callable[[tuple, dict], Any], args: tuple, kwargs: dict):
        try:
            with FlopCounterMode(display=False) as counter:
                value = call(args, kwargs)
        except Exception as err:
            raise NodeFailure(node, err) from err
        records[node] = _record(value, counter.get_total_flops(), args, kwargs)
        return value

    with torch.no_grad():
        values = run_program(program, device, count)
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, values, strict=True):
        if node in program.inputs:
            records[node] = _record(value)
    return records


# -------------------------------------------------------------------------- the graph
def output_ancestors(graph: fx.Graph) -> set[fx.Node]:
    """The nodes the graph's output depends on."""
    output = next(n for n in graph.nodes if n.op == "output")
    live: set[fx.Node] = set()
    stack = [output]
    while stack:
        for parent in stack.pop().all_input_nodes:
            if parent not in live:
                live.add(parent)
                stack.append(parent)
    return live


class _GraphBuilder:
    """Turns a measured program into CompGraph nodes and edges, in definition order."""

    def __init__(self, program: Program, records: dict[fx.Node, NodeRecord], training: bool):
        self.program, self.records, self.training = program, records, training
        self.names: dict[fx.Node, str] = {}
        self.stored: set[str] = set()  # state already counted in some node's mem_bytes

    def build(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        nodes: list[dict[str, Any]] = []
        edges: list[dict[str, Any]] = []
        taken: set[str] = set()
        for node in self._live_nodes():
            op, target, base = self.program.descriptions.get(node, ("input", "input", node.name))
            self.names[node] = name = _unique(base, taken)
            inputs = self._inputs_of(node)
            edges += [
                {"src": self.names[src], "dst": name, "bytes": nbytes}
                for src, nbytes in inputs.items()
            ]
            nodes.append(self._node(node, name, op, target, sum(inputs.values())))
        return nodes, edges

    def _producer(self, node: fx.Node) -> fx.Node:
        """The recorded node whose output ``node`` is (itself, or the tuple it unpacks)."""
        while node not in self.records and node.target is operator.getitem:
            node = node.args[0]
        return node

    def _live_nodes(self) -> list[fx.Node]:
        """Recorded tensor-valued nodes the output depends on, in definition order.

        Nodes that make no tensor (``x.shape``, ``x.size(1)``) carry no data and are left out.
        """
        live = output_ancestors(self.program.graph)
        return [
            n
            for n in self.program.graph.nodes
            if n in live and n in self.records and self.records[n].shapes
        ]

    def _inputs_of(self, node: fx.Node) -> dict[fx.Node, int]:
        """Producers of ``node`` with the bytes it reads from each."""
        read: dict[fx.Node, set[fx.Node]] = {}
        for arg in node.all_input_nodes:
            source = self._producer(arg)
            if source in self.names:
                read.setdefault(source, set()).add(arg)
        return {
            src: min(self.records[src].out_bytes, sum(self._value_bytes(v) for v in values))
            for src, values in read.items()
        }

    def _value_bytes(self, node: fx.Node) -> int:
        if node in self.records:
            return self.records[node].out_bytes
        return _nbytes(node.meta.get("val"))

    def _stored_here(self, node: fx.Node) -> tuple[int, int]:
        """(resident bytes, parameters) of the state ``node`` is the first to read."""
        fresh = [s for s in dict.fromkeys(self.program.reads.get(node, ())) if s not in self.stored]
        self.stored.update(fresh)
        tensors = [self.program.state[s] for s in fresh]
        copies = 2 + OPTIMIZER_STATES if self.training else 1
        nbytes = sum(t.nbytes * (copies if t.trainable else 1) for t in tensors)
        return nbytes, sum(t.numel for t in tensors if t.trainable)

    def _node(self, node: fx.Node, name: str, op: str, target: str, read: int) -> dict[str, Any]:
        record = self.records[node]
        state_bytes, params = self._stored_here(node)
        weights = sum(self.program.state[s].nbytes for s in self.program.reads.get(node, ()))
        touched = read + weights + record.out_bytes
        free = record.view or node in self.program.inputs
        saved = record.out_bytes if self.training and not record.view else 0
        costs = dict.fromkeys(KIND_DEVICES, 0.0) if free else kind_costs(record.flops, touched)
        return {
            "name": name,
            "op": op,
            "cost": 0.0 if free else roofline_cost(record.flops, touched),
            "costs": costs,
            "out_bytes": record.out_bytes,
            "mem_bytes": state_bytes + saved,
            "attrs": {
                "flops": record.flops,
                "bytes": 0 if free else touched,
                "module": self.program.scopes.get(node, ""),
                "target": target,
                "params": params,
                "shapes": record.shapes,
                "dtypes": record.dtypes,
            },
        }


# ------------------------------------------------------------------------ entry points
def from_module(
    module: nn.Module,
    example_inputs: Any,
    *,
    training: bool = False,
    granularity: str = "op",
    name: str | None = None,
) -> CompGraph:
    """Trace ``module`` on ``example_inputs`` into a cost-annotated CompGraph.

    Args:
        module: The model. Its weights may live on ``meta`` (nothing is computed for real).
        example_inputs: The positional arguments of ``forward``: a tuple, or one tensor.
        training: Trace in training mode (dropout, batch statistics) and count gradients,
            optimizer state and saved activations in ``mem_bytes``. Add backward nodes with
            :func:`placerl.graph.passes.with_backward`.
        granularity: ``"op"`` (torch.export, one node per ATen op) or ``"module"`` (torch.fx,
            one node per leaf-module call); see :data:`GRANULARITIES`.
        name: Graph name (default: the module's class name).

    Returns:
        The graph; ``meta`` holds ``source="torch"``, ``model``, ``params``, ``training``,
        ``granularity``, ``flops`` (the total) and the ``torch`` version.

    Raises:
        GraphError: ``module`` is not an ``nn.Module``, ``example_inputs`` is empty or holds no
            tensor, the module cannot be traced (the message names the construct and where it
            is), or the trace has no op to place.
        ConfigError: Unknown granularity, ``training`` not a boolean, or ``name`` not a
            non-empty string or ``None``.
    """
    return import_module(
        module, example_inputs, training=training, granularity=granularity, name=name
    ).graph


@dataclass(frozen=True)
class Imported:
    """An imported module: the graph, and the traced program it came from.

    Attributes:
        graph: What :func:`from_module` returns.
        program: The traced program (to run the same nodes again, e.g. to profile them).
        names: Graph node name of each traced node that became a graph node.
    """

    graph: CompGraph
    program: Program
    names: Mapping[fx.Node, str]


def import_module(
    module: nn.Module,
    example_inputs: Any,
    *,
    training: bool = False,
    granularity: str = "op",
    name: str | None = None,
) -> Imported:
    """:func:`from_module`, also returning the traced program (same arguments)."""
    module = _check_module(module)
    args = _check_inputs(example_inputs)
    trace_fn = GRANULARITIES[granularity]
    _check_training(training)
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError(f"name must be a non-empty string or None, got {name!r}")
    with train_mode(module, training):
        program = trace_fn(module, args)
        records = _measure_with_fallback(module, program, args, granularity)
    builder = _GraphBuilder(program, records, training)
    nodes, edges = builder.build()
    label = name or type(module).__name__
    if all(n["op"] == "input" for n in nodes):
        raise GraphError(
            f"{label} has no op to place: its forward() computes nothing from its inputs"
        )
    meta = {
        "source": "torch",
        "model": type(module).__name__,
        "params": sum(p.numel() for p in module.parameters()),
        "training": bool(training),
        "granularity": granularity,
        "flops": sum(n["attrs"]["flops"] for n in nodes),
        "torch": torch.__version__,
    }
    graph = CompGraph(nodes, edges, name=label, meta=meta)
    return Imported(graph, program, dict(builder.names))


def model_flops(module: nn.Module, example_inputs: Any, *, training: bool = False) -> int:
    """FLOPs of one forward pass by torch's own counter, on ``meta`` copies (no compute)."""
    module = _check_module(module)
    _check_training(training)
    args = tuple(_on_device(a, torch.device("meta"), like=a) for a in _check_inputs(example_inputs))
    meta_module = _module_on(module, torch.device("meta"))
    counter = FlopCounterMode(display=False)
    with train_mode(meta_module, training), torch.no_grad(), counter:
        meta_module(*args)
    return int(counter.get_total_flops())


def _measure_with_fallback(
    module: nn.Module, program: Program, args: tuple, granularity: str
) -> dict[fx.Node, NodeRecord]:
    """Measure on ``meta``; at module granularity, on the inputs' device if meta fails."""
    try:
        return measure(program, torch.device("meta"))
    except NodeFailure as failure:
        if granularity != "module":
            raise _node_error(module, failure, "meta") from None
    device = _tensors(args)[0].device
    try:
        return measure(program, device)
    except NodeFailure as failure:
        raise _node_error(module, failure, str(device)) from None


def _node_error(module: nn.Module, failure: NodeFailure, device: str) -> GraphError:
    node = failure.node
    return GraphError(
        f"{type(module).__name__}: node {node.name!r} ({node.target}) failed on {device} "
        f"tensors: {type(failure.error).__name__}: {_first_line(failure.error)}"
    )


def _check_module(module: Any) -> nn.Module:
    if not isinstance(module, nn.Module):
        raise GraphError(f"expected a torch.nn.Module, got {type(module).__name__}")
    return module


def _check_training(training: Any) -> None:
    # bool("false") is True: a string here would silently trace in training mode.
    if not isinstance(training, bool):
        raise ConfigError(f"training must be True or False, got {training!r}")


def _check_inputs(example_inputs: Any) -> tuple[Any, ...]:
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    if not isinstance(example_inputs, tuple):
        raise GraphError(
            "example_inputs must be a tensor or a tuple of forward()'s positional arguments, "
            f"got {type(example_inputs).__name__}"
        )
    if not example_inputs:
        raise GraphError(
            "example_inputs is empty: pass forward()'s positional arguments, "
            "e.g. (torch.randn(1, 3, 224, 224),)"
        )
    if not _tensors(example_inputs):
        raise GraphError("example_inputs holds no tensor: forward() needs at least one")
    return example_inputs


@contextlib.contextmanager
def train_mode(module: nn.Module, training: bool) -> Iterator[None]:
    """Put ``module`` in train or eval mode, then restore every submodule's own mode."""
    modes = [(m, m.training) for m in module.modules()]
    module.train(training)
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    """Silence torch.export's chatter (partial graphs on stderr, shape-guard logs)."""
    logger = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    disabled, logger.disabled = logger.disabled, True
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.disabled = disabled


# ------------------------------------------------------------------- untraceable modules
#: What a tracing error means, recognised by exception class or message fragment.
_CONSTRUCTS: tuple[tuple[str, str], ...] = (
    (
        "GuardOnDataDependentSymNode",
        "data-dependent control flow (a Python branch, loop or int() on a tensor's value)",
    ),
    ("TraceError", "Python control flow on a traced tensor"),
    ("Proxy", "a traced tensor used where Python needs a real value (int(), len(), numpy)"),
    (".numpy()", "a tensor converted to numpy"),
    ("UserError", "a construct torch.export does not support"),
)

_HINTS = {
    "op": 'Import it with granularity="module" (leaf modules stay opaque) or express the '
    "branch with torch.where / torch.cond.",
    "module": "Move the construct into a leaf module (a module without children), or express "
    "it with torch.where / torch.cond.",
}


def _untraceable(module: nn.Module, err: Exception, granularity: str) -> GraphError:
    classes = {cls.__name__ for cls in type(err).__mro__}
    what = next(
        (text for key, text in _CONSTRUCTS if key in classes or key in str(err)),
        "a construct the tracer cannot follow",
    )
    return GraphError(
        f"cannot trace {type(module).__name__} at granularity {granularity!r}: {what}"
        f"{_user_line(err)} ({type(err).__name__}: {_first_line(err)}). {_HINTS[granularity]}"
    )


def _user_line(err: Exception) -> str:
    """`` at file:line in function: `code` `` for the innermost frame outside torch."""
    torch_dir = os.path.dirname(torch.__file__)
    frames = [
        f
        for f in traceback.extract_tb(err.__traceback__)
        if not f.filename.startswith((torch_dir, "<")) and f.filename != __file__
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f" at {frame.filename}:{frame.lineno} in {frame.name}: `{(frame.line or '').strip()}`"


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
