"""Every bad input of the placer layer raises a placerl error naming the problem."""

import re

import pytest

from placerl.baselines import place, solve
from placerl.baselines.references import Reference, parse_placer, reference
from placerl.cluster import homogeneous
from placerl.errors import ClusterError, ConfigError, PlacementError
from placerl.graph import CompGraph

GRAPH = CompGraph([{"name": x, "cost": 1.0} for x in "abc"], [("a", "b"), ("b", "c")], name="g")
CLUSTER = homogeneous(2)

BAD = [
    (
        "unknown placer",
        lambda: solve("hefty", GRAPH, CLUSTER),
        ConfigError,
        "unknown placer 'hefty'; known: ",
    ),
    (
        "placer name of the wrong type",
        lambda: place(3, GRAPH, CLUSTER),
        ConfigError,
        "unknown placer 3",
    ),
    (
        "unknown option",
        lambda: solve("heft", GRAPH, CLUSTER, depth=2),
        ConfigError,
        "unknown option(s) depth for placer 'heft'; known: none",
    ),
    (
        "seed as a bool",
        lambda: solve("random", GRAPH, CLUSTER, seed=True),
        ConfigError,
        "option 'seed' of placer 'random' must be an integer, got True",
    ),
    (
        "seed as a string",
        lambda: solve("random", GRAPH, CLUSTER, seed="1"),
        ConfigError,
        "option 'seed' of placer 'random' must be an integer, got '1'",
    ),
    (
        "negative seed",
        lambda: solve("random", GRAPH, CLUSTER, seed=-1),
        ConfigError,
        "random: option 'seed' must be an integer >= 0, got -1",
    ),
    (
        "boolean option as text",
        lambda: solve("milp", GRAPH, CLUSTER, contiguous="no"),
        ConfigError,
        "option 'contiguous' of placer 'milp' must be true or false, got 'no'",
    ),
    (
        "boolean option as None",
        lambda: solve("tarnawski_dp", GRAPH, CLUSTER, merge_free=None),
        ConfigError,
        "option 'merge_free' of placer 'tarnawski_dp' must be true or false, got None",
    ),
    (
        "time limit of zero",
        lambda: solve("local_search", GRAPH, CLUSTER, time_limit=0),
        ConfigError,
        "local_search: option 'time_limit' must be a number > 0, got 0",
    ),
    (
        "rounds as a float",
        lambda: solve("local_search", GRAPH, CLUSTER, max_rounds=2.5),
        ConfigError,
        "option 'max_rounds' of placer 'local_search' must be an integer, got 2.5",
    ),
    (
        "time limit as text",
        lambda: solve("local_search", GRAPH, CLUSTER, time_limit="2"),
        ConfigError,
        "option 'time_limit' of placer 'local_search' must be a number, got '2'",
    ),
    (
        "unknown objective",
        lambda: solve("heft", GRAPH, CLUSTER, "energy"),
        ConfigError,
        "unknown objective 'energy'",
    ),
    (
        "graph of the wrong type",
        lambda: solve("heft", 7, CLUSTER),
        ConfigError,
        "a graph spec must be a string, Path or CompGraph, got int",
    ),
    (
        "cluster of the wrong type",
        lambda: solve("heft", GRAPH, 7),
        ClusterError,
        "a cluster spec must be a Cluster, a preset spec",
    ),
    (
        "cluster option of the wrong type",
        lambda: place("heft", GRAPH, "placeto?n_devices=two"),
        ClusterError,
        "option 'n_devices' of cluster preset 'placeto' must be an integer",
    ),
    (
        "node that runs nowhere",
        lambda: solve(
            "heft", CompGraph([{"name": "t", "cost": 1.0, "costs": {"gpu": float("inf")}}]), CLUSTER
        ),
        PlacementError,
        "node 't' cannot run on any device of the cluster",
    ),
    (
        "graph too big for the cluster",
        lambda: solve(
            "heft",
            CompGraph([{"name": "m", "cost": 1.0, "mem_bytes": 9.0}]),
            homogeneous(2, memory=4.0),
        ),
        PlacementError,
        "node 'm' fits on no device: it needs 9 bytes",
    ),
    # placer specs and references
    (
        "placer spec of the wrong type",
        lambda: parse_placer(None),
        ConfigError,
        "a placer spec must be a string like 'heft', got None",
    ),
    (
        "unknown placer in a spec",
        lambda: parse_placer("oracle"),
        ConfigError,
        "unknown placer 'oracle'; known: ",
    ),
    (
        "unknown option in a spec",
        lambda: parse_placer("heft?depth=3"),
        ConfigError,
        "unknown option(s) depth for placer 'heft'; known: none",
    ),
    (
        "option twice in a spec",
        lambda: parse_placer("random?seed=1&seed=2"),
        ConfigError,
        "placer spec 'random?seed=1&seed=2' gives option 'seed' more than once",
    ),
    (
        "bad option value in a spec",
        lambda: reference(GRAPH, CLUSTER, placer="random?seed=-1"),
        ConfigError,
        "random: option 'seed' must be an integer >= 0, got -1",
    ),
    (
        "option of the wrong type in a spec",
        lambda: parse_placer("milp?contiguous=no"),
        ConfigError,
        "option 'contiguous' of placer 'milp' must be true or false, got 'no'",
    ),
    (
        "use_cache as text",
        lambda: reference(GRAPH, CLUSTER, use_cache="no"),
        ConfigError,
        "use_cache must be True or False, got 'no'",
    ),
    (
        "reference for another graph",
        lambda: reference(GRAPH, CLUSTER).check_matches(
            CompGraph([{"name": "z", "cost": 2.0}], name="z"), CLUSTER, "step_time"
        ),
        ConfigError,
        "was computed for another graph than 'z'",
    ),
    (
        "reference for another cluster and objective",
        lambda: reference(GRAPH, CLUSTER).check_matches(GRAPH, homogeneous(3), "pipeline"),
        ConfigError,
        "another cluster and objective than 'g'",
    ),
    (
        "reference document without fields",
        lambda: Reference.from_dict({"placer": "heft"}),
        ConfigError,
        "not a reference document",
    ),
]


@pytest.mark.parametrize(("case", "call", "error", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_placer_input_raises_a_named_error(case, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()
