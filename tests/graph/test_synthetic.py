"""Tests of the synthetic graph families (placerl.graph.synthetic)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.devices import roofline_cost
from placerl.errors import ConfigError
from placerl.graph.core import CompGraph
from placerl.graph.synthetic import (
    FAMILIES,
    GraphBuilder,
    family,
    generate,
    register_family,
)

BUILTIN = ("chain", "fork_join", "layered", "series_parallel", "cifar10", "ptb", "nmt")
# Smallest n each family accepts with its default options.
MIN_N = {
    "chain": 2,
    "fork_join": 16,
    "layered": 2,
    "series_parallel": 3,
    "cifar10": 23,
    "ptb": 25,
    "nmt": 26,
}
# Families whose node count is exactly n (the others round n to whole cells or time steps).
EXACT_N = ("chain", "fork_join", "layered", "series_parallel")
# Most nodes the others may be off by with default options: half a cell or time step, as the
# module docstring says (cifar10: 18-node cells; ptb: 21-node steps; nmt: 20-node steps).
TOLERANCE = {"cifar10": 9, "ptb": 10, "nmt": 10}


def content(graph: CompGraph) -> str:
    """The graph's nodes and edges, without its name and meta."""
    return json.dumps([graph.to_dict()["nodes"], graph.to_dict()["edges"]], sort_keys=True)


def pred_names(graph: CompGraph, name: str) -> list[str]:
    return [graph.names[p] for p in graph.predecessors(graph.index(name))]


def assert_well_formed(graph: CompGraph) -> None:
    a = graph.arrays
    assert np.all(np.isfinite(a.cost)) and np.all(a.cost > 0)
    assert np.all(a.out_bytes > 0) and np.all(a.out_bytes % 4 == 0)
    assert np.all(a.mem_bytes % 4 == 0)
    assert nx.is_directed_acyclic_graph(graph.to_networkx())
    # Definition order: every producer is defined before its consumers.
    assert np.all(a.src < a.dst)
    for node in graph.nodes:
        assert node.cost == roofline_cost(node.attrs["flops"], node.attrs["bytes"])
        assert node.out_bytes == 4 * math.prod(node.attrs["shape"])


# ------------------------------------------------------------------- every family
def test_builtin_families_are_registered():
    assert set(BUILTIN) <= set(FAMILIES)


@pytest.mark.parametrize("name", BUILTIN)
def test_default_graph_is_rl_sized_and_labelled(name):
    spec = FAMILIES[name]
    graph = generate(name)
    assert_well_formed(graph)
    assert 20 <= graph.num_nodes <= 600
    assert graph.name == f"{name}-s0"
    assert graph.meta == {
        "source": "synthetic",
        "family": name,
        "seed": 0,
        "params": {"n": spec.default_n, **spec.options},
    }


@pytest.mark.parametrize("name", BUILTIN)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32), data=st.data())
def test_any_seed_and_size_gives_a_valid_graph_near_n(name, seed, data):
    n = data.draw(st.integers(MIN_N[name], MIN_N[name] + 250), label="n")
    graph = generate(name, n=n, seed=seed)
    assert_well_formed(graph)
    assert abs(graph.num_nodes - n) <= TOLERANCE.get(name, 0)


def test_declared_minimums_are_the_true_ones():
    assert {name: FAMILIES[name].min_n for name in BUILTIN} == MIN_N
    assert set(TOLERANCE) == set(BUILTIN) - set(EXACT_N)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_declared_min_n_works_and_one_less_is_refused(name):
    min_n = FAMILIES[name].min_n
    assert_well_formed(generate(name, n=min_n))
    with pytest.raises(ConfigError, match=rf"'{name}' needs an integer n >= {min_n}\b"):
        generate(name, n=min_n - 1)


@pytest.mark.parametrize("name", BUILTIN)
@given(data=st.data())
def test_every_n_from_the_minimum_up_gives_a_valid_graph_of_the_documented_size(name, data):
    min_n = FAMILIES[name].min_n
    n = data.draw(st.integers(min_n, min_n + 60), label="n")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    graph = generate(name, n=n, seed=seed)
    assert_well_formed(graph)
    assert abs(graph.num_nodes - n) <= TOLERANCE.get(name, 0)


@pytest.mark.parametrize(
    ("name", "options", "minimum", "given"),
    [
        ("fork_join", {"branches": 1, "stages": 1}, 3, "branches=1, stages=1"),
        ("fork_join", {"branches": 4, "stages": 5}, 26, "branches=4, stages=5"),
        ("layered", {"layers": 8}, 8, "layers=8"),
        ("cifar10", {"blocks": 1}, 11, "blocks=1"),
        ("ptb", {"cell_nodes": 2}, 13, "cell_nodes=2"),
        ("nmt", {"layers": 4}, 38, "layers=4"),
    ],
)
def test_options_move_the_minimum_and_the_message_says_where(name, options, minimum, given):
    assert_well_formed(generate(name, n=minimum, **options))
    message = f"graph family '{name}' needs an integer n >= {minimum} with {given}, got"
    with pytest.raises(ConfigError, match=message):
        generate(name, n=minimum - 1, **options)


def test_a_default_n_below_the_options_minimum_is_named_as_the_default():
    with pytest.raises(ConfigError, match=r"n >= 151 with branches=4, stages=30, got 100 \(its"):
        generate("fork_join", stages=30)


@pytest.mark.parametrize("name", BUILTIN)
def test_same_seed_same_graph_other_seed_other_graph(name):
    assert generate(name, seed=3) == generate(name, seed=3)
    assert content(generate(name, seed=3)) != content(generate(name, seed=4))


def test_graphs_do_not_depend_on_the_hash_seed():
    code = (
        "from placerl.graph.synthetic import generate;"
        f"print([generate(f, seed=7).fingerprint() for f in {BUILTIN!r}])"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str([generate(f, seed=7).fingerprint() for f in BUILTIN])


@pytest.mark.parametrize("name", BUILTIN)
def test_graph_survives_a_json_round_trip(name):
    graph = generate(name, seed=1)
    assert CompGraph.from_dict(json.loads(json.dumps(graph.to_dict()))) == graph


@pytest.mark.parametrize("name", ["chain", "layered"])
def test_scales_to_5000_nodes(name):
    assert generate(name, n=5000).num_nodes == 5000


# ---------------------------------------------------------------------- datasets
def test_family_gives_32_distinct_graphs_with_consecutive_seeds():
    graphs = family("layered", n=40)
    assert len(graphs) == 32
    assert [g.meta["seed"] for g in graphs] == list(range(32))
    assert len({content(g) for g in graphs}) == 32
    assert graphs[5] == generate("layered", n=40, seed=5)


def test_family_count_seed_and_options_pass_through():
    graphs = family("fork_join", count=3, seed=10, n=30, branches=2)
    assert [g.name for g in graphs] == [
        "fork_join-n30-s10",
        "fork_join-n30-s11",
        "fork_join-n30-s12",
    ]
    assert all(g.meta["params"]["branches"] == 2 for g in graphs)


# ------------------------------------------------------------ costs from shapes
def test_chain_costs_follow_layer_shapes():
    graph = generate("chain", seed=2)
    for i, node in enumerate(graph.nodes[1:], start=1):
        (prev,) = graph.predecessors(i)
        batch, width_in = graph.nodes[prev].attrs["shape"]
        width_out = node.attrs["shape"][1]
        flops = {
            "matmul": 2 * batch * width_in * width_out,
            "relu": batch * width_in,
            "layernorm": 5 * batch * width_in,
        }[node.op]
        params = {"matmul": width_in * width_out, "relu": 0, "layernorm": 2 * width_in}[node.op]
        assert node.attrs["flops"] == flops
        assert node.mem_bytes == 4 * params
        assert node.attrs["bytes"] == graph.nodes[prev].out_bytes + node.out_bytes + 4 * params
        # The reference device: V100-class, 15.7 TFLOP/s fp32, 900 GB/s, 5 us per launch.
        expected = max(flops / 15.7e12, node.attrs["bytes"] / 900e9) + 5e-6
        assert node.cost == pytest.approx(expected, rel=1e-12)


def test_cifar10_conv_flops_follow_their_shapes():
    graph = generate("cifar10", seed=4)
    convs = [node for node in graph.nodes if node.op in ("conv_1x1", "conv_3x3")]
    assert convs
    for node in convs:
        (src,) = pred_names(graph, node.name)
        c_in = graph.node(src).attrs["shape"][1]
        batch, c_out, h, w = node.attrs["shape"]
        k = int(node.op[-1])
        assert node.attrs["flops"] == 2 * batch * h * w * c_in * c_out * k * k


def test_unrolled_weights_are_counted_once():
    graph = generate("ptb", seed=0)
    assert graph.node("step0/x_proj").mem_bytes > 0
    assert graph.node("step1/x_proj").mem_bytes == 0
    # Later steps still read the weights, so they cost as much.
    assert graph.node("step1/x_proj").cost == graph.node("step0/x_proj").cost


# ------------------------------------------------------------ family structure
def test_fork_join_has_the_requested_branches_per_stage():
    graph = generate("fork_join", n=60, seed=1, branches=3, stages=4)
    fork = "input"
    for s in range(4):
        assert len(graph.successors(graph.index(fork))) == 3
        assert len(pred_names(graph, f"stage{s}/join")) == 3
        for j in range(3):
            assert pred_names(graph, f"stage{s}/branch{j}/layer0") == [fork]
        fork = f"stage{s}/join"


def test_layered_edges_respect_layers():
    reach, max_fan_in = 2, 3
    graph = generate("layered", n=300, seed=5, reach=reach, max_fan_in=max_fan_in)

    def layer(v: int) -> int:
        return int(graph.names[v].split("/")[0].removeprefix("layer"))

    for v in range(graph.num_nodes):
        preds = [layer(p) for p in graph.predecessors(v)]
        if layer(v) == 0:
            assert preds == []
        else:
            assert layer(v) - 1 in preds
            assert all(layer(v) - reach <= p < layer(v) for p in preds)
            assert len(preds) <= max_fan_in


def test_series_parallel_runs_from_one_input_to_one_output():
    graph = generate("series_parallel", n=80, seed=6)
    g = graph.to_networkx()
    assert [v for v in g if g.in_degree(v) == 0] == ["input"]
    assert [v for v in g if g.out_degree(v) == 0] == ["output"]
    assert nx.descendants(g, "input") == set(g) - {"input"}


def test_cifar10_cells_read_the_two_previous_cells():
    graph = generate("cifar10", seed=2)
    cells = sorted({int(name.split("/")[0][4:]) for name in graph.names if name.startswith("cell")})
    assert len(cells) >= 3
    outputs = {-2: "stem", -1: "stem"} | {i: f"cell{i}/out" for i in cells}
    for i in cells:
        assert pred_names(graph, f"cell{i}/pre0") == [outputs[i - 2]]
        assert pred_names(graph, f"cell{i}/pre1") == [outputs[i - 1]]
        # Nothing else in the cell reads from outside it.
        inside = [n for n in graph.names if n.startswith(f"cell{i}/") and "/pre" not in n]
        assert all(p.startswith(f"cell{i}/") for n in inside for p in pred_names(graph, n))


def test_cifar10_reductions_halve_the_image():
    graph = generate("cifar10", seed=0, reductions=2)
    assert graph.node("stem").attrs["shape"][2] == 32
    (last,) = pred_names(graph, "head/pool")
    assert last.endswith("/out")
    assert graph.node("head/pool").attrs["shape"][1] == graph.node(last).attrs["shape"][1]
    assert graph.node(last).attrs["shape"][2] == 8
    spatial = {graph.node(n).attrs["shape"][2] for n in graph.names if n.endswith("/out")}
    assert spatial == {32, 16, 8}


def test_ptb_steps_are_chained_through_the_hidden_state():
    graph = generate("ptb", seed=3)
    steps = sum(name.endswith("/h") for name in graph.names)
    assert steps >= 2
    previous = "h_init"
    for t in range(steps):
        assert previous in pred_names(graph, f"step{t}/h_proj")
        assert previous in pred_names(graph, f"step{t}/node0")
        assert nx.has_path(graph.to_networkx(), f"step{t}/x", f"step{t}/h")
        previous = f"step{t}/h"


def test_nmt_attention_reads_every_top_encoder_output():
    layers = 3
    graph = generate("nmt", seed=1, layers=layers)
    steps = sum(name.startswith("decoder/") and name.endswith("/x") for name in graph.names)
    memory = {f"encoder/t{s}/l{layers - 1}/h" for s in range(steps)}
    assert steps >= 2
    for t in range(steps):
        assert memory <= set(pred_names(graph, f"decoder/t{t}/attn_scores"))
        assert memory <= set(pred_names(graph, f"decoder/t{t}/attn_context"))
    # The decoder starts from the encoder's final state of each layer.
    for layer in range(layers):
        last = f"encoder/t{steps - 1}/l{layer}"
        assert f"{last}/h" in pred_names(graph, f"decoder/t0/l{layer}/gates")
        assert f"{last}/c" in pred_names(graph, f"decoder/t0/l{layer}/c")


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: generate("nope"), r"unknown graph family 'nope'; known: .*chain.*layered"),
        (lambda: generate("chain", n=1), r"'chain' needs an integer n >= 2, got 1"),
        (lambda: generate("chain", n=50.0), r"integer n"),
        (lambda: generate("cifar10", n=20), r"n >= 23 with blocks=5, got 20"),
        (lambda: generate("fork_join", n=10), r"n >= 16 with branches=4, stages=3, got 10"),
        (lambda: generate("chain", widht=3), r"unknown option\(s\) 'widht' .*: n, seed, batch"),
        (lambda: generate("fork_join", branches=-1), r"'branches' .* must be >= 0, got -1"),
        (lambda: generate("fork_join", branches=0), r"'branches' .* must be >= 1, got 0"),
        (lambda: generate("chain", batch=2.5), r"'batch' .* must be an integer"),
        (lambda: generate("layered", layers=1), r"'layers' .* must be >= 2"),
        (lambda: generate("layered", n=5, layers=8), r"n >= 8 with layers=8, got 5"),
        (lambda: generate("series_parallel", parallel_prob=1.5), r"'parallel_prob' .*<= 1"),
        (lambda: generate("series_parallel", parallel_prob=math.nan), r"finite number"),
        (lambda: generate("cifar10", reductions=5), r"'reductions' .*<= 4"),
        (lambda: generate("chain", seed=-1), r"seed must be a non-negative integer"),
        (lambda: family("chain", count=0), r"count must be a positive integer"),
    ],
)
def test_bad_input_names_the_problem(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


# ------------------------------------------------------------------- user families
@pytest.fixture
def scratch_registry():
    """Let a test register families without leaking them into other tests."""
    with FAMILIES.scope():
        yield


def test_register_family_adds_a_family_generate_can_use(scratch_registry):
    @register_family("diamond", default_n=4, min_n=3)
    def diamond(rng, n, *, width=64):
        b = GraphBuilder()
        top = b.add("top", "input", shape=(8, width))
        mids = [
            b.add(f"mid{i}", "relu", [top], shape=(8, width), flops=8 * width) for i in range(n - 2)
        ]
        b.add("bottom", "add", mids, shape=(8, width), flops=8 * width * len(mids))
        return b.parts()

    assert FAMILIES["diamond"].options == {"width": 64}
    graph = generate("diamond", n=6, seed=2, width=128)
    assert_well_formed(graph)
    assert graph.num_nodes == 6
    assert graph.name == "diamond-n6-s2"
    assert graph.meta["params"] == {"n": 6, "width": 128}
    assert len(family("diamond", count=4)) == 4
    with pytest.raises(ConfigError, match="unknown option"):
        generate("diamond", depth=2)
    with pytest.raises(ConfigError, match="already registered"):
        register_family("diamond", default_n=4)(diamond)


def test_register_family_needs_defaults_for_options(scratch_registry):
    def no_default(rng, n, *, width):
        return GraphBuilder().parts()

    with pytest.raises(ConfigError, match=r"'width' .* needs a default"):
        register_family("broken", default_n=4)(no_default)


def test_register_family_with_a_min_n_rule(scratch_registry):
    def smallest(*, arms: int) -> int:
        return arms + 2

    @register_family("star", default_n=10, min_n=smallest)
    def star(rng, n, *, arms=3, width=64):
        b = GraphBuilder()
        hub = b.add("hub", "input", shape=(8, width))
        ends = [b.add(f"arm{i}", "relu", [hub], shape=(8, width)) for i in range(n - 2)]
        b.add("out", "add", ends[:arms] or [hub], shape=(8, width))
        return b.parts()

    spec = FAMILIES["star"]
    assert (spec.min_n, spec.min_n_options) == (5, ("arms",))
    assert generate("star", n=9, arms=7).num_nodes == 9
    with pytest.raises(ConfigError, match=r"'star' needs an integer n >= 9 with arms=7, got 8"):
        generate("star", n=8, arms=7)
    with pytest.raises(ConfigError, match=r"needs 1 <= min_n <= default_n, got min_n=12"):
        register_family("wide", default_n=10, min_n=lambda *, arms: arms + 9)(star)
