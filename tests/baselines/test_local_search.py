"""local_search: hill climbing on the simulator."""

import numpy as np
import pytest

from placerl.baselines import solve
from placerl.cluster import Cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
@pytest.mark.parametrize("init", ["m_topo", "round_robin"])
def test_never_worse_than_its_start(init, objective):
    graph, cluster = load_graph("synthetic:cifar10?n=60&seed=0"), Cluster.preset("gpu4_pcie")
    start = solve(init, graph, cluster, objective).runtime
    result = solve("local_search", graph, cluster, objective, init=init, time_limit=5.0)
    assert result.runtime <= start
    assert result.info["evaluations"] > 1


def test_starts_from_a_given_placement_and_improves_it():
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    start = np.zeros(graph.num_nodes, dtype=int)
    result = solve("local_search", graph, cluster, "pipeline", init=start)
    assert result.runtime < solve("single_device", graph, cluster, "pipeline").runtime


def test_groups_move_together():
    nodes = [{"name": f"n{i}", "cost": 1.0, "group": "g" if i % 2 else None} for i in range(6)]
    result = solve("local_search", CompGraph(nodes), Cluster.preset("homogeneous", n_devices=3),
                   "pipeline")  # fmt: skip
    assert len(set(result.placement[1::2])) == 1 and result.feasible


def test_a_local_optimum_ends_the_search():
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    result = solve("local_search", graph, cluster, "pipeline", max_rounds=1000, time_limit=60.0)
    assert result.info["rounds"] < 1000


@pytest.mark.parametrize(
    ("init", "message"),
    [
        ("local_search", "option 'init' cannot be 'local_search' itself"),
        ([0, 1], "option 'init' is not a placer name or placement"),
        ("nope", "unknown placer 'nope'"),
    ],
)
def test_bad_init_is_named(init, message):
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    with pytest.raises(ConfigError, match=message):
        solve("local_search", graph, cluster, init=init)


def test_bad_limits_are_named():
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    with pytest.raises(ConfigError, match="local_search: option 'time_limit' must be a number > 0"):
        solve("local_search", graph, cluster, time_limit=0)
