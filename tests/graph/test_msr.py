import json

import pytest

from placerl.errors import GraphError
from placerl.graph import load_graph
from placerl.graph.msr import load_msr, parse_msr
from placerl.msr_format import bundled_msr_dir, msr_names

# Sums of fpgaLatency (all nodes on one accelerator), from the benchmark's README.
TOTALS = {
    "bert24_inference": 92.41,
    "bert24_training": 217.81,
    "gnmt_inference": 182.56,
    "resnet50_inference": 201.45,
    "resnet50_training": 462.38,
    "bert_l-3_inference": 49.35,
    "bert_l-3_training": 122.99,
}
SIZES = {
    "bert24_inference": (32, 55),
    "bert24_training": (64, 110),
    "gnmt_inference": (96, 122),
    "resnet50_inference": (177, 193),
    "resnet50_training": (354, 386),
    "bert_l-3_inference": (235, 250),
    "bert_l-3_training": (600, 817),
}


def test_all_seven_files_ship():
    assert set(msr_names()) == set(TOTALS)


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_bundled_graphs_load(name):
    g = load_graph(f"msr:{name}")
    assert (g.num_nodes, g.num_edges) == SIZES[name]
    assert g.total_cost == pytest.approx(TOTALS[name], abs=0.006)
    assert g.device_kinds == ("accelerator", "cpu")
    assert g.meta["maxFPGAs"] in (3, 6) and g.meta["maxCPUs"] == 1
    assert all(e.time is not None for e in g.edges)


def test_field_mapping():
    g = load_msr("bert24_training")
    node = g.node("node3")
    assert node.cost == 0.696 and node.costs == {"accelerator": 0.696, "cpu": 6.959999999999999}
    assert node.mem_bytes == 131325952.0 and node.group == "color3" and not node.backward
    assert node.attrs["msr_id"] == 3
    assert g.node("node1grad").backward
    assert sum(g.arrays.backward) == 32
    # training graphs colocate each backward node with its forward node
    assert g.node("node1").group == g.node("node1grad").group


def test_nodes_keep_file_order():
    raw = json.loads((bundled_msr_dir() / "bert24_training.json").read_text())
    assert load_msr("bert24_training").names == tuple(n["name"] for n in raw["nodes"])


def test_load_by_path_and_auto_detect(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_tiny()))
    assert load_graph(f"msr:{path}").num_nodes == 2
    assert load_graph(str(path)).name == "mine"


def test_unsupported_and_unnamed_nodes():
    doc = _tiny()
    doc["nodes"][1]["supportedOnFpga"] = 0
    del doc["nodes"][0]["name"]
    g = parse_msr(doc)
    assert g.names == ("n7", "n9")
    assert g.node("n9").costs["accelerator"] == float("inf")


def _tiny():
    node = {
        "supportedOnFpga": 1,
        "cpuLatency": 2.0,
        "fpgaLatency": 1.0,
        "isBackwardNode": 0,
        "size": 10,
    }
    return {
        "maxSizePerFPGA": 100.0,
        "maxFPGAs": 2,
        "maxCPUs": 1,
        "nodes": [{**node, "id": 7, "name": "a"}, {**node, "id": 9, "name": "b"}],
        "edges": [{"sourceId": 7, "destId": 9, "cost": 0.5, "size": 4}],
    }


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("maxFPGAs"), "missing required field\\(s\\): maxFPGAs"),
        (
            lambda d: d["nodes"][0].pop("fpgaLatency"),
            "node #0 is missing required field\\(s\\): fpgaLatency",
        ),
        (lambda d: d["edges"][0].pop("cost"), "edge #0 is missing required field\\(s\\): cost"),
        (lambda d: d["edges"][0].update(destId=99), "edge 7 -> 99 names unknown node id 99"),
        (lambda d: d["nodes"][1].update(id=7), "duplicate node ids: \\[7\\]"),
        (
            lambda d: d["nodes"][0].update(fpgaLatency=-1.0),
            "node 'a' cost for kind 'accelerator' is -1.0",
        ),
        (lambda d: d["edges"].append({"sourceId": 9, "destId": 7, "cost": 0}), "has a cycle"),
        (lambda d: d.update(nodes=[5]), "node #0 must be a JSON object"),
    ],
)
def test_bad_msr_documents(mutate, message):
    doc = _tiny()
    mutate(doc)
    with pytest.raises(GraphError, match=message):
        parse_msr(doc)


def test_unknown_msr_name_lists_bundled():
    with pytest.raises(GraphError, match="not one of the bundled graphs \\(bert24_inference"):
        load_graph("msr:bert_xxl")
