"""fold_repeats finds exactly the repeated isomorphic blocks, and folded search ties copies."""

import numpy as np
import pytest
import torch
from torch import nn

from placerl.baselines import solve
from placerl.errors import ConfigError, PlacementError
from placerl.graph import load_graph
from placerl.graph.passes import Folding, fold_repeats
from placerl.graph.torch_import import from_module


@pytest.fixture(scope="module")
def bert():
    return load_graph("zoo:transformer?variant=bert_base")


def test_a_12_layer_transformer_folds_into_exactly_its_12_blocks(bert):
    folding = fold_repeats(bert)
    assert isinstance(folding, Folding)
    assert len(folding.blocks) == 1
    ((signature, copies),) = folding.blocks.items()
    assert signature.startswith("layers.*#") and len(copies) == 12
    for k, copy in enumerate(copies):
        scopes = {bert.nodes[v].attrs["module"].split(".")[1] for v in copy}
        assert scopes == {str(k)}
        assert len(copy) == len(copies[0])
    every = [v for copy in copies for v in copy]
    assert len(every) == len(set(every))
    layer_nodes = [v for v, n in enumerate(bert.nodes) if n.attrs["module"].startswith("layers.")]
    assert sorted(every) == layer_nodes
    assert folding.num_decisions == bert.num_nodes - 11 * len(copies[0])


def test_expand_copies_the_first_copys_decisions_node_for_node(bert):
    folding = fold_repeats(bert)
    copies = next(iter(folding.blocks.values()))
    placement = np.arange(bert.num_nodes)
    expanded = folding.expand(placement)
    for copy in copies:
        assert expanded[copy].tolist() == copies[0]
    outside = np.setdiff1d(np.arange(bert.num_nodes), np.concatenate(copies))
    assert np.array_equal(expanded[outside], outside)
    with pytest.raises(PlacementError, match=r"one decision per node .* got shape \(3,\)"):
        folding.expand([0, 1, 2])


def test_resnet_stages_fold_their_identical_bottlenecks_only():
    folding = fold_repeats(load_graph("zoo:resnet50"))
    counts = sorted((sig.split(".")[0], len(c)) for sig, c in folding.blocks.items())
    # The first bottleneck of each stage has a downsampling shortcut: the others repeat.
    assert counts == [("layer1", 2), ("layer2", 3), ("layer3", 5), ("layer4", 2)]


def test_copies_that_differ_in_shape_or_wiring_are_not_folded():
    class Uneven(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(
                [
                    nn.Sequential(nn.Linear(8, 8), nn.ReLU()),
                    nn.Sequential(nn.Linear(8, 4), nn.ReLU()),
                    nn.Sequential(nn.Linear(4, 4), nn.ReLU()),
                    nn.Sequential(nn.Linear(4, 4), nn.ReLU()),
                ]
            )

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    folding = fold_repeats(from_module(Uneven(), (torch.randn(2, 8),)))
    assert [len(c) for c in folding.blocks.values()] == [2]  # layers 2 and 3 only


def test_graphs_without_module_scopes_have_no_blocks():
    graph = load_graph("synthetic:layered?n=30&seed=0")
    assert fold_repeats(graph).blocks == {}
    assert fold_repeats(graph).num_decisions == graph.num_nodes


def test_fold_repeats_refuses_what_is_not_a_graph():
    with pytest.raises(ConfigError, match="fold_repeats"):
        fold_repeats("not a graph")


@pytest.mark.parametrize(
    "spec",
    ["zoo:transformer?variant=bert_tiny&training=true", "zoo:resnet50?variant=small&training=true"],
)
def test_folded_search_is_as_good_as_unfolded_on_small_models(spec):
    plain = solve("pase_dp", spec, "gpu8_nvlink", "strategy")
    folded = solve("pase_dp", spec, "gpu8_nvlink", "strategy", fold=True)
    assert folded.runtime == pytest.approx(plain.runtime, rel=1e-9)
    assert folded.info["variables"] <= plain.info["variables"]


def test_folded_search_gives_every_copy_the_same_configurations(bert):
    result = solve("pase_dp", bert, "gpu8_nvlink", "strategy", fold=True)
    copies = next(iter(fold_repeats(bert).blocks.values()))
    for copy in copies[1:]:
        assert np.array_equal(result.placement[copy], result.placement[copies[0]])
    assert result.info["variables"] < 40  # one block's variables plus the rest, not 12 blocks


def test_fold_needs_pases_order():
    with pytest.raises(ConfigError, match="fold=True solves in PaSE's order"):
        solve(
            "pase_dp",
            "zoo:transformer?variant=bert_tiny",
            "gpu4_pcie",
            "strategy",
            fold=True,
            order="bfs",
        )
