"""How each op family splits: its iteration space and the layouts of the tensors it touches.

A rule names the op's iteration dims (``b`` batch, ``n`` output channels or hidden units, ``k``
input channels or reduction, ``s`` sequence, ``h`` heads), says how their sizes follow from
the op's output and operand shapes, and maps every tensor the op reads or writes onto three
tensor roles: ``b`` (batch), ``s`` (sequence: tokens, rows, the first spatial axis) and ``f``
(feature: channels, hidden units, heads). A tensor's layout is its split factor per role; two
layouts of one tensor differ exactly when data must move between its producer and a consumer.

Ops without a rule (views, reshapes, transposes, concatenations, paddings, constants) follow
their first producer: they take its configuration and keep its layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from placerl._registry import Registry

#: Iteration dims, in the order configurations list them.
DIMS = ("b", "n", "k", "s", "h")
#: Tensor roles, in the order layouts list them.
ROLES = ("b", "s", "f")

Shape = Sequence[int]


def roles_of(shape: Shape) -> tuple[int, int, int]:
    """Sizes of the (batch, sequence, feature) roles of a tensor, by its rank.

    ``[F]``; ``[B, F]``; ``[B, S, F]`` (tokens); ``[B, F, S, ...]`` (channels first, as
    convolutions and attention heads lay them out: ``NCHW``, ``[B, heads, S, D]``).
    """
    shape = [int(x) for x in shape]
    if len(shape) == 0:
        return 1, 1, 1
    if len(shape) == 1:
        return 1, 1, shape[0]
    if len(shape) == 2:
        return shape[0], 1, shape[1]
    if len(shape) == 3:
        return shape[0], shape[1], shape[2]
    return shape[0], shape[2], shape[1]


@dataclass(frozen=True)
class OpRule:
    """How one op family splits.

    Attributes:
        name: The family (``linear``, ``conv``, ...).
        dims: ``fn(out_shape, operand_shapes) -> {dim: size}`` for the family's dims.
        output: Role -> the dims whose splits split the output along it.
        inputs: Per operand (the last one repeats for further operands), role -> the dims
            whose splits the operand must be split by along it.
        weight: Dims that shard the op's parameters; the others replicate them.
        reduce: Dims whose split leaves partial sums of the output, all-reduced inside the op.
        grad_reduce: Dims whose split leaves partial sums of the input's gradient, all-reduced
            in the backward pass (the output features of a column-parallel linear).
    """

    name: str
    dims: Callable[[Shape, Sequence[Shape]], dict[str, int]]
    output: Mapping[str, tuple[str, ...]]
    inputs: tuple[Mapping[str, tuple[str, ...]], ...]
    weight: tuple[str, ...] = ()
    reduce: tuple[str, ...] = ()
    grad_reduce: tuple[str, ...] = ()

    def operand(self, position: int) -> Mapping[str, tuple[str, ...]]:
        """The role mapping of operand ``position``."""
        return self.inputs[min(position, len(self.inputs) - 1)]

    @property
    def data_dims(self) -> tuple[str, ...]:
        """Dims that split the data but replicate the parameters (gradients are all-reduced
        over them in training)."""
        return tuple(d for d in DIMS if d not in self.weight and d not in self.reduce)


#: Op families by name.
OP_RULES: Registry[OpRule] = Registry("op rule")
#: Family of each op name (``CompGraph`` nodes' ``op``); other ops follow their producer.
OP_FAMILIES: dict[str, str] = {}


def register_op_rule(rule: OpRule, ops: Sequence[str], *, overwrite: bool = False) -> OpRule:
    """Register ``rule`` and map each op name of ``ops`` to it."""
    OP_RULES.register(rule.name, rule, overwrite=overwrite)
    for op in ops:
        OP_FAMILIES[op] = rule.name
    return rule


def rule_of(op: str) -> OpRule | None:
    """The rule of op name ``op``, or ``None`` for ops that follow their producer."""
    family = OP_FAMILIES.get(op)
    return None if family is None else OP_RULES[family]


# ----------------------------------------------------------------------------- families
def _bsf(out: Shape, names: str = "bsn") -> dict[str, int]:
    return dict(zip(names, roles_of(out), strict=True))


def _operand(operands: Sequence[Shape], position: int, op: str) -> Shape:
    if len(operands) <= position:
        raise ValueError(f"{op} needs operand {position}'s shape")
    return operands[position]


def _linear_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    """Features are the last axis at any rank; the axes between batch and features are ``s``."""
    rows = math.prod(int(x) for x in out[1:-1]) if len(out) > 2 else 1
    return {
        "b": int(out[0]) if len(out) > 1 else 1,
        "s": rows,
        "n": int(out[-1]),
        "k": int(_operand(operands, 0, "linear")[-1]),
    }


def _conv_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    return {"b": int(out[0]), "n": int(out[1]), "k": int(_operand(operands, 0, "conv")[1])}


def _heads_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    b, s, f = roles_of(out)
    return {"b": b, "s": s, "h": f if len(out) >= 4 else 1}


def _rows_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    b, s, _ = roles_of(out)
    return {"b": b, "s": s}


def _channel_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    b, _, f = roles_of(out)
    return {"b": b, "n": f}


def _token_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    return _bsf(out)


def _batch_dims(out: Shape, operands: Sequence[Shape]) -> dict[str, int]:
    return {"b": roles_of(out)[0]}


TOKENS = {"b": ("b",), "s": ("s",), "f": ("n",)}
register_op_rule(
    OpRule(
        "linear",
        _linear_dims,
        TOKENS,
        ({"b": ("b",), "s": ("s",), "f": ("k",)},),
        weight=("n", "k"),
        reduce=("k",),
        grad_reduce=("n",),
    ),
    ["linear", "addmm"],
)
register_op_rule(
    OpRule(
        "conv",
        _conv_dims,
        {"b": ("b",), "f": ("n",)},
        ({"b": ("b",), "f": ("k",)},),
        weight=("n", "k"),
        reduce=("k",),
        grad_reduce=("n",),
    ),
    ["conv2d", "conv1d", "conv3d", "convolution"],
)
HEADS = {"b": ("b",), "s": ("s",), "f": ("h",)}
register_op_rule(  # left operand split by rows, right operand (keys, values) whole per head
    OpRule("matmul", _heads_dims, HEADS, (HEADS, {"b": ("b",), "f": ("h",)})),
    ["matmul", "bmm", "scaled_dot_product_attention"],
)
register_op_rule(
    OpRule("elementwise", _token_dims, TOKENS, (TOKENS,)),
    [
        "add",
        "add_",
        "sub",
        "mul",
        "mul_",
        "div",
        "relu",
        "relu_",
        "gelu",
        "tanh",
        "sigmoid",
        "silu",
        "hardtanh",
        "hardtanh_",
        "dropout",
        "masked_fill",
        "where",
        "pow",
        "rsqrt",
        "neg",
        "exp",
        "clamp",
        "erf",
    ],
)
ROWS = {"b": ("b",), "s": ("s",)}
register_op_rule(OpRule("norm", _rows_dims, ROWS, (ROWS,)), ["layer_norm", "group_norm"])
CHANNELS = {"b": ("b",), "f": ("n",)}
register_op_rule(
    OpRule("batch_norm", _channel_dims, CHANNELS, (CHANNELS,), weight=("n",)), ["batch_norm"]
)
register_op_rule(OpRule("softmax", _heads_dims, HEADS, (HEADS,)), ["softmax", "log_softmax"])
register_op_rule(
    OpRule("pool", _channel_dims, CHANNELS, (CHANNELS,)),
    ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"],
)
register_op_rule(OpRule("embedding", _token_dims, TOKENS, (ROWS,), weight=("n",)), ["embedding"])
BATCH = {"b": ("b",)}
register_op_rule(OpRule("recurrent", _batch_dims, BATCH, (BATCH,)), ["lstm", "gru", "rnn_tanh"])
register_op_rule(OpRule("input", _batch_dims, BATCH, (BATCH,)), ["input"])


def split_of(mapping: Mapping[str, tuple[str, ...]], config: Mapping[str, int]) -> tuple[int, ...]:
    """The layout (split per role of :data:`ROLES`) that ``mapping`` gives under ``config``."""
    return tuple(math.prod(config.get(d, 1) for d in mapping.get(r, ())) for r in ROLES)
