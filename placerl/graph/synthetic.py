"""Seeded generators of synthetic computation-graph families.

A family is a function ``(rng, n, **options) -> (nodes, edges)`` kept in the :data:`FAMILIES`
registry. :func:`generate` turns one into a validated :class:`CompGraph`; :func:`family` builds
a dataset of ``count`` graphs with consecutive seeds (32 by default, as in the traversal-order
study of Wang et al. 2022). :func:`register_family` adds your own.

Costs are not noise. Each graph draws its shapes from the seed (batch, widths, channels, hidden
size, vocabulary, ...), counts every op's FLOPs from them and times the op with a roofline on the
reference device (a V100, :func:`placerl.devices.roofline_cost`). Tensors are float32:
``out_bytes`` is the output's element count times 4 and ``mem_bytes`` the op's parameter bytes;
weights shared by the steps of an unrolled recurrence are counted once, on the first step.
Every node records ``flops``, ``bytes`` (bytes touched) and ``shape`` in ``attrs``, so
``cost == roofline_cost(attrs["flops"], attrs["bytes"])``.

Families, with their default ``n`` and the smallest ``n`` they take with default options
(:func:`generate` refuses a smaller one, naming the minimum for the options given):

Exactly ``n`` nodes:

- ``chain`` (default 100, min 2): a linear chain of dense / ReLU / layer-norm layers.
- ``fork_join`` (100, min 16): ``stages`` of ``branches`` parallel chains between a fork and a
  join; the minimum is ``1 + stages * (branches + 1)``.
- ``layered`` (150, min 2): a layered random DAG in ``layers`` layers; the minimum is
  ``max(2, layers)``.
- ``series_parallel`` (100, min 3): a random series/parallel composition.

Approximately ``n`` nodes: these round ``n`` to a whole number of cells or time steps, so the
count is within half a cell or step of ``n`` (the minimum is one cell or step):

- ``cifar10`` (300, min 23): NASNet/ENAS-like convolutional cells of ``3 + 3 * blocks`` nodes
  each, plus 5; within 9 of ``n`` with the default ``blocks=5`` (18-node cells).
- ``ptb`` (400, min 25): an ENAS-like recurrent cell unrolled over time, ``5 + 2 * cell_nodes``
  nodes per step, plus 4; within 10 of ``n`` with the default ``cell_nodes=8`` (21-node steps).
- ``nmt`` (400, min 26): a stacked-LSTM encoder-decoder with attention, ``8 + 6 * layers`` nodes
  per time step (encoder and decoder together), plus 6; within 10 of ``n`` with the default
  ``layers=2`` (20-node steps). Its structure is fixed by ``n`` and ``layers``; the seed draws
  the batch, hidden size and vocabulary alone (27 combinations), so different seeds can give
  the same graph (seeds 0-31: 16 distinct graphs; cifar10's and ptb's seeds also draw the
  cells' wiring and give 32).
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from placerl._registry import Registry
from placerl.devices import roofline_cost
from placerl.errors import ConfigError, GraphError
from placerl.graph.core import CompGraph

__all__ = [
    "DTYPE_BYTES",
    "FAMILIES",
    "FamilySpec",
    "GraphBuilder",
    "conv2d_flops",
    "depthwise_conv2d_flops",
    "family",
    "generate",
    "matmul_flops",
    "numel",
    "register_family",
    "tensor_bytes",
]

#: Bytes per tensor element (float32).
DTYPE_BYTES = 4


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of ``shape``."""
    return math.prod(int(d) for d in shape)


def tensor_bytes(shape: Sequence[int]) -> int:
    """Bytes of a float32 tensor of ``shape``."""
    return numel(shape) * DTYPE_BYTES


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of an ``(m, k) @ (k, n)`` product (a multiply and an add per term)."""
    return 2 * m * n * k


def conv2d_flops(batch: int, out_h: int, out_w: int, c_in: int, c_out: int, kernel: int) -> int:
    """FLOPs of a ``kernel x kernel`` convolution with output ``(batch, c_out, out_h, out_w)``."""
    return 2 * batch * out_h * out_w * c_in * c_out * kernel * kernel


def depthwise_conv2d_flops(batch: int, out_h: int, out_w: int, channels: int, kernel: int) -> int:
    """FLOPs of a depthwise ``kernel x kernel`` convolution (one filter per channel)."""
    return 2 * batch * out_h * out_w * channels * kernel * kernel


# Elementwise work per output element of the composite ops below.
_NORM_FLOPS = 5  # mean, variance, subtract, divide, scale-and-shift
_SOFTMAX_FLOPS = 5  # max, subtract, exp, sum, divide
_HIGHWAY_FLOPS = 8  # ENAS highway: sigmoid gate, activation, two products, a difference, a sum
_LSTM_STATE_FLOPS = 5  # forget/input gates, candidate tanh, c = f * c + i * g
_LSTM_OUTPUT_FLOPS = 3  # output gate, tanh(c), product


# --------------------------------------------------------------------------- graph builder
#: What a family function returns: nodes and edges in the forms :class:`CompGraph` takes.
GraphParts = tuple[list[dict[str, Any]], list[tuple[str, str]]]


class GraphBuilder:
    """Collects ops in definition order and costs each one from its shapes.

    Example:
        >>> b = GraphBuilder()
        >>> x = b.add("x", "input", shape=(32, 512))
        >>> fc = b.add("fc", "matmul", [x], shape=(32, 256),
        ...            flops=matmul_flops(32, 256, 512), params=512 * 256)
        >>> nodes, edges = b.parts()
    """

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[tuple[str, str]] = []
        self._shapes: dict[str, tuple[int, ...]] = {}

    def add(
        self,
        name: str,
        op: str,
        inputs: Iterable[str] = (),
        *,
        shape: Sequence[int],
        flops: int = 0,
        params: int = 0,
        shared: bool = False,
        read_bytes: int | None = None,
    ) -> str:
        """Add an op with an edge from each input and return its name.

        Args:
            name: Unique node name.
            op: Op type.
            inputs: Names of ops added before (repeats are ignored).
            shape: Shape of the op's float32 output.
            flops: Floating-point operations of the op.
            params: Number of weights the op reads.
            shared: The weights belong to an earlier op (a later step of an unrolled
                recurrence): they are read but not counted again in ``mem_bytes``.
            read_bytes: Bytes read, weights included, where that is not the inputs' whole
                outputs plus the weights (a gather, a slice).
        """
        sources = list(dict.fromkeys(inputs))
        shape = tuple(int(d) for d in shape)
        out_bytes = tensor_bytes(shape)
        param_bytes = int(params) * DTYPE_BYTES
        if read_bytes is None:
            read_bytes = sum(tensor_bytes(self.shape(src)) for src in sources) + param_bytes
        touched = int(read_bytes) + out_bytes
        self.nodes.append(
            {
                "name": name,
                "op": op,
                "cost": roofline_cost(int(flops), touched),
                "out_bytes": out_bytes,
                "mem_bytes": 0 if shared else param_bytes,
                "attrs": {"flops": int(flops), "bytes": touched, "shape": list(shape)},
            }
        )
        self.edges.extend((src, name) for src in sources)
        self._shapes[name] = shape
        return name

    def shape(self, name: str) -> tuple[int, ...]:
        """Output shape of the op called ``name``."""
        try:
            return self._shapes[name]
        except KeyError:
            raise GraphError(f"op {name!r} is used before it is added") from None

    def parts(self) -> GraphParts:
        """The ``(nodes, edges)`` collected so far, as a family function returns them."""
        return self.nodes, self.edges


# ------------------------------------------------------------------------------ registry
FamilyFn = Callable[..., GraphParts]
#: ``rule(**options) -> smallest n`` for a family whose minimum depends on its options.
MinNRule = Callable[..., int]


@dataclass(frozen=True)
class FamilySpec:
    """A registered graph family.

    Attributes:
        name: Registry name.
        fn: ``fn(rng, n, **options) -> (nodes, edges)`` in the forms :class:`CompGraph` takes.
        default_n: ``n`` used when none is given.
        min_n: Smallest ``n`` accepted with the default options.
        options: Keyword options with their defaults, read from ``fn``'s signature.
        doc: One line describing the family.
        min_n_rule: ``rule(**options) -> smallest n`` where options change the minimum (it
            takes the options it depends on as keywords), else ``None``.
    """

    name: str
    fn: FamilyFn
    default_n: int
    min_n: int
    options: Mapping[str, Any]
    doc: str
    min_n_rule: MinNRule | None = None

    @property
    def min_n_options(self) -> tuple[str, ...]:
        """Names of the options the minimum depends on."""
        return () if self.min_n_rule is None else _keyword_names(self.min_n_rule)

    def minimum(self, options: Mapping[str, Any]) -> int:
        """Smallest ``n`` that works with ``options`` (resolved: every option present)."""
        if self.min_n_rule is None:
            return self.min_n
        return self.min_n_rule(**{key: options[key] for key in self.min_n_options})


#: The synthetic graph families by name (``synthetic:<family>`` graph specs).
FAMILIES: Registry[FamilySpec] = Registry("graph family")


def register_family(
    name: str, *, default_n: int, min_n: int | MinNRule = 1, overwrite: bool = False
) -> Callable[[FamilyFn], FamilyFn]:
    """Register a graph family under ``name``.

    The decorated function takes a ``numpy.random.Generator``, the size ``n`` and keyword-only
    options, each with a default, and returns ``(nodes, edges)`` (use :class:`GraphBuilder` to
    get roofline costs). Options defaulting to ``None`` take an integer or ``None``.
    :func:`generate` refuses an ``n`` below the minimum, so the function can rely on it.

    Example:
        >>> @register_family("diamond", default_n=4, min_n=4, overwrite=True)
        ... def diamond(rng, n, *, width=64):
        ...     b = GraphBuilder()
        ...     top = b.add("top", "input", shape=(8, width))
        ...     mids = [b.add(f"mid{i}", "relu", [top], shape=(8, width), flops=8 * width)
        ...             for i in range(n - 2)]
        ...     b.add("bottom", "add", mids, shape=(8, width), flops=8 * width)
        ...     return b.parts()

    Args:
        name: Name to use in :func:`generate`, :func:`family` and configs.
        default_n: Size used when the caller gives no ``n``.
        min_n: Smallest accepted ``n``: an integer, or ``rule(*, option, ...) -> int`` taking
            as keywords the options the minimum depends on (``min_n`` is then the rule at the
            defaults).
        overwrite: Replace an existing family of the same name.

    Raises:
        ConfigError: ``default_n`` or ``min_n`` is not an integer with
            ``1 <= min_n <= default_n``, a rule names an option the family does not have, or
            an option has no default.
    """
    if not _is_int(default_n):
        raise ConfigError(f"graph family {name!r}: default_n must be an integer, got {default_n!r}")
    if not (callable(min_n) or _is_int(min_n)):
        raise ConfigError(
            f"graph family {name!r}: min_n must be an integer or a rule, got {min_n!r}"
        )

    def wrap(fn: FamilyFn) -> FamilyFn:
        doc = (fn.__doc__ or name).strip().splitlines()[0]
        options = _keyword_defaults(name, fn)
        rule = min_n if callable(min_n) else None
        smallest = _rule_at_defaults(name, rule, options) if rule else int(min_n)
        if not 1 <= smallest <= default_n:
            raise ConfigError(
                f"graph family {name!r} needs 1 <= min_n <= default_n, got min_n={smallest}, "
                f"default_n={default_n}"
            )
        spec = FamilySpec(name, fn, int(default_n), smallest, options, doc, rule)
        FAMILIES.register(name, spec, overwrite=overwrite)
        return fn

    return wrap


def _keyword_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _rule_at_defaults(name: str, rule: MinNRule, options: Mapping[str, Any]) -> int:
    unknown = [key for key in _keyword_names(rule) if key not in options]
    if unknown:
        raise ConfigError(
            f"the min_n rule of graph family {name!r} reads unknown option(s) "
            f"{', '.join(map(repr, unknown))}; known: {', '.join(options) or 'none'}"
        )
    return rule(**{key: options[key] for key in _keyword_names(rule)})


def _keyword_defaults(name: str, fn: FamilyFn) -> dict[str, Any]:
    options = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        if param.default is inspect.Parameter.empty:
            raise ConfigError(f"option {param.name!r} of graph family {name!r} needs a default")
        options[param.name] = param.default
    return options


# ----------------------------------------------------------------------------- public API
def generate(family: str, /, *, n: int | None = None, seed: int = 0, **params: Any) -> CompGraph:
    """One graph of a registered family.

    Args:
        family: Family name (see :data:`FAMILIES`).
        n: Approximate node count; ``None`` means the family's default.
        seed: Seed of everything random: structure, op choices and shapes.
        **params: The family's keyword options.

    Returns:
        A validated graph named ``"<family>-s<seed>"`` (``"<family>-n<n>-s<seed>"`` when ``n``
        is not the default), with ``meta`` ``{"source": "synthetic", "family", "seed",
        "params"}``; ``params`` holds ``n`` and every option.

    Raises:
        ConfigError: For an unknown family (the message lists the known ones), an ``n`` below
            the family's minimum for the options given (the message names it and the options
            it depends on), a negative or non-integer seed, an unknown option or an option of
            the wrong type or range.
    """
    spec = FAMILIES[family]
    seed = _check_seed(seed)
    options = _resolve_options(spec, params)
    size = _check_n(spec, n, options)
    nodes, edges = spec.fn(np.random.default_rng(seed), size, **options)
    suffix = "" if size == spec.default_n else f"-n{size}"
    meta = {
        "source": "synthetic",
        "family": spec.name,
        "seed": seed,
        "params": {"n": size, **options},
    }
    return CompGraph(nodes, edges, name=f"{spec.name}{suffix}-s{seed}", meta=meta)


def family(
    name: str, /, *, count: int = 32, seed: int = 0, n: int | None = None, **params: Any
) -> list[CompGraph]:
    """A family's dataset: ``count`` graphs, graph ``i`` generated with seed ``seed + i``.

    Args:
        name: Family name (see :data:`FAMILIES`).
        count: Number of graphs.
        seed: Seed of the first graph.
        n: Approximate node count of each graph; ``None`` means the family's default.
        **params: The family's keyword options.

    Raises:
        ConfigError: As :func:`generate`, or for a ``count`` below 1.
    """
    if not _is_int(count) or count < 1:
        raise ConfigError(f"count must be a positive integer, got {count!r}")
    seed = _check_seed(seed)
    return [generate(name, n=n, seed=seed + i, **params) for i in range(int(count))]


# -------------------------------------------------------------------------- validation
def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_n(spec: FamilySpec, n: Any, options: Mapping[str, Any]) -> int:
    """``n`` (the default when ``None``) if it is an integer at least the options' minimum."""
    size = spec.default_n if n is None else n
    minimum = spec.minimum(options)
    if not _is_int(size) or size < minimum:
        given = ", ".join(f"{key}={options[key]!r}" for key in spec.min_n_options)
        raise ConfigError(
            f"graph family {spec.name!r} needs an integer n >= {minimum}"
            + (f" with {given}" if given else "")
            + f", got {size!r}"
            + (" (its default n)" if n is None else "")
        )
    return int(size)


def _check_seed(seed: Any) -> int:
    if not _is_int(seed) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _resolve_options(spec: FamilySpec, params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = [key for key in params if key not in spec.options]
    if unknown:
        known = ", ".join(["n", "seed", *spec.options])  # every family takes n and seed
        raise ConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for graph family "
            f"{spec.name!r}; known: {known}"
        )
    return {
        key: _check_option(spec.name, key, params.get(key, default), default)
        for key, default in spec.options.items()
    }


def _check_option(family: str, key: str, value: Any, default: Any) -> Any:
    """The option's value, checked against its default's type and made non-negative."""
    what = f"option {key!r} of graph family {family!r}"
    if value is None and default is None:
        return None
    if isinstance(default, bool):
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{what} must be True or False, got {value!r}")
        return bool(value)
    if default is None or isinstance(default, int):
        if not _is_int(value):
            raise ConfigError(f"{what} must be an integer, got {value!r}")
        value = int(value)
    elif isinstance(default, float):
        is_number = _is_int(value) or isinstance(value, (float, np.floating))
        if not is_number or not math.isfinite(value):
            raise ConfigError(f"{what} must be a finite number, got {value!r}")
        value = float(value)
    elif not isinstance(value, type(default)):
        raise ConfigError(f"{what} must be a {type(default).__name__}, got {value!r}")
    else:
        return value
    if value < 0:
        raise ConfigError(f"{what} must be >= 0, got {value}")
    return value


def _check_positive(family: str, **values: int | None) -> None:
    for key, value in values.items():
        if value is not None and value < 1:
            raise ConfigError(
                f"option {key!r} of graph family {family!r} must be >= 1, got {value}"
            )


# ----------------------------------------------------------------------- op helpers
_BATCHES = (16, 32, 64, 128)
_WIDTHS = (256, 512, 1024, 2048)


def _pick(rng: np.random.Generator, choices: Sequence[Any]) -> Any:
    return choices[int(rng.integers(len(choices)))]


def _or_pick(rng: np.random.Generator, value: int | None, choices: Sequence[int]) -> int:
    """``value`` if the caller fixed it, else a seeded choice."""
    return value if value is not None else _pick(rng, choices)


def _dense(
    b: GraphBuilder, name: str, inputs: list[str], width: int, *, shared: bool = False
) -> str:
    """A linear layer over the concatenation of ``(batch, features)`` inputs."""
    batch = b.shape(inputs[0])[0]
    k = sum(b.shape(src)[-1] for src in inputs)
    return b.add(
        name,
        "matmul",
        inputs,
        shape=(batch, width),
        flops=matmul_flops(batch, width, k),
        params=k * width,
        shared=shared,
    )


def _elementwise(
    b: GraphBuilder,
    name: str,
    op: str,
    inputs: list[str],
    shape: Sequence[int] | None = None,
    *,
    per_element: int = 1,
    params: int = 0,
) -> str:
    """An op doing ``per_element`` FLOPs per output element (shape: the first input's)."""
    shape = b.shape(inputs[0]) if shape is None else shape
    return b.add(name, op, inputs, shape=shape, flops=per_element * numel(shape), params=params)


def _generic_layer(b: GraphBuilder, rng: np.random.Generator, name: str, inputs: list[str]) -> str:
    """A dense layer of seeded width (always, to merge several inputs), a ReLU or a layer norm."""
    draw = rng.random()
    if len(inputs) > 1 or draw < 0.5:
        return _dense(b, name, inputs, _pick(rng, _WIDTHS))
    if draw < 0.75:
        return _elementwise(b, name, "relu", inputs)
    width = b.shape(inputs[0])[-1]
    return _elementwise(b, name, "layernorm", inputs, per_element=_NORM_FLOPS, params=2 * width)


def _input(b: GraphBuilder, rng: np.random.Generator, name: str, batch: int) -> str:
    return b.add(name, "input", shape=(batch, _pick(rng, _WIDTHS)))


# ------------------------------------------------------------------- generic families
@register_family("chain", default_n=100, min_n=2)
def chain(rng: np.random.Generator, n: int, *, batch: int | None = None) -> GraphParts:
    """A linear chain of dense, ReLU and layer-norm layers of seeded widths (exactly n nodes).

    Args:
        rng: Source of randomness.
        n: Number of nodes (an input and ``n - 1`` layers).
        batch: Batch size; ``None`` draws one of 16, 32, 64, 128.
    """
    _check_positive("chain", batch=batch)
    b = GraphBuilder()
    prev = _input(b, rng, "input", _or_pick(rng, batch, _BATCHES))
    for i in range(1, n):
        prev = _generic_layer(b, rng, f"layer{i}", [prev])
    return b.parts()


def _fork_join_min_n(*, branches: int, stages: int) -> int:
    """The fork, then per stage one layer per branch and the join."""
    return 1 + stages * (branches + 1)


@register_family("fork_join", default_n=100, min_n=_fork_join_min_n)
def fork_join(
    rng: np.random.Generator,
    n: int,
    *,
    branches: int = 4,
    stages: int = 3,
    batch: int | None = None,
) -> GraphParts:
    """Stages of parallel branches of layers, each stage between a fork and a join (exactly n).

    Args:
        rng: Source of randomness.
        n: Number of nodes, at least ``1 + stages * (branches + 1)`` (16 with the defaults);
            the branch lengths (>= 1 each) are a random split of the rest.
        branches: Parallel branches per stage.
        stages: Fork-join stages in series; a stage's join is the next stage's fork.
        batch: Batch size; ``None`` draws one.
    """
    _check_positive("fork_join", branches=branches, stages=stages, batch=batch)
    needed = _fork_join_min_n(branches=branches, stages=stages)
    slots = stages * branches
    extra = rng.multinomial(n - needed, np.full(slots, 1 / slots))
    lengths = (1 + extra).reshape(stages, branches)
    b = GraphBuilder()
    fork = _input(b, rng, "input", _or_pick(rng, batch, _BATCHES))
    for s in range(stages):
        ends = []
        for j, length in enumerate(lengths[s]):
            prev = fork
            for k in range(int(length)):
                prev = _generic_layer(b, rng, f"stage{s}/branch{j}/layer{k}", [prev])
            ends.append(prev)
        fork = _dense(b, f"stage{s}/join", ends, _pick(rng, _WIDTHS))
    return b.parts()


def _layered_min_n(*, layers: int | None) -> int:
    """One node per layer."""
    return 2 if layers is None else max(2, layers)


@register_family("layered", default_n=150, min_n=_layered_min_n)
def layered(
    rng: np.random.Generator,
    n: int,
    *,
    layers: int | None = None,
    max_fan_in: int = 3,
    reach: int = 2,
    batch: int | None = None,
) -> GraphParts:
    """A layered random DAG; each node past the first layer reads the layer before (exactly n).

    Args:
        rng: Source of randomness.
        n: Number of nodes (at least 2, and at least ``layers``), split at random into
            non-empty layers.
        layers: Number of layers (>= 2); ``None`` means ``round(sqrt(n))``, at least 2.
        max_fan_in: Most predecessors a node has: one from the previous layer, the others
            from the ``reach`` layers before it.
        reach: How many layers back an edge may come from.
        batch: Batch size; ``None`` draws one.
    """
    _check_positive("layered", layers=layers, max_fan_in=max_fan_in, reach=reach, batch=batch)
    depth = max(2, round(math.sqrt(n))) if layers is None else layers
    if depth < 2:
        raise ConfigError(f"option 'layers' of graph family 'layered' must be >= 2, got {depth}")
    sizes = 1 + rng.multinomial(n - depth, np.full(depth, 1 / depth))
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    b = GraphBuilder()
    batch = _or_pick(rng, batch, _BATCHES)
    names = [_input(b, rng, f"layer0/node{k}", batch) for k in range(sizes[0])]
    for i in range(1, depth):
        lo, prev_lo, hi = starts[max(0, i - reach)], starts[i - 1], starts[i]
        for k in range(sizes[i]):
            first = int(rng.integers(prev_lo, hi))
            count = min(int(rng.integers(max_fan_in)), hi - lo)
            others = (rng.choice(hi - lo, size=count, replace=False) + lo).tolist()
            preds = sorted({first, *others})
            names.append(_generic_layer(b, rng, f"layer{i}/node{k}", [names[p] for p in preds]))
    return b.parts()


@register_family("series_parallel", default_n=100, min_n=3)
def series_parallel(
    rng: np.random.Generator,
    n: int,
    *,
    parallel_prob: float = 0.5,
    batch: int | None = None,
) -> GraphParts:
    """A random series/parallel composition of layers between an input and an output (exactly n).

    Args:
        rng: Source of randomness.
        n: Number of nodes: the input, the output and ``n - 2`` layers in between.
        parallel_prob: Chance that a split composes its two parts in parallel, not in series.
        batch: Batch size; ``None`` draws one.
    """
    if parallel_prob > 1:
        raise ConfigError(
            f"option 'parallel_prob' of graph family 'series_parallel' must be <= 1, "
            f"got {parallel_prob}"
        )
    _check_positive("series_parallel", batch=batch)
    b = GraphBuilder()
    counter = itertools.count()

    def block(size: int, inputs: list[str]) -> list[str]:
        """Add ``size`` layers reading ``inputs``; return the block's exits."""
        if size == 1:
            return [_generic_layer(b, rng, f"op{next(counter)}", inputs)]
        first = int(rng.integers(1, size))
        if rng.random() < parallel_prob:
            return block(first, inputs) + block(size - first, inputs)
        return block(size - first, block(first, inputs))

    source = _input(b, rng, "input", _or_pick(rng, batch, _BATCHES))
    _dense(b, "output", block(n - 2, [source]), _pick(rng, _WIDTHS))
    return b.parts()


# ------------------------------------------------------------------------------ cifar10
def _conv(b: GraphBuilder, name: str, src: str, c_out: int, kernel: int, out_hw: int) -> str:
    """A ``kernel x kernel`` convolution to ``(batch, c_out, out_hw, out_hw)``, strided to fit."""
    batch, c_in = b.shape(src)[:2]
    return b.add(
        name,
        f"conv_{kernel}x{kernel}",
        [src],
        shape=(batch, c_out, out_hw, out_hw),
        flops=conv2d_flops(batch, out_hw, out_hw, c_in, c_out, kernel),
        params=c_in * c_out * kernel * kernel,
    )


def _sep_conv(b: GraphBuilder, name: str, src: str, kernel: int) -> str:
    """A depthwise-separable convolution: depthwise ``kernel x kernel``, then pointwise 1x1."""
    batch, c, h, w = b.shape(src)
    flops = depthwise_conv2d_flops(batch, h, w, c, kernel) + conv2d_flops(batch, h, w, c, c, 1)
    return b.add(
        name,
        f"sep_conv_{kernel}x{kernel}",
        [src],
        shape=(batch, c, h, w),
        flops=flops,
        params=c * kernel * kernel + c * c,
    )


def _pool(b: GraphBuilder, name: str, src: str, op: str) -> str:
    """A 3x3 stride-1 pooling (average or max): 9 reads per output element."""
    return _elementwise(b, name, op, [src], per_element=9)


#: The ops a cell's branch can apply, NASNet/ENAS style: ``(builder, name, input) -> name``.
_CELL_OPS: dict[str, Callable[[GraphBuilder, str, str], str]] = {
    "sep_conv_3x3": lambda b, name, src: _sep_conv(b, name, src, 3),
    "sep_conv_5x5": lambda b, name, src: _sep_conv(b, name, src, 5),
    "conv_3x3": lambda b, name, src: _conv(b, name, src, b.shape(src)[1], 3, b.shape(src)[2]),
    "avg_pool_3x3": lambda b, name, src: _pool(b, name, src, "avg_pool_3x3"),
    "max_pool_3x3": lambda b, name, src: _pool(b, name, src, "max_pool_3x3"),
}
_CELL_OP_NAMES = tuple(_CELL_OPS)


def _cell(
    b: GraphBuilder,
    rng: np.random.Generator,
    name: str,
    inputs: tuple[str, str],
    channels: int,
    hw: int,
    blocks: int,
) -> str:
    """A NASNet-like cell reading the two previous cells' outputs; returns its concat node.

    Both inputs are first brought to ``(channels, hw, hw)`` by a (strided) 1x1 convolution.
    Each block applies a random op to each of two random earlier states and adds the results;
    the cell concatenates the blocks no other block reads.
    """
    states = [_conv(b, f"{name}/pre{k}", src, channels, 1, hw) for k, src in enumerate(inputs)]
    used = [False] * (2 + blocks)
    for j in range(blocks):
        branch_outs = []
        for side in ("left", "right"):
            k = int(rng.integers(len(states)))
            used[k] = True
            op = _CELL_OPS[_pick(rng, _CELL_OP_NAMES)]
            branch_outs.append(op(b, f"{name}/block{j}/{side}", states[k]))
        states.append(_elementwise(b, f"{name}/block{j}/add", "add", branch_outs))
    loose = [s for s, is_used in zip(states[2:], used[2:], strict=True) if not is_used]
    batch = b.shape(loose[0])[0]
    shape = (batch, channels * len(loose), hw, hw)
    return b.add(f"{name}/out", "concat", loose, shape=shape)


_CIFAR_IMAGE = 32
_CIFAR_CLASSES = 10
_CIFAR_CHANNELS = (16, 20, 24, 32, 36)
_CIFAR_OVERHEAD = 5  # input, stem, pool, fc, softmax


def _cifar10_cell_nodes(blocks: int) -> int:
    """Two input convolutions, three nodes per block, the concat."""
    return 3 + 3 * blocks


def _cifar10_min_n(*, blocks: int) -> int:
    """One cell."""
    return _CIFAR_OVERHEAD + _cifar10_cell_nodes(blocks)


@register_family("cifar10", default_n=300, min_n=_cifar10_min_n)
def cifar10(
    rng: np.random.Generator,
    n: int,
    *,
    blocks: int = 5,
    reductions: int = 2,
    batch: int | None = None,
    channels: int | None = None,
) -> GraphParts:
    """Stacked NASNet/ENAS-like convolutional cells on 32x32 images (CIFAR-10 shaped).

    Args:
        rng: Source of randomness.
        n: Approximate node count, at least one cell (23 with the defaults); sets the number
            of cells (``3 + 3 * blocks`` nodes each, plus 5), so the graph has within half a
            cell of n nodes.
        blocks: Blocks per cell, each two random ops and an add.
        reductions: Reduction cells (halve the image, double the channels), at most 4, spread
            evenly through the stack.
        batch: Batch size; ``None`` draws one of 32, 64, 128.
        channels: Channels of the first cells; ``None`` draws one of 16, 20, 24, 32, 36.
    """
    _check_positive("cifar10", blocks=blocks, batch=batch, channels=channels)
    if reductions > 4:
        raise ConfigError(
            f"option 'reductions' of graph family 'cifar10' must be <= 4, got {reductions}"
        )
    per_cell = _cifar10_cell_nodes(blocks)
    num_cells = round((n - _CIFAR_OVERHEAD) / per_cell)  # >= 1: generate checked n
    reduce_at = {(k + 1) * num_cells // (reductions + 1) for k in range(reductions)}
    batch = _or_pick(rng, batch, (32, 64, 128))
    c = _or_pick(rng, channels, _CIFAR_CHANNELS)
    hw = _CIFAR_IMAGE
    b = GraphBuilder()
    image = b.add("input", "input", shape=(batch, 3, hw, hw))
    prev_prev = prev = _conv(b, "stem", image, 3 * c, 3, hw)
    for i in range(num_cells):
        if i in reduce_at:
            c, hw = 2 * c, hw // 2
        prev_prev, prev = prev, _cell(b, rng, f"cell{i}", (prev_prev, prev), c, hw, blocks)
    features = b.shape(prev)[1]
    pool = b.add(
        "head/pool", "global_avg_pool", [prev], shape=(batch, features), flops=numel(b.shape(prev))
    )
    logits = _dense(b, "head/fc", [pool], _CIFAR_CLASSES)
    _elementwise(b, "head/softmax", "softmax", [logits], per_element=_SOFTMAX_FLOPS)
    return b.parts()


# --------------------------------------------------------------------------- ptb and nmt
def _embedding(
    b: GraphBuilder, prefix: str, steps: int, batch: int, hidden: int, vocab: int
) -> str:
    """Token ids and their embedding lookup, ``(steps, batch, hidden)``."""
    tokens = b.add(f"{prefix}tokens", "input", shape=(steps, batch))
    gathered = (steps, batch, hidden)
    # A gather reads the ids and only the rows it returns, not the whole table.
    return b.add(
        f"{prefix}embedding",
        "embedding",
        [tokens],
        shape=gathered,
        params=vocab * hidden,
        read_bytes=tensor_bytes((steps, batch)) + tensor_bytes(gathered),
    )


def _step_input(b: GraphBuilder, name: str, embedding: str) -> str:
    """One time step's slice of an embedded sequence."""
    shape = b.shape(embedding)[1:]
    return b.add(name, "slice", [embedding], shape=shape, read_bytes=tensor_bytes(shape))


def _softmax_xent(b: GraphBuilder, name: str, logits: str) -> str:
    """Softmax cross-entropy of ``(batch, vocab)`` logits: one loss per example."""
    shape = b.shape(logits)
    return b.add(
        name, "softmax_xent", [logits], shape=shape[:1], flops=_SOFTMAX_FLOPS * numel(shape)
    )


def _mean_loss(b: GraphBuilder, losses: list[str]) -> str:
    return b.add("loss", "mean", losses, shape=(1,), flops=sum(numel(b.shape(x)) for x in losses))


@dataclass(frozen=True)
class _RnnCell:
    """An ENAS recurrent cell: node ``j > 0`` reads node ``preds[j - 1]`` through ``acts[j]``."""

    preds: tuple[int, ...]
    acts: tuple[str, ...]

    @property
    def loose_ends(self) -> list[int]:
        """Nodes no other node reads; their mean is the new hidden state."""
        return [j for j in range(len(self.acts)) if j not in self.preds]


_ACTIVATIONS = ("tanh", "relu", "sigmoid", "identity")
_PTB_OVERHEAD = 4  # tokens, embedding, initial state, loss


def _ptb_step_nodes(cell_nodes: int) -> int:
    """Input slice, two projections, the cell's nodes and their projections, h, logits, loss."""
    return 5 + 2 * cell_nodes


def _ptb_min_n(*, cell_nodes: int) -> int:
    """One time step."""
    return _PTB_OVERHEAD + _ptb_step_nodes(cell_nodes)


def _rnn_step(
    b: GraphBuilder, name: str, cell: _RnnCell, x: str, h_prev: str, vocab: int, shared: bool
) -> tuple[str, str]:
    """One unrolled step of ``cell``; returns (new hidden state, this step's loss)."""
    batch, hidden = b.shape(h_prev)
    state_shape = (batch, hidden)
    # Each node projects to 2 * hidden: a highway gate and a candidate, as in ENAS.
    x_proj = _dense(b, f"{name}/x_proj", [x], 2 * hidden, shared=shared)
    h_proj = _dense(b, f"{name}/h_proj", [h_prev], 2 * hidden, shared=shared)
    nodes = [
        _elementwise(
            b,
            f"{name}/node0",
            f"highway_{cell.acts[0]}",
            [x_proj, h_proj, h_prev],
            state_shape,
            per_element=_HIGHWAY_FLOPS,
        )
    ]
    for j, (pred, act) in enumerate(zip(cell.preds, cell.acts[1:], strict=True), start=1):
        proj = _dense(b, f"{name}/node{j}/proj", [nodes[pred]], 2 * hidden, shared=shared)
        nodes.append(
            _elementwise(
                b,
                f"{name}/node{j}",
                f"highway_{act}",
                [proj, nodes[pred]],
                state_shape,
                per_element=_HIGHWAY_FLOPS,
            )
        )
    ends = [nodes[j] for j in cell.loose_ends]
    h = _elementwise(b, f"{name}/h", "mean", ends, state_shape, per_element=len(ends))
    logits = _dense(b, f"{name}/logits", [h], vocab, shared=shared)
    return h, _softmax_xent(b, f"{name}/softmax", logits)


@register_family("ptb", default_n=400, min_n=_ptb_min_n)
def ptb(
    rng: np.random.Generator,
    n: int,
    *,
    cell_nodes: int = 8,
    vocab: int = 10000,
    batch: int | None = None,
    hidden: int | None = None,
) -> GraphParts:
    """An ENAS-like recurrent cell unrolled over time, with embedding and softmax (PTB shaped).

    Args:
        rng: Source of randomness.
        n: Approximate node count, at least one step (25 with the defaults); sets the number
            of time steps (``5 + 2 * cell_nodes`` nodes each: input slice, two projections, the
            cell's nodes, hidden state, logits, loss; plus 4), so the graph has within half a
            step of n nodes.
        cell_nodes: Nodes of the recurrent cell; node ``j`` reads a random earlier node
            through a random activation, and the loose ends average into the hidden state.
        vocab: Vocabulary size (PTB: 10000).
        batch: Batch size; ``None`` draws one of 20, 32, 64.
        hidden: Hidden size; ``None`` draws one of 200, 400, 650, 1000.
    """
    _check_positive("ptb", cell_nodes=cell_nodes, vocab=vocab, batch=batch, hidden=hidden)
    per_step = _ptb_step_nodes(cell_nodes)
    steps = round((n - _PTB_OVERHEAD) / per_step)  # >= 1: generate checked n
    batch = _or_pick(rng, batch, (20, 32, 64))
    hidden = _or_pick(rng, hidden, (200, 400, 650, 1000))
    cell = _RnnCell(
        preds=tuple(int(rng.integers(j)) for j in range(1, cell_nodes)),
        acts=tuple(_pick(rng, _ACTIVATIONS) for _ in range(cell_nodes)),
    )
    b = GraphBuilder()
    embedding = _embedding(b, "", steps, batch, hidden, vocab)
    h = b.add("h_init", "constant", shape=(batch, hidden))
    losses = []
    for t in range(steps):
        x = _step_input(b, f"step{t}/x", embedding)
        h, loss = _rnn_step(b, f"step{t}", cell, x, h, vocab, shared=t > 0)
        losses.append(loss)
    _mean_loss(b, losses)
    return b.parts()


_NMT_OVERHEAD = 6  # tokens and embedding on each side, the encoder's initial state, loss


def _nmt_step_nodes(layers: int) -> int:
    """Encoder: slice, three per layer; decoder: slice, three per layer, six for attention."""
    return 8 + 6 * layers


def _nmt_min_n(*, layers: int) -> int:
    """One time step on each side."""
    return _NMT_OVERHEAD + _nmt_step_nodes(layers)


def _lstm_cell(
    b: GraphBuilder, name: str, x: str, state: tuple[str, str], shared: bool
) -> tuple[str, str]:
    """One LSTM cell step: gates from ``[x, h]``, then the cell and hidden states."""
    h_prev, c_prev = state
    shape = b.shape(h_prev)
    gates = _dense(b, f"{name}/gates", [x, h_prev], 4 * shape[1], shared=shared)
    c = _elementwise(
        b, f"{name}/c", "lstm_cell", [gates, c_prev], shape, per_element=_LSTM_STATE_FLOPS
    )
    h = _elementwise(
        b, f"{name}/h", "lstm_output", [gates, c], shape, per_element=_LSTM_OUTPUT_FLOPS
    )
    return h, c


def _lstm_stack(
    b: GraphBuilder, name: str, x: str, states: list[tuple[str, str]], shared: bool
) -> str:
    """One time step through every layer; updates ``states`` and returns the top output."""
    for layer, state in enumerate(states):
        states[layer] = _lstm_cell(b, f"{name}/l{layer}", x, state, shared)
        x = states[layer][0]
    return x


def _attention_step(
    b: GraphBuilder, name: str, query: str, memory: list[str], vocab: int, shared: bool
) -> str:
    """Dot-product attention of one decoder output over every encoder output, then the loss."""
    batch, hidden = b.shape(query)
    steps = len(memory)
    scores = b.add(
        f"{name}/attn_scores",
        "matmul",
        [query, *memory],
        shape=(batch, steps),
        flops=matmul_flops(batch, steps, hidden),
    )
    weights = _elementwise(
        b, f"{name}/attn_weights", "softmax", [scores], per_element=_SOFTMAX_FLOPS
    )
    context = b.add(
        f"{name}/attn_context",
        "matmul",
        [weights, *memory],
        shape=(batch, hidden),
        flops=matmul_flops(batch, hidden, steps),
    )
    combined = _dense(b, f"{name}/attn_out", [context, query], hidden, shared=shared)
    logits = _dense(b, f"{name}/logits", [combined], vocab, shared=shared)
    return _softmax_xent(b, f"{name}/softmax", logits)


@register_family("nmt", default_n=400, min_n=_nmt_min_n)
def nmt(
    rng: np.random.Generator,
    n: int,
    *,
    layers: int = 2,
    batch: int | None = None,
    hidden: int | None = None,
    vocab: int | None = None,
) -> GraphParts:
    """A stacked-LSTM encoder-decoder with attention, unrolled over time (NMT shaped).

    The decoder starts from the encoder's final states; at every decoder step an attention
    reads all top-layer encoder outputs, followed by a projection, logits and a loss.

    Args:
        rng: Source of randomness.
        n: Approximate node count, at least one step (26 with the defaults); sets the number
            of time steps, the same on both sides (``8 + 6 * layers`` nodes per step, encoder
            and decoder together, plus 6), so the graph has within half a step of n nodes.
        layers: LSTM layers of the encoder and of the decoder.
        batch: Batch size; ``None`` draws one of 32, 64, 128.
        hidden: Hidden size; ``None`` draws one of 256, 512, 1024.
        vocab: Vocabulary size of each side; ``None`` draws one of 8000, 16000, 32000.
    """
    _check_positive("nmt", layers=layers, batch=batch, hidden=hidden, vocab=vocab)
    per_step = _nmt_step_nodes(layers)
    steps = round((n - _NMT_OVERHEAD) / per_step)  # >= 1: generate checked n
    batch = _or_pick(rng, batch, (32, 64, 128))
    hidden = _or_pick(rng, hidden, (256, 512, 1024))
    vocab = _or_pick(rng, vocab, (8000, 16000, 32000))
    b = GraphBuilder()
    source = _embedding(b, "encoder/", steps, batch, hidden, vocab)
    init = b.add("encoder/init_state", "constant", shape=(batch, hidden))
    states = [(init, init)] * layers
    memory = []
    for t in range(steps):
        name = f"encoder/t{t}"
        memory.append(_lstm_stack(b, name, _step_input(b, f"{name}/x", source), states, t > 0))
    target = _embedding(b, "decoder/", steps, batch, hidden, vocab)
    losses = []
    for t in range(steps):
        name = f"decoder/t{t}"
        top = _lstm_stack(b, name, _step_input(b, f"{name}/x", target), states, t > 0)
        losses.append(_attention_step(b, name, top, memory, vocab, shared=t > 0))
    _mean_loss(b, losses)
    return b.parts()
