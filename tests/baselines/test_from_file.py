"""The ``file`` placer: a placement made elsewhere, scored by placerl."""

import json

import numpy as np
import pytest

from placerl.baselines import PLACERS, place
from placerl.cluster import homogeneous
from placerl.errors import PlacementError
from placerl.graph import load_graph

GRAPH = "synthetic:chain?n=6&seed=0"


@pytest.fixture
def problem():
    return load_graph(GRAPH), homogeneous(3)


def _write(tmp_path, content):
    path = tmp_path / "placement.json"
    path.write_text(json.dumps(content))
    return str(path)


def test_reads_indices_names_and_train_output(tmp_path, problem):
    graph, cluster = problem
    wanted = np.array([0, 0, 1, 1, 2, 2])
    by_op = {op: cluster.devices[d].name for op, d in zip(graph.names, wanted, strict=True)}
    mixed = {op: int(d) for op, d in zip(graph.names, wanted, strict=True)}
    trained = {graph.name: {"runtime": 1.0, "placement": wanted.tolist()}}
    for content in (wanted.tolist(), by_op, mixed, trained):
        placement = place("file", graph, cluster, path=_write(tmp_path, content))
        np.testing.assert_array_equal(placement, wanted)


def test_needs_a_path():
    assert not PLACERS["file"].standalone


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([0, 1], r"places 2 nodes; graph .* has 6"),
        (
            [0, 1, 2, 3, 0, 0],
            r"names device 3; the cluster has gpu:0, gpu:1, gpu:2 \(or indices 0-2\)",
        ),
        ([0, 1, 2, True, 0, 0], r"names device True"),
        ({"nope": 0}, r"places op 'nope', which graph .* does not have"),
        (
            {"other-graph": {"placement": [0]}},
            r"holds placements of graphs other-graph, not of graph",
        ),
        ({"input": 0}, r"does not place op 'layer1' \(5 ops unplaced\)"),
        ("heft", r"holds no placement of graph .*: give a list of device indices"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path, problem, content, message):
    with pytest.raises(PlacementError, match=message):
        place("file", *problem, path=_write(tmp_path, content))


def test_missing_and_broken_files(tmp_path, problem):
    with pytest.raises(PlacementError, match=r"cannot read .*nothing.json"):
        place("file", *problem, path=str(tmp_path / "nothing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(PlacementError, match=r"broken.json is not JSON"):
        place("file", *problem, path=str(broken))
