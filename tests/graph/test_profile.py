"""Tests of measuring graphs on real devices (placerl.graph.profile)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from placerl.errors import ConfigError, GraphError
from placerl.graph import CompGraph
from placerl.graph.passes import coarsen, with_backward
from placerl.graph.profile import profile
from placerl.graph.torch_import import from_module
from placerl.graph.zoo import build_model


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The ops here are tiny: one thread avoids contention on busy machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    module, inputs = build_model("transformer", "gpt2_tiny", device="cpu")
    return module, inputs, from_module(module, inputs)


class Doubler(nn.Module):
    def forward(self, x):
        return x * 2


class TwoSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.doubler = Doubler()

    def forward(self, x):
        return self.doubler(self.fc(x))


@pytest.mark.parametrize("granularity", ["op", "module"])
def test_profile_writes_measured_cpu_costs(granularity):
    torch.manual_seed(0)
    module, inputs = build_model("resnet50", "small", device="cpu")
    graph = from_module(module, inputs, granularity=granularity)
    measured = profile(graph, module, inputs, "cpu", warmup=1, repeats=3)
    assert measured.names == graph.names
    assert [e.to_dict() for e in measured.edges] == [e.to_dict() for e in graph.edges]
    for before, after in zip(graph.nodes, measured.nodes, strict=True):
        assert after.costs["gpu"] == before.costs["gpu"]  # other kinds untouched
        assert after.cost == before.cost
        if before.op == "input":
            assert after.costs["cpu"] == 0.0
        else:
            assert 0.0 < after.costs["cpu"] < 1.0
    settings = measured.meta["profiled"]["cpu"]
    assert settings["device"] == "cpu" and settings["repeats"] == 3


def test_each_node_runs_warmup_plus_repeats_times(monkeypatch):
    module, inputs = TwoSteps(), (torch.randn(2, 4),)
    graph = from_module(module, inputs, granularity="module")
    calls = []
    forward = Doubler.forward

    def counted(self, x):
        if x.device.type != "meta":  # the import itself runs on meta
            calls.append(x.device.type)
        return forward(self, x)

    monkeypatch.setattr(Doubler, "forward", counted)
    profile(graph, module, inputs, warmup=2, repeats=5)
    assert calls == ["cpu"] * (1 + 2 + 5)  # the run itself, warm-up, timed repetitions


def test_profiled_backward_feeds_with_backward(gpt2):
    module, inputs, graph = gpt2
    measured = profile(graph, module, inputs, "cpu", warmup=0, repeats=1, backward=True)
    fc1 = measured.node("layers.0.mlp.fc1/linear")
    assert fc1.attrs["backward_costs"]["cpu"] > 0
    training = with_backward(measured)
    assert (
        training.node("layers.0.mlp.fc1/linear/grad").costs["cpu"]
        == (fc1.attrs["backward_costs"]["cpu"])
    )
    ids = measured.node("input_ids")
    assert "backward_costs" not in ids.attrs  # inputs are not timed
    assert measured.node("arange").attrs["backward_costs"]["cpu"] == 0.0  # no gradient


def test_custom_kind_and_coarsening_after_profiling(gpt2):
    module, inputs, graph = gpt2
    measured = profile(graph, module, inputs, "cpu", kind="host", warmup=0, repeats=1)
    assert "host" in measured.device_kinds
    coarse = coarsen(measured, 10).graph
    assert coarse.arrays.kind_costs["host"].sum() == pytest.approx(
        measured.arrays.kind_costs["host"].sum()
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_profile_on_cuda():
    torch.manual_seed(0)
    module, inputs = build_model("resnet50", "small", device="cpu")
    graph = from_module(module, inputs)
    measured = profile(graph, module, inputs, "cuda", repeats=3, backward=True)
    conv = measured.node("layer1.0.conv1/conv2d")
    assert 0 < conv.costs["gpu"] < 1 and conv.attrs["backward_costs"]["gpu"] > 0
    assert measured.meta["profiled"]["gpu"]["device"] == "cuda"


# ------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("cuda:99", "device 'cuda:99' is not available on this machine"),
        ("tpu", "not a torch device: 'tpu'"),
        ("meta", "cannot profile on the meta device"),
    ],
)
def test_unavailable_device(gpt2, device, message):
    module, inputs, graph = gpt2
    with pytest.raises(ConfigError, match=message):
        profile(graph, module, inputs, device)


def test_module_on_meta_cannot_be_profiled():
    module, inputs = build_model("resnet50", "small")
    graph = from_module(module, inputs)
    with pytest.raises(GraphError, match="weights or inputs are on the meta device"):
        profile(graph, module, inputs)


def test_graph_of_another_module(gpt2):
    module, inputs, _ = gpt2
    other = from_module(nn.Linear(2, 2), (torch.ones(1, 2),))
    with pytest.raises(GraphError, match="does not match the module: it has node 'input'"):
        profile(other, module, inputs)


def test_coarse_graph_is_refused(gpt2):
    module, inputs, graph = gpt2
    with pytest.raises(GraphError, match="profile before coarsening"):
        profile(coarsen(graph, 5).graph, module, inputs)


def test_graph_not_imported(gpt2):
    module, inputs, _ = gpt2
    with pytest.raises(GraphError, match="was not made by from_module"):
        profile(CompGraph([{"name": "a", "cost": 1.0}]), module, inputs)


def test_backward_graph_is_refused(gpt2):
    module, inputs, graph = gpt2
    with pytest.raises(GraphError, match="has backward nodes; profile the forward graph"):
        profile(with_backward(graph), module, inputs)


@pytest.mark.parametrize(("option", "value"), [("warmup", -1), ("repeats", 0), ("repeats", 1.5)])
def test_bad_repetition_counts(gpt2, option, value):
    module, inputs, graph = gpt2
    with pytest.raises(ConfigError, match=f"{option} must be an integer"):
        profile(graph, module, inputs, **{option: value})
