"""The strategy cost model: hand-checked costs of a linear layer and a convolution in every
configuration, layouts and redistribution, training collectives, and bad input."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from placerl.cluster import homogeneous
from placerl.devices import LAUNCH_OVERHEAD
from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import CompGraph
from placerl.graph.passes import with_backward
from placerl.graph.torch_import import OPTIMIZER_STATES, from_module
from placerl.sim import CostModel, StrategySpace
from placerl.sim.strategy import configurations
from placerl.sim.strategy.cost import STATE_COPIES

BW, LAT = 1e9, 1e-5
CLUSTER = homogeneous(4, bandwidth=BW, latency=LAT)


def all_reduce(m, nbytes):
    return 0.0 if m == 1 else 2 * (m - 1) / m * nbytes / BW + 2 * (m - 1) * LAT


def compute(duration, parts):
    launch = min(duration, LAUNCH_OVERHEAD)
    return launch + (duration - launch) / parts


def strategy_for(model, config_of):
    """A strategy giving each named node's variable the configuration ``config_of[name]``."""
    space = model.prepared.space
    per_variable = np.zeros(space.num_variables, dtype=np.int64)
    for name, wanted in config_of.items():
        i = space.variable_of[model.graph.index(name)]
        per_variable[i] = next(
            k
            for k, c in enumerate(space.configs[i])
            if all(c.get(d, 1) == wanted.get(d, 1) for d in c)
        )
    return space.expand(per_variable)


@pytest.fixture(scope="module")
def linear():
    return from_module(nn.Linear(16, 32), (torch.randn(8, 16),))  # b=8, k=16, n=32


@pytest.fixture(scope="module")
def conv():
    return from_module(nn.Conv2d(4, 8, 3, padding=1), (torch.randn(4, 4, 6, 6),))  # b=4 n=8 k=4


def test_configurations_split_every_dim_by_divisors_of_p_with_a_product_dividing_p():
    found = configurations({"b": 8, "n": 32, "k": 16}, 4)
    assert found[0] == {"b": 1, "n": 1, "k": 1}
    assert len(found) == 1 + 3 + 6  # products 1, 2 (one of 3 dims) and 4 (4 or 2x2)
    assert all(4 % math.prod(c.values()) == 0 for c in found)
    assert {"b": 2, "n": 1, "k": 2} in found and {"b": 4, "n": 1, "k": 1} in found
    assert configurations({"b": 6, "n": 3}, 4) == [{"b": 1, "n": 1}, {"b": 2, "n": 1}]


def test_a_linear_layer_costs_what_the_formulas_give_in_every_configuration(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    v = linear.index("linear")
    duration, out_bytes = model.durations[v, 0], 8 * 32 * 4
    configs = model.prepared.space.configs[model.prepared.space.variable_of[v]]
    assert len(configs) == 10  # s has size 1: b, n, k only
    for config in configs:
        b, n, k = config["b"], config["n"], config["k"]
        result = model.evaluate(strategy_for(model, {"linear": config}))
        # The input is unsplit (replicated everywhere): no redistribution.
        expected_comm = all_reduce(k, out_bytes / (b * n))
        assert result.busy[0] == pytest.approx(compute(duration, b * n * k), rel=1e-12)
        assert result.comm[0] == pytest.approx(expected_comm, rel=1e-12, abs=1e-18)
        assert result.runtime == pytest.approx(result.busy[0] + result.comm[0])


def test_a_row_parallel_linear_all_reduces_its_output_by_hand(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    result = model.evaluate(strategy_for(model, {"linear": {"k": 4}}))
    # 8 x 32 float32 outputs = 1,024 bytes of partial sums over 4 devices.
    assert result.comm[0] == pytest.approx(2 * 3 / 4 * 1024 / 1e9 + 6 * 1e-5)


def test_redistribution_moves_what_the_consumer_lacks_by_hand(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    # The input is split by batch 4 ways; a column-parallel linear needs it whole: each
    # device holds a quarter of the 8 x 16 x 4 = 512 bytes and receives the other 384.
    result = model.evaluate(strategy_for(model, {"input": {"b": 4}, "linear": {"n": 4}}))
    assert result.comm[0] == pytest.approx(1e-5 + 384 / 1e9)
    # Split the same way: nothing moves.
    same = model.evaluate(strategy_for(model, {"input": {"b": 4}, "linear": {"b": 4}}))
    assert same.comm[0] == 0.0
    # Half as finely: each device already has its half... of which it holds a quarter.
    half = model.evaluate(strategy_for(model, {"input": {"b": 4}, "linear": {"b": 2}}))
    assert half.comm[0] == pytest.approx(1e-5 + 128 / 1e9)


def test_a_convolution_costs_what_the_formulas_give_in_every_configuration(conv):
    model = CostModel(conv, CLUSTER, "strategy")
    v = conv.index("conv2d")
    duration, out_bytes = model.durations[v, 0], 4 * 8 * 6 * 6 * 4
    space = model.prepared.space
    assert space.dims[space.variable_of[v]] == {"b": 4, "n": 8, "k": 4}
    for config in space.configs[space.variable_of[v]]:
        b, n, k = config["b"], config["n"], config["k"]
        result = model.evaluate(strategy_for(model, {"conv2d": config}))
        assert result.busy[0] == pytest.approx(compute(duration, b * n * k), rel=1e-12)
        assert result.comm[0] == pytest.approx(all_reduce(k, out_bytes / (b * n)), rel=1e-12)


def test_training_all_reduces_gradients_over_the_replicas_and_pays_edges_twice(linear):
    training = with_backward(from_module(nn.Linear(16, 32), (torch.randn(8, 16),), training=True))
    model = CostModel(training, CLUSTER, "strategy")
    weight_bytes = (16 * 32 + 32) * 4
    v = training.index("linear")
    both = model.durations[v, 0] + model.durations[training.index("linear/grad"), 0]
    data = model.evaluate(strategy_for(model, {"linear": {"b": 4}}))
    assert data.comm[0] == pytest.approx(all_reduce(4, weight_bytes))
    assert data.busy[0] == pytest.approx(
        compute(model.durations[v, 0], 4)
        + compute(model.durations[training.index("linear/grad"), 0], 4)
    )
    assert both > model.durations[v, 0]
    # 2 replicas all-reduce half the gradients; the 2 column halves all-reduce the input's
    # gradient (8 x 16 floats = 512 bytes, a half batch each: 256).
    hybrid = model.evaluate(strategy_for(model, {"linear": {"b": 2, "n": 2}}))
    assert hybrid.comm[0] == pytest.approx(all_reduce(2, weight_bytes / 2) + all_reduce(2, 256))
    # Row-parallel: the output's partial sums forward; the input gradient is already split.
    row = model.evaluate(strategy_for(model, {"linear": {"k": 4}}))
    assert row.comm[0] == pytest.approx(all_reduce(4, 8 * 32 * 4))
    # Column-parallel: nothing forward; the input gradient's partial sums backward.
    column = model.evaluate(strategy_for(model, {"linear": {"n": 4}}))
    assert column.comm[0] == pytest.approx(all_reduce(4, 512))
    moved = model.evaluate(strategy_for(model, {"input": {"b": 4}, "linear": {"n": 4}}))
    assert moved.comm[0] == pytest.approx(2 * (1e-5 + 384 / 1e9) + all_reduce(4, 512))


def test_followers_take_their_producers_configuration_and_layout():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 8)

        def forward(self, x):
            return self.fc2(self.fc1(x).view(4, 2, 16).reshape(8, 16))

    graph = from_module(Block(), (torch.randn(8, 8),))
    space = StrategySpace(graph, 4)
    leader = {graph.names[v]: graph.names[space.leader[v]] for v in range(graph.num_nodes)}
    assert leader["view"] == leader["reshape"] == "fc1/linear"
    assert leader["fc2/linear"] == "fc2/linear"
    model = CostModel(graph, CLUSTER, "strategy")
    # Megatron's pair: fc1 column-parallel, fc2 row-parallel: only fc2's all-reduce.
    result = model.evaluate(strategy_for(model, {"fc1/linear": {"n": 4}, "fc2/linear": {"k": 4}}))
    assert result.comm[0] == pytest.approx(all_reduce(4, 8 * 8 * 4))


def test_memory_per_device_shards_parameters_by_their_split(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    whole = model.evaluate(strategy_for(model, {"linear": {}})).memory[0]
    assert whole == (16 * 32 + 32) * 4
    assert model.evaluate(strategy_for(model, {"linear": {"b": 4}})).memory[0] == whole
    assert model.evaluate(strategy_for(model, {"linear": {"n": 4}})).memory[0] == whole / 4
    tight = homogeneous(4, memory=whole / 2, bandwidth=BW, latency=LAT)
    assert not CostModel(linear, tight, "strategy").evaluate(np.zeros(2, int)).feasible


def test_training_memory_shards_parameter_state_and_splits_saved_activations():
    graph = with_backward(from_module(nn.Linear(16, 32), (torch.randn(8, 16),), training=True))
    model = CostModel(graph, CLUSTER, "strategy")
    state, saved = (16 * 32 + 32) * 4 * STATE_COPIES, 8 * 32 * 4
    assert graph.nodes[graph.index("linear")].mem_bytes == state + saved
    memory = {
        name: model.evaluate(strategy_for(model, {"linear": config})).memory[0]
        for name, config in {
            "whole": {},
            "data": {"b": 4},
            "row": {"k": 2},
            "column": {"n": 4},
        }.items()
    }
    inputs = graph.nodes[graph.index("input")].mem_bytes  # the input's saved copy, unsplit
    assert memory["whole"] == state + saved + inputs
    assert memory["data"] == state + saved / 4 + inputs  # replicated state, a quarter batch
    assert memory["row"] == state / 2 + saved + inputs  # the whole output on every device
    assert memory["column"] == state / 4 + saved / 4 + inputs
    assert STATE_COPIES == 2 + OPTIMIZER_STATES


def test_one_producer_feeding_two_operands_is_charged_for_both():
    class Square(nn.Module):
        def forward(self, x):
            r = torch.relu(x)
            return r @ r

    class Pair(nn.Module):
        def forward(self, x, y):
            return torch.relu(x) @ torch.relu(y)

    square = from_module(Square(), (torch.randn(2, 8, 8),))
    pair = from_module(Pair(), (torch.randn(2, 8, 8), torch.randn(2, 8, 8)))
    costs = []
    for graph in (square, pair):
        model = CostModel(graph, CLUSTER, "strategy")
        wanted = {n: {"s": 2} for n in graph.names if n.startswith(("relu", "matmul"))}
        costs.append(model.evaluate(strategy_for(model, wanted)).comm[0])
    # The right operand needs all rows: half of a relu's 2 x 8 x 8 floats moves either way.
    assert costs[0] == costs[1] == pytest.approx(1e-5 + 256 / 1e9)


# ------------------------------------------------------------------------- bad input
def test_an_op_with_no_recorded_shape_is_named():
    graph = CompGraph([{"name": "a", "cost": 1.0, "op": "linear"}], [])
    with pytest.raises(GraphError, match="node 'a' has no recorded shape"):
        CostModel(graph, CLUSTER, "strategy")


def test_p_must_be_a_positive_integer(linear):
    for p in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="p must be a positive integer"):
            StrategySpace(linear, p)


def test_a_configuration_outside_the_nodes_valid_set_is_refused(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    with pytest.raises(
        PlacementError,
        match="configuration 10 is outside node 'linear'.s "
        r"valid set 0\.\.9 \(linear over",
    ):
        model.evaluate([0, 10])
    with pytest.raises(PlacementError, match="expected \\(2,\\)"):
        model.evaluate([0])
    with pytest.raises(PlacementError, match="integer configuration indices"):
        model.evaluate(["a", "b"])


def test_a_follower_must_take_its_variables_configuration():
    graph = from_module(nn.Sequential(nn.Linear(8, 8), nn.Flatten()), (torch.randn(4, 8),))
    model = CostModel(graph, CLUSTER, "strategy")
    assert graph.names[-1].endswith("flatten")
    with pytest.raises(
        PlacementError, match="follows '0/linear' and must take its configuration 1, got 0"
    ):
        model.evaluate([0, 1, 0])


def test_graphs_whose_flops_sit_in_ops_without_a_rule_are_refused():
    graph = from_module(
        nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(4, 8),), granularity="module"
    )
    message = r"split rules for ops holding only 0% .* ops without a rule: Linear"
    with pytest.raises(GraphError, match=message):
        CostModel(graph, CLUSTER, "strategy")


def test_a_backward_node_without_its_forward_node_is_named():
    data = with_backward(from_module(nn.Linear(2, 2), (torch.randn(1, 2),))).to_dict()
    for node in data["nodes"]:
        node.get("attrs", {}).pop("forward", None)
    with pytest.raises(GraphError, match="backward node 'linear/grad' names no forward node"):
        CostModel(CompGraph.from_dict(data), CLUSTER, "strategy")


def test_mixed_devices_are_refused():
    with pytest.raises(ConfigError, match="needs identical devices"):
        CostModel(from_module(nn.Linear(2, 2), (torch.randn(1, 2),)), "cpu_gpu", "strategy")


def test_every_configuration_combination_of_a_tiny_graph_is_scored_consistently(linear):
    model = CostModel(linear, CLUSTER, "strategy")
    space = model.prepared.space
    for combo in itertools.product(*(range(len(c)) for c in space.configs)):
        result = model.evaluate(space.expand(combo))
        assert result.feasible and result.runtime == result.busy[0] + result.comm[0]
        assert np.all(result.busy == result.busy[0])
