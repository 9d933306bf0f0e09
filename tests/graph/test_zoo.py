"""Tests of the model zoo and its graph source (placerl.graph.zoo, ``zoo:`` specs)."""

from __future__ import annotations

import time

import pytest
import torch

from placerl.errors import ConfigError
from placerl.graph import load_graph
from placerl.graph.passes import Coarsening
from placerl.graph.zoo import ZOO, build_model, cache_dir, load_zoo

MODELS = ("inception_v3", "resnet50", "gnmt", "transformer", "nasnet")
SMALL = {
    "inception_v3": "small",
    "resnet50": "small",
    "gnmt": "small",
    "transformer": "gpt2_tiny",
    "nasnet": "small",
}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache directory."""
    monkeypatch.setenv("PLACERL_CACHE", str(tmp_path))
    return tmp_path / "zoo"


def count_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_the_zoo_has_the_classic_benchmarks():
    assert set(MODELS) <= set(ZOO)
    for name in MODELS:
        entry = ZOO[name]
        assert entry.doc and entry.variants
        assert set(entry.published_params) <= set(entry.variants)


@pytest.mark.parametrize(
    ("model", "variant", "published"),
    [
        ("resnet50", "resnet50", 25_557_032),
        ("inception_v3", "inception_v3", 23_834_568),  # without the auxiliary head
        ("transformer", "bert_base", 109_482_240),
        ("transformer", "gpt2_small", 124_439_808),
    ],
)
def test_parameter_counts_match_the_published_models(model, variant, published):
    module, _ = build_model(model, variant)  # on meta: nothing allocated
    assert count_params(module) == published == ZOO[model].published_params[variant]


@pytest.mark.parametrize("variant", ["mobile", "large"])
def test_nasnet_is_within_one_percent_of_nasnet_a(variant):
    module, _ = build_model("nasnet", variant)
    assert count_params(module) == pytest.approx(ZOO["nasnet"].published_params[variant], rel=0.01)


def test_gnmt_has_eight_layers_each_side():
    module, (src, tgt) = build_model("gnmt")
    assert len(module.encoder.layers) == len(module.decoder.layers) == 8
    assert module.encoder.layers[0].bidirectional
    assert src.shape == tgt.shape == (128, 50)


@pytest.mark.parametrize("model", MODELS)
def test_small_variants_load_and_cache(model, cache, monkeypatch):
    spec = f"zoo:{model}?variant={SMALL[model]}"
    g = load_graph(spec)
    assert g.meta["source"] == "zoo" and g.meta["model"] == model
    assert g.meta["variant"] == SMALL[model]
    assert g.meta["params"] == count_params(build_model(model, SMALL[model])[0])
    assert g.num_nodes > 10 and g.total_cost > 0
    assert len(list(cache.glob(f"{model}-*.json"))) == 1
    import placerl.graph.zoo as zoo

    def no_import(*args, **kwargs):
        raise AssertionError("imported again instead of read from the cache")

    monkeypatch.setattr(zoo, "_import", no_import)
    assert load_graph(spec) == g


def test_training_graph_with_max_nodes(cache):
    g = load_graph("zoo:resnet50?variant=small&training=true&max_nodes=10&batch=4")
    assert g.num_nodes <= 10
    assert g.meta["training"] is True and g.meta["backward"] is True
    backward = [n for n in g.nodes if n.backward]
    assert len(backward) == g.num_nodes // 2
    groups = {n.group for n in g.nodes if not n.backward}
    assert {n.group for n in backward} == groups
    assert len(list(cache.glob("*.json"))) == 2  # the import and the coarse training graph


def test_coarse_zoo_graphs_expand_to_every_op():
    full = load_graph("zoo:transformer?variant=bert_tiny")
    coarse = load_graph("zoo:transformer?variant=bert_tiny&max_nodes=8&coarsen=chains")
    mapping = Coarsening.between(full, coarse)
    assert mapping.expand(range(coarse.num_nodes)).shape == (full.num_nodes,)
    assert coarse.total_cost == pytest.approx(full.total_cost)


def test_config_fields_are_options():
    g = load_zoo("resnet50", variant="small", batch=3, image_size=64)
    assert g.node("x").attrs["shapes"] == [[3, 3, 64, 64]]
    assert g.meta["config"]["batch"] == 3


def test_module_granularity():
    g = load_graph("zoo:gnmt?variant=small&granularity=module")
    assert "encoder.layers.0" in g.names and g.meta["granularity"] == "module"


def test_cache_key_follows_versions(cache, monkeypatch):
    load_zoo("resnet50", variant="small")
    monkeypatch.setattr(torch, "__version__", "0.0.test")
    load_zoo("resnet50", variant="small")
    assert len(list(cache.glob("resnet50-small-*.json"))) == 2


def test_unreadable_cache_is_rebuilt(cache):
    g = load_zoo("resnet50", variant="small")
    (path,) = cache.glob("*.json")
    path.write_text("{ truncated")
    assert load_zoo("resnet50", variant="small") == g


def test_cache_can_be_skipped(cache):
    load_zoo("resnet50", variant="small", cache=False)
    assert not cache.exists()


def test_cache_dir_default(monkeypatch):
    monkeypatch.delenv("PLACERL_CACHE")
    assert str(cache_dir()).endswith(".cache/placerl/zoo")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("zoo:alexnet", "unknown zoo model 'alexnet'; known: "),
        ("zoo:resnet50?variant=resnet18", "has no variant 'resnet18'; known: resnet50, small"),
        ("zoo:resnet50?depth=3", "has no option 'depth'; known: batch, image_size"),
        ("zoo:resnet50?batch=many", "option 'batch' must be int, got 'many'"),
        ("zoo:resnet50?batch=0", "option 'batch' must be > 0"),
        ("zoo:resnet50?layers=3", "option 'layers' must be tuple"),
        ("zoo:resnet50?granularity=layer", "unknown granularity 'layer'"),
        ("zoo:resnet50?coarsen=kmeans", "unknown coarsening method 'kmeans'"),
        ("zoo:resnet50?max_nodes=0", "'max_nodes' must be an integer >= 1"),
        ("zoo:resnet50?training=true&max_nodes=1", "'max_nodes' must be an integer >= 2"),
        ("zoo:resnet50?training=yes", "'training' must be true or false"),
        ("zoo:transformer?style=lstm", "transformer style must be one of bert, gpt2"),
    ],
)
def test_bad_zoo_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        load_graph(spec)


# --------------------------------------------------------------- full size (slow)
FULL = [
    ("inception_v3", None),
    ("resnet50", None),
    ("gnmt", None),
    ("transformer", "bert_base"),
    ("transformer", "gpt2_small"),
    ("nasnet", None),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "variant"), FULL)
def test_full_size_import_is_fast_and_cached(model, variant):
    start = time.perf_counter()
    g = load_zoo(model, variant=variant)
    first = time.perf_counter() - start
    start = time.perf_counter()
    assert load_zoo(model, variant=variant) == g
    cached = time.perf_counter() - start
    assert first < 30 and cached < 1
    assert g.meta["params"] == count_params(build_model(model, variant)[0])


@pytest.mark.slow
def test_full_size_training_graph_of_the_issue():
    g = load_graph("zoo:inception_v3?batch=32&granularity=op&training=true&max_nodes=300")
    assert g.num_nodes <= 300 and g.meta["params"] == 23_834_568
