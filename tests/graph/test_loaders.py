import pytest

from placerl.errors import ConfigError, GraphError
from placerl.graph import CompGraph, load_graph, register_graph_source
from placerl.graph.loaders import GRAPH_SOURCES, parse_spec


def test_parse_spec_types():
    assert parse_spec("synthetic:layered?n=200&seed=0&p=0.5&training=true&name=x") == (
        "synthetic",
        "layered",
        {"n": 200, "seed": 0, "p": 0.5, "training": True, "name": "x"},
    )
    assert parse_spec("msr:bert24_training") == ("msr", "bert24_training", {})


def test_compgraph_and_json_paths(tmp_path):
    g = CompGraph([{"name": "a", "cost": 1.0}], name="tiny")
    assert load_graph(g) is g
    path = g.save(tmp_path / "tiny.json")
    assert load_graph(path) == g
    assert load_graph(str(path)) == g


def test_user_sources():
    with GRAPH_SOURCES.scope():

        @register_graph_source("test_single")
        def single(body, cost=1.0):
            return CompGraph([{"name": body, "cost": cost}])

        assert load_graph("test_single:op?cost=2.5").node(0).cost == 2.5
        with pytest.raises(
            ConfigError, match="bad options in graph spec 'test_single:op\\?speed=2'"
        ):
            load_graph("test_single:op?speed=2")


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("layered", ConfigError, "has no scheme"),
        ("nope:thing", ConfigError, "unknown graph source 'nope'; known: msr, synthetic, zoo"),
        ("synthetic:layered?n", ConfigError, "malformed query"),
        ("zoo:alexnet", ConfigError, "unknown zoo model 'alexnet'"),
        ("missing/graph.json", GraphError, "graph file not found: missing/graph.json"),
        (42, ConfigError, "must be a string, Path or CompGraph"),
    ],
)
def test_bad_specs(spec, error, message):
    with pytest.raises(error, match=message):
        load_graph(spec)


def test_invalid_json_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2")
    with pytest.raises(GraphError, match="is not valid JSON"):
        load_graph(path)
