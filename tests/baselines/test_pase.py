"""PaSE's dynamic program is exact (brute force on small graphs, random tables), its order
keeps tables small, and the expert strategies are what their papers describe."""

import itertools
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from placerl.baselines import InfeasiblePlacementWarning, place, solve
from placerl.baselines.pase import (
    Tables,
    elimination_plan,
    pase_order,
    solve_strategy,
    variable_order,
)
from placerl.cluster import homogeneous
from placerl.errors import ConfigError, PlacementError
from placerl.graph import load_graph
from placerl.graph.passes import with_backward
from placerl.graph.torch_import import from_module
from placerl.sim import CostModel

CLUSTER = homogeneous(4, bandwidth=1e9, latency=1e-5)


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        return self.c(torch.relu(self.a(x)) + self.b(x))


def small_models():
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    return {
        "mlp": from_module(mlp, (torch.randn(8, 8),)),
        "branches": from_module(Branches(), (torch.randn(4, 8),)),
    }


def brute_force(cost):
    best = np.inf
    for combo in itertools.product(*(range(len(c)) for c in cost.space.configs)):
        best = min(best, sum(cost.totals(np.array(combo))[:2]))
    return best


@pytest.mark.parametrize("order", ["pase", "bfs", "topo", "reverse_topo", "dfs_postorder"])
@pytest.mark.parametrize("name", ["mlp", "branches"])
def test_the_dp_equals_brute_force_on_small_graphs(name, order):
    graph = small_models()[name]
    model = CostModel(graph, CLUSTER, "strategy")
    cost = model.prepared
    per_variable, value = solve_strategy(Tables.of(cost), variable_order(cost, order))
    assert value == pytest.approx(brute_force(cost), rel=1e-12)
    assert model.evaluate(cost.space.expand(per_variable)).runtime == pytest.approx(value)


def total(tables, combo):
    out = sum(tables.unary[i][c] for i, c in enumerate(combo))
    return out + sum(m[combo[i], combo[j]] for (i, j), m in tables.pairs.items())


@st.composite
def random_tables(draw):
    n = draw(st.integers(1, 6))
    counts = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
    unary = [rng.integers(0, 5, k).astype(float) for k in counts]  # ties on purpose
    pairs = {(i, j): rng.integers(0, 5, (counts[i], counts[j])).astype(float) for i, j in edges}
    return Tables(unary, pairs), rng.permutation(n)


@settings(max_examples=150, deadline=None)
@given(random_tables())
def test_the_dp_is_exact_in_any_order_on_random_tables(case):
    tables, order = case
    per_variable, value = solve_strategy(tables, order)
    combos = itertools.product(*(range(k) for k in tables.counts))
    assert value == min(total(tables, c) for c in combos)
    assert total(tables, per_variable) == value


@settings(max_examples=100, deadline=None)
@given(random_tables(), st.data())
def test_folded_tables_score_tied_strategies_exactly(case, data):
    tables, _ = case
    n = len(tables.unary)
    into = np.array(
        [
            data.draw(
                st.sampled_from([i] + [j for j in range(i) if tables.counts[j] == tables.counts[i]])
            )
            for i in range(n)
        ]
    )
    for _ in range(n):  # each variable points lower: follow to a representative of itself
        into = into[into]
    folded = tables.folded(into)
    _, index = np.unique(into, return_inverse=True)
    for combo in itertools.product(*(range(k) for k in folded.counts)):
        assert total(folded, combo) == pytest.approx(total(tables, np.array(combo)[index]))


def test_pase_order_keeps_dependent_sets_smaller_than_breadth_first():
    model = CostModel("zoo:inception_v3?variant=small", "gpu8_nvlink", "strategy")
    plans = {
        o: elimination_plan(Tables.of(model.prepared), variable_order(model.prepared, o))
        for o in ("pase", "bfs")
    }
    assert plans["pase"].largest_dependent_set < plans["bfs"].largest_dependent_set
    assert plans["pase"].max_table * 1000 < plans["bfs"].max_table
    assert plans["pase"].total_table <= plans["pase"].max_table * len(plans["pase"].order)


def test_pase_order_closes_a_chain_as_it_goes():
    chain = [set() for _ in range(5)]
    for i in range(4):
        chain[i].add(i + 1)
        chain[i + 1].add(i)
    assert pase_order(chain, np.full(5, 3)).tolist() == [0, 1, 2, 3, 4]


def test_a_table_over_the_limit_names_its_step_and_size():
    model = CostModel(small_models()["branches"], CLUSTER, "strategy")
    message = (
        r"table of .* entries at step \d+ \(a dependent set of \d+ variables\), over max_table=10"
    )
    with pytest.raises(PlacementError, match=message):
        solve("pase_dp", model.graph, CLUSTER, "strategy", max_table=10)


# ---------------------------------------------------------------------------- placers
@pytest.fixture(scope="module")
def transformer():
    return load_graph("zoo:transformer?variant=bert_tiny&training=true")


def test_pase_dp_is_optimal_and_beats_or_ties_the_expert_strategies(transformer):
    cluster = "gpu8_nvlink"
    dp = solve("pase_dp", transformer, cluster, "strategy")
    assert dp.optimal and dp.runtime == pytest.approx(dp.lower_bound)
    assert dp.info["largest_dependent_set"] >= 1 and dp.info["max_table"] >= 1
    for baseline in ("data_parallel", "megatron"):
        assert dp.runtime <= solve(baseline, transformer, cluster, "strategy").runtime + 1e-15
    serial = CostModel(transformer, cluster, "strategy").evaluate(
        np.zeros(transformer.num_nodes, dtype=int)
    )
    assert dp.runtime < serial.runtime


def test_data_parallel_splits_every_batch_by_the_largest_common_degree(transformer):
    strategy = place("data_parallel", transformer, CLUSTER, "strategy")
    space = CostModel(transformer, CLUSTER, "strategy").prepared.space
    for i, v in enumerate(space.variables):
        config = space.config(v, strategy[v])
        assert set(config.values()) <= {1, 2}  # bert_tiny has a batch of 2
        assert config.get("b", 1) == (
            2 if space.dims[i].get("b", 1) % 2 == 0 and space.dims[i].get("b", 1) > 1 else 1
        )


def test_megatron_splits_columns_then_rows(transformer):
    strategy = place("megatron", transformer, CLUSTER, "strategy")
    space = CostModel(transformer, CLUSTER, "strategy").prepared.space

    def config(name):
        v = transformer.index(name)
        return space.config(v, strategy[v])

    t = 2  # bert_tiny has 2 heads
    assert config("layers.0.attn.qkv/linear")["n"] == t
    assert config("layers.0.attn/matmul")["h"] == t
    assert config("layers.0.attn/softmax")["h"] == t
    assert config("layers.0.attn.proj/linear")["k"] == t
    assert config("layers.0.mlp.fc1/linear")["n"] == t
    assert config("layers.0.mlp/gelu")["n"] == t
    assert config("layers.0.mlp.fc2/linear")["k"] == t
    assert config("layers.0.ln1/layer_norm") == {"b": 2, "s": 1}  # data-parallel across 2


# ------------------------------------------------------------------------- bad input
def test_device_placers_and_configuration_placers_do_not_mix():
    graph = small_models()["mlp"]
    message = (
        r"placer 'heft' chooses a device per node, objective 'strategy' takes a "
        r"configuration per node; placers that fit: .*pase_dp"
    )
    with pytest.raises(ConfigError, match=message):
        place("heft", graph, CLUSTER, "strategy")
    with pytest.raises(ConfigError, match="placer 'pase_dp' chooses a configuration per node"):
        place("pase_dp", graph, CLUSTER, "step_time")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_table": 0}, "max_table must be a positive integer, got 0"),
        ({"order": "sideways"}, "unknown order 'sideways'; known: pase, "),
    ],
)
def test_bad_dp_options_are_named(options, message):
    with pytest.raises(ConfigError, match=message):
        solve("pase_dp", small_models()["mlp"], CLUSTER, "strategy", **options)


def test_megatron_refuses_a_degree_that_does_not_divide_the_devices():
    with pytest.raises(ConfigError, match="tensor must divide the 4 devices, got 3"):
        solve("megatron", small_models()["mlp"], CLUSTER, "strategy", tensor=3)


def test_an_order_that_misses_a_variable_is_refused():
    cost = CostModel(small_models()["mlp"], CLUSTER, "strategy").prepared
    with pytest.raises(ConfigError, match="visit each of the 4 variables once"):
        solve_strategy(Tables.of(cost), np.array([0, 1, 1, 2]))


def test_a_strategy_over_memory_is_not_claimed_optimal():
    # The fastest strategy splits the linear by columns but keeps the big input whole.
    graph = with_backward(from_module(nn.Linear(64, 64), (torch.randn(4096, 64),), training=True))
    unsplit = CostModel(graph, CLUSTER, "strategy").evaluate(np.zeros(4, dtype=int))
    tight = homogeneous(4, bandwidth=1e9, latency=1e-5, memory=0.6 * unsplit.memory[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasiblePlacementWarning)
        result = solve("pase_dp", graph, tight, "strategy")
    assert not result.feasible and not result.optimal
    assert result.lower_bound == pytest.approx(result.runtime)


def test_megatron_without_attention_heads_is_data_parallel():
    graph = small_models()["mlp"]
    assert np.array_equal(
        place("megatron", graph, CLUSTER, "strategy"),
        place("data_parallel", graph, CLUSTER, "strategy"),
    )


def test_data_parallel_takes_the_batch_of_the_model_inputs():
    graph = load_graph("zoo:transformer?variant=bert_tiny&batch=8&seq_len=6&training=true")
    strategy = place("data_parallel", graph, CLUSTER, "strategy")
    space = CostModel(graph, CLUSTER, "strategy").prepared.space
    linears = [v for v in space.variables if graph.nodes[v].op == "linear"]
    assert all(space.config(v, strategy[v])["b"] == 4 for v in linears)
    position = graph.index("position_embeddings/embedding")  # [6, 16]: no batch axis
    assert space.config(position, strategy[position])["b"] == 1
