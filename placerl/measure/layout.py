"""Which graph node computes each traced value, and which values cross between graph nodes.

A :class:`Layout` ties a traced program to the graph being placed (imported, coarsened, or
with backward nodes): every fx compute node belongs to one forward graph node (tuple
unpacking belongs to its producer), parameters are in every process, and values without
tensors (``x.size(0)``) are constants of the trace. It does not depend on the placement, so it
is built once per graph and sent to every worker.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import fx
from torch.utils._pytree import tree_flatten, treespec_dumps, treespec_loads

from placerl.errors import GraphError
from placerl.graph import CompGraph
from placerl.graph.torch_import import output_ancestors
from placerl.measure.program import LoadedProgram

__all__ = ["Layout", "LeafInfo", "ValueInfo"]

_COMPUTE = ("call_function", "call_method", "call_module")
#: Non-tensor values a split program may pass between processes as constants.
_CONSTANT_TYPES = (
    int,
    float,
    bool,
    complex,
    str,
    bytes,
    type(None),
    torch.Size,
    torch.dtype,
    torch.device,
    torch.memory_format,
    torch.layout,
    slice,
    type(Ellipsis),
)


@dataclass(frozen=True)
class LeafInfo:
    """One leaf of a value: a tensor (shape, dtype, gradient) or a constant."""

    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    requires_grad: bool = False
    constant: Any = None

    @property
    def is_tensor(self) -> bool:
        """True for a tensor leaf."""
        return self.dtype is not None

    @property
    def nbytes(self) -> int:
        """Bytes of a tensor leaf (0 for a constant)."""
        if self.dtype is None:
            return 0
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class ValueInfo:
    """The structure of a value that crosses graph nodes: a pytree of leaves.

    Attributes:
        spec: The pytree structure, serialized (``treespec_dumps``) so that it pickles alike
            in every torch version.
        leaves: One entry per leaf.
    """

    spec: str
    leaves: tuple[LeafInfo, ...]

    def unflatten(self, leaves: list[Any]) -> Any:
        """The value with these leaves."""
        return treespec_loads(self.spec).unflatten(leaves)

    @property
    def tensors(self) -> list[int]:
        """Indices of the tensor leaves that hold data (empty tensors travel as shapes)."""
        return [i for i, leaf in enumerate(self.leaves) if leaf.is_tensor and leaf.nbytes]

    @property
    def grads(self) -> list[int]:
        """Indices of the tensor leaves that carry gradients back."""
        return [i for i, leaf in enumerate(self.leaves) if leaf.requires_grad]


@dataclass(frozen=True)
class Layout:
    """A traced program laid over a graph's forward nodes.

    Attributes:
        signature: The program's signature (workers check theirs against it).
        members: Per forward graph node, its fx compute nodes (and input placeholders) in
            program order.
        reads: Per forward graph node, the values of other graph nodes it reads.
        mutated: Per forward graph node, the values it reads that one of its ops may change
            in place (it gets its own copy: the producer and other readers keep theirs).
        owner: Forward graph node of every value that crosses graph nodes, by fx name.
        values: Structure of every value that crosses graph nodes or is a graph output.
        constants: Values without tensors that some compute node reads, by fx name.
        outputs: The values the program returns.
        forward: Indices of the forward graph nodes.
        backward: Per forward graph node (in ``forward`` order), its backward node or -1.
        training: Whether the graph has backward nodes.
    """

    signature: str
    members: tuple[tuple[str, ...], ...]
    reads: tuple[tuple[str, ...], ...]
    mutated: tuple[frozenset[str], ...]
    owner: dict[str, int]
    values: dict[str, ValueInfo]
    constants: dict[str, Any]
    outputs: tuple[str, ...]
    forward: np.ndarray
    backward: np.ndarray
    training: bool

    @classmethod
    def build(
        cls, graph: CompGraph, loaded: LoadedProgram, values: dict[str, Any], names: dict[str, str]
    ) -> Layout:
        """Lay ``loaded`` over ``graph``.

        Args:
            graph: The graph to place.
            loaded: The program, traced in this process.
            values: Every node's value from :func:`~placerl.measure.program.reference_run`.
            names: Imported graph node name of each fx node that became a graph node.

        Raises:
            GraphError: ``graph`` does not match the program (nodes, or backward nodes on a
                trace that is not a training trace), a value that crosses graph nodes holds
                something that cannot move between devices, or an op writes in place into a
                value and nothing reads its result (the import drops it); names the node.
        """
        forward, backward = _forward_and_backward(graph)
        has_backward = bool((backward >= 0).any())
        if has_backward and not loaded.training:
            raise GraphError(
                f"graph {graph.name!r} has backward nodes but was traced for inference: import "
                "it with training=True before with_backward, so gradients exist to measure"
            )
        if has_backward and (backward < 0).any():
            v = graph.names[forward[int(np.flatnonzero(backward < 0)[0])]]
            raise GraphError(f"forward node {v!r} of {graph.name!r} has no backward node")
        node_of = _node_of_name(graph, forward, set(names.values()))
        program = loaded.program.graph
        live = output_ancestors(program)
        members: list[list[str]] = [[] for _ in forward]
        part: dict[str, int] = {}  # fx name -> index into forward, for computed values
        constants: dict[str, Any] = {}
        for node in program.nodes:
            if node.name in names:
                part[node.name] = node_of[names[node.name]]
            elif _unpacks(node, part, values):
                part[node.name] = part[node.args[0].name]
            elif node.op in _COMPUTE and node in live:
                constants[node.name] = _constant(node, values[node.name])
                continue
            else:
                continue
            members[part[node.name]].append(node.name)
        module = loaded.module
        _check_no_lost_writes(program, live, part, module)
        reads: list[dict[str, None]] = [{} for _ in forward]
        mutated: list[set[str]] = [set() for _ in forward]
        for node in program.nodes:
            if node.name not in part:
                continue
            for arg in node.all_input_nodes:
                if arg.name in part and part[arg.name] != part[node.name]:
                    reads[part[node.name]][arg.name] = None
                    if _may_mutate(node, arg, module):
                        mutated[part[node.name]].add(arg.name)
        output = next(n for n in program.nodes if n.op == "output")
        outputs = tuple(a.name for a in output.all_input_nodes if a.name in part)
        crossing = {name for r in reads for name in r} | set(outputs)
        return cls(
            signature=loaded.signature,
            members=tuple(tuple(m) for m in members),
            reads=tuple(tuple(r) for r in reads),
            mutated=tuple(frozenset(m) for m in mutated),
            owner={name: part[name] for name in crossing},
            values={name: _value_info(loaded.nodes[name], values[name]) for name in crossing},
            constants=constants,
            outputs=outputs,
            forward=forward,
            backward=backward,
            training=has_backward,
        )


def _forward_and_backward(graph: CompGraph) -> tuple[np.ndarray, np.ndarray]:
    """Forward node indices, and each one's backward node (-1 where it has none)."""
    is_backward = graph.arrays.backward
    forward = np.flatnonzero(~is_backward)
    position = {graph.names[v]: i for i, v in enumerate(forward)}
    backward = np.full(forward.size, -1, dtype=np.int64)
    for v in np.flatnonzero(is_backward):
        of = graph.nodes[v].attrs.get("forward")
        if of not in position:
            raise GraphError(
                f"backward node {graph.names[v]!r} names no forward node of {graph.name!r} "
                "(attrs['forward']); build training graphs with placerl.graph.passes.with_backward"
            )
        if backward[position[of]] >= 0:
            raise GraphError(f"forward node {of!r} of {graph.name!r} has two backward nodes")
        backward[position[of]] = v
    return forward, backward


def _node_of_name(graph: CompGraph, forward: np.ndarray, imported: set[str]) -> dict[str, int]:
    """Imported node name -> index into ``forward`` of the graph node holding it."""
    node_of: dict[str, int] = {}
    for i, v in enumerate(forward):
        node = graph.nodes[v]
        for name in node.attrs.get("members", [node.name]):
            if name not in imported:
                raise GraphError(
                    f"graph {graph.name!r} does not match its module: node {name!r} is not in "
                    "the module's trace (was the graph imported from another module, other "
                    "inputs or another granularity?)"
                )
            node_of[name] = i
    missing = sorted(imported - set(node_of))
    if missing:
        raise GraphError(
            f"graph {graph.name!r} does not match its module: the trace's node {missing[0]!r} "
            "is in no node of the graph"
        )
    return node_of


def _unpacks(node: fx.Node, part: dict[str, int], values: dict[str, Any]) -> bool:
    """``getitem`` taking one element out of a computed tuple (belongs to its producer)."""
    if node.target is not operator.getitem or not isinstance(node.args[0], fx.Node):
        return False
    source = node.args[0]
    return source.name in part and isinstance(values.get(source.name), (tuple, list))


def _check_no_lost_writes(
    program: fx.Graph, live: set[fx.Node], part: dict[str, int], module: torch.nn.Module
) -> None:
    """Refuse an in-place write (``y[:, 0] = 0``) that nothing reads the result of: the
    import drops such nodes, so a split run would not make it, and its values would differ."""
    for node in program.nodes:
        if node in live or node.op not in _COMPUTE:
            continue
        for arg in node.all_input_nodes:
            base = arg
            while base.name not in part and base.op in _COMPUTE and base.args:
                first = base.args[0]
                if not isinstance(first, fx.Node):
                    break
                base = first  # a view of a view of ... a computed value
            if base.name in part and _may_mutate(node, arg, module):
                raise GraphError(
                    f"node {node.name!r} ({node.target}) writes into {arg.name!r} in place and "
                    "nothing reads its result, so the import left it out and a measured run "
                    "would compute other values than the module; write it out of place "
                    "(torch.where, index_put) or import at another granularity"
                )


def _may_mutate(node: fx.Node, arg: fx.Node, module: torch.nn.Module) -> bool:
    """Whether ``node`` may write into ``arg`` (in-place ops; unknown code is assumed to)."""
    target = node.target
    if node.kwargs.get("out") is arg:
        return True
    if isinstance(target, torch._ops.OpOverload):
        arguments = target._schema.arguments
        for i, a in enumerate(arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                given = node.args[i] if i < len(node.args) else node.kwargs.get(a.name)
                if given is arg:
                    return True
        return False
    first = node.args[0] if node.args else None
    if target is operator.setitem:
        return first is arg
    if node.op == "call_module":
        return first is arg and bool(getattr(module.get_submodule(target), "inplace", False))
    name = getattr(target, "__name__", str(target))
    in_place = (
        name.endswith("_")
        or node.kwargs.get("inplace") is True
        or (
            node.op == "call_function"
            and getattr(operator, name, None) is target
            and name.startswith("i")
            and name != "index"
        )
    )
    return first is arg and in_place


def _constant(node: fx.Node, value: Any) -> Any:
    leaves, _ = tree_flatten(value)
    if any(isinstance(x, torch.Tensor) for x in leaves) or not all(
        isinstance(x, _CONSTANT_TYPES) for x in leaves
    ):
        raise GraphError(
            f"node {node.name!r} ({node.target}) returns a {type(value).__name__}, which "
            "cannot move between devices: the trace cannot be split after it. Return tensors "
            "from it, or import at another granularity"
        )
    return value


def _value_info(node: fx.Node, value: Any) -> ValueInfo:
    leaves, spec = tree_flatten(value)
    infos = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            if leaf.layout != torch.strided or leaf.is_quantized:
                raise GraphError(
                    f"node {node.name!r} outputs a {leaf.layout} tensor, which cannot move "
                    "between devices: the trace cannot be split after it"
                )
            grad = bool(leaf.requires_grad and leaf.is_floating_point())
            infos.append(LeafInfo(tuple(leaf.shape), leaf.dtype, grad))
        elif isinstance(leaf, _CONSTANT_TYPES):
            infos.append(LeafInfo(constant=leaf))
        else:
            raise GraphError(
                f"node {node.name!r} ({node.target}) outputs a {type(leaf).__name__}, which "
                "cannot move between devices: the trace cannot be split after it. Keep it "
                "with its consumers (coarsen the graph) or return tensors"
            )
    return ValueInfo(treespec_dumps(spec), tuple(infos))
