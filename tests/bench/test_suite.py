"""placebench-v1: versioned cases, each in one split, and a researcher's folder as a suite."""

import hashlib
import json

import pytest

from placerl.bench import SPLITS, Case, folder_suite, load_suite
from placerl.bench.case import canonical_spec
from placerl.cluster import load_cluster
from placerl.errors import ConfigError, GraphError
from placerl.graph import CompGraph, load_graph


@pytest.fixture(scope="module")
def suite():
    return load_suite("placebench-v1")


def test_the_suite_is_named_versioned_and_tiered(suite):
    assert (suite.id, suite.name, suite.version) == ("placebench-v1", "placebench", 1)
    assert suite.tiers == ("tiny", "families", "models", "devices", "scale")
    for tier in suite.tiers:  # every tier scores something
        assert suite.select(tier, "test")
    assert len({case.name for case in suite.cases}) == len(suite.cases)


def test_families_lists_each_tiers_families_of_a_split_in_order(suite):
    families = suite.families("test")
    assert tuple(families) == suite.tiers
    assert families["families"] == (
        "families/layered-n80",
        "families/cifar10",
        "families/ptb",
        "families/nmt",
    )
    assert families["devices"] == ("devices/layered-n80",)
    assert "models/msr-bert24_inference" not in families["models"]  # a training family
    assert "models/msr-bert24_inference" in suite.families()["models"]


def test_the_same_name_and_version_always_mean_the_same_cases(suite):
    assert load_suite("placebench-v1") == suite


def _content(spec: str) -> str:
    """A graph's content, its name and metadata aside: two seeds may draw one graph."""
    data = load_graph(spec).to_dict()
    data.pop("name", None), data.pop("meta", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def test_no_graph_is_in_two_splits(suite):
    """By content: nmt draws only its shapes from the seed, so seeds collide."""
    splits: dict[str, set[str]] = {}
    for case in suite.cases:
        # the zoo: one spec per model and size; scale: all test, and slow to draw
        if not case.graph.startswith("zoo:") and case.tier != "scale":
            splits.setdefault(_content(case.graph), set()).add(case.split)
    assert [s for s in splits.values() if len(s) > 1] == []


def test_the_families_keep_the_split_every_recipe_benchmark_used(suite):
    layered = {
        int(c.name.rsplit("-s", 1)[1]): c.split
        for c in suite.select("families")
        if c.name.startswith("families/layered")
    }
    assert {s for s, split in layered.items() if split == "test"} == set(range(24, 32))
    assert {s for s, split in layered.items() if split == "validation"} == set(range(100, 116))
    assert "synthetic:cifar10?seed=0" not in {c.graph for c in suite.cases}  # the main job's


def test_the_scale_tier_is_test_graphs_of_10k_to_100k_nodes(suite):
    cases = suite.select("scale")
    assert {c.split for c in cases} == {"test"}
    assert [load_graph(c.graph).num_nodes for c in cases[:1]] == [10_000]
    assert [c.graph.split("n=")[1].split("&")[0] for c in cases] == ["10000", "50000", "100000"]


def test_the_devices_tier_uses_no_training_cluster(suite):
    training = {c.cluster for c in suite.cases if c.split == "train"}
    assert not training & {c.cluster for c in suite.select("devices")}


def test_every_cluster_and_every_quick_graph_loads(suite):
    for cluster in {c.cluster for c in suite.cases}:
        load_cluster(cluster)
    for case in suite.cases:
        # the zoo imports models (minutes, cached); the scale tier is timed by its benchmark
        if not case.graph.startswith("zoo:") and case.tier != "scale":
            assert load_graph(case.graph).num_nodes <= (40 if case.tier == "tiny" else 600)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda s: load_suite("placebench-v9"),
            "unknown suite 'placebench-v9'; known: placebench-v1",
        ),
        (lambda s: load_suite("placebench"), r"<name>-v<version> \(placebench-v1\)"),
        (lambda s: s.select("huge"), "no tier 'huge'; known: tiny, families, models, devices"),
        (lambda s: s.select(split="dev"), "unknown split 'dev'; known: train, validation, test"),
        (lambda s: s.families("dev"), "unknown split 'dev'; known: train, validation, test"),
        (
            lambda s: s.case("tiny/chain-n99-s0"),
            "no case 'tiny/chain-n99-s0'; cases of tier 'tiny'",
        ),
        (lambda s: Case("x", "t", "holdout", "g", "c"), "split must be one of train, validation"),
        (lambda s: Case("x", "t", "test", "g", "c", "latency"), "objective must be one of"),
    ],
)
def test_unknown_names_fail_with_the_known_ones(suite, call, message):
    with pytest.raises(ConfigError, match=message):
        call(suite)


def test_a_folder_of_graphs_is_a_suite_and_a_bad_file_is_named(tmp_path):
    load_graph("synthetic:layered?n=12&seed=0").save(tmp_path / "a.json")
    load_graph("synthetic:chain?n=8&seed=1").save(tmp_path / "b.json")
    (tmp_path / "notes.json").write_text(json.dumps({"hello": "world"}))
    suite = folder_suite(tmp_path, "placeto?n_devices=2")
    assert [c.name for c in suite.cases] == [f"{tmp_path.name}/{n}" for n in ("a", "b", "notes")]
    assert {c.split for c in suite.cases} == {"test"}
    assert isinstance(load_graph(suite.cases[0].graph), CompGraph)
    with pytest.raises(GraphError, match=r"notes\.json"):
        load_graph(suite.cases[2].graph)
    with pytest.raises(ConfigError, match=r"a\.json' is not a folder"):
        folder_suite(tmp_path / "a.json", "placeto")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"holds no \.json graph file"):
        folder_suite(tmp_path / "empty", "placeto")


def test_a_spec_is_one_graph_whatever_the_order_of_its_options():
    assert canonical_spec("synthetic:layered?seed=3&n=080") == "synthetic:layered?n=80&seed=3"
    assert canonical_spec("zoo:resnet50") == "zoo:resnet50"
    assert SPLITS == ("train", "validation", "test")
