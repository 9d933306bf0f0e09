"""Tests of importing torch modules as graphs (placerl.graph.torch_import)."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from placerl.cluster import Cluster
from placerl.devices import KIND_DEVICES, roofline_cost
from placerl.errors import ConfigError, GraphError
from placerl.graph.torch_import import (
    GRANULARITIES,
    OPTIMIZER_STATES,
    from_module,
    model_flops,
)
from placerl.graph.zoo import build_model

# The small variant of every zoo family (fast to import and to run for real).
SMALL = [
    ("resnet50", "small"),
    ("inception_v3", "small"),
    ("transformer", "bert_tiny"),
    ("transformer", "gpt2_tiny"),
    ("gnmt", "small"),
    ("nasnet", "small"),
]
GRANULARITY = list(GRANULARITIES)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Real forward passes here are tiny: one thread avoids contention on busy machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.cache
def meta_graph(model: str, variant: str, granularity: str):
    """The imported graph of a zoo model built on meta (shared by the tests below)."""
    return from_module(*build_model(model, variant), granularity=granularity)


def real_model(model: str, variant: str, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(model, variant, device="cpu")


def dtype_size(name: str) -> int:
    return torch.empty((), dtype=getattr(torch, name)).element_size()


@pytest.fixture(scope="module")
def resnet_graphs():
    module, inputs = build_model("resnet50", "small")
    return {
        (granularity, training): from_module(
            module, inputs, granularity=granularity, training=training
        )
        for granularity in GRANULARITY
        for training in (False, True)
    }


# ----------------------------------------------------------------------------- a Linear
def test_linear_layer_by_hand():
    g = from_module(nn.Linear(8, 4), (torch.randn(2, 8),))
    assert g.names == ("input", "linear")
    inp, linear = g.nodes
    assert (inp.op, inp.cost, inp.out_bytes, inp.mem_bytes) == ("input", 0.0, 2 * 8 * 4, 0.0)
    assert linear.attrs["flops"] == 2 * 2 * 8 * 4
    assert linear.out_bytes == 2 * 4 * 4
    assert linear.mem_bytes == (8 * 4 + 4) * 4
    touched = 2 * 8 * 4 + (8 * 4 + 4) * 4 + 2 * 4 * 4  # input, weights, output
    assert linear.attrs["bytes"] == touched
    assert linear.cost == roofline_cost(2 * 2 * 8 * 4, touched)
    assert g.edges[0].bytes == 2 * 8 * 4
    assert g.meta["params"] == 8 * 4 + 4
    assert g.meta["source"] == "torch"


def test_training_memory_counts_gradients_optimizer_state_and_activations():
    linear = nn.Linear(8, 4)
    g = from_module(linear, (torch.randn(2, 8),), training=True)
    weights = (8 * 4 + 4) * 4
    activations = 2 * 4 * 4
    assert g.node("linear").mem_bytes == weights * (2 + OPTIMIZER_STATES) + activations
    assert g.node("input").mem_bytes == 2 * 8 * 4  # the input is kept for backward too
    assert g.meta["training"] is True


def test_frozen_parameters_get_no_gradient_memory():
    linear = nn.Linear(8, 4)
    linear.requires_grad_(False)
    g = from_module(linear, (torch.randn(2, 8),), training=True)
    assert g.node("linear").mem_bytes == (8 * 4 + 4) * 4 + 2 * 4 * 4
    assert g.node("linear").attrs["params"] == 0


def test_costs_are_rooflines_of_the_preset_devices():
    g = from_module(nn.Linear(64, 64), (torch.randn(32, 64),))
    node = g.node("linear")
    flops, touched = node.attrs["flops"], node.attrs["bytes"]
    cpu, gpu = Cluster.preset("cpu_gpu").devices[:2]
    for device in (cpu, gpu):  # the preset is built from the same specs the importer costs with
        spec = KIND_DEVICES[device.kind]
        assert (spec.peak_flops, spec.mem_bandwidth) == (device.peak_flops, device.mem_bandwidth)
    assert node.costs["cpu"] == roofline_cost(flops, touched, KIND_DEVICES["cpu"])
    assert node.costs["gpu"] == node.cost  # the reference device is the presets' V100
    assert set(g.device_kinds) == {"cpu", "gpu"}


# -------------------------------------------------------------------------- zoo models
def torch_flop_count(module, inputs) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(*inputs)
    return counter.get_total_flops()


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize(("model", "variant"), SMALL)
def test_flops_add_up_to_torch_counter_on_the_whole_model(model, variant, granularity):
    module, inputs = build_model(model, variant)  # on meta: LSTMs run unfused, as in the trace
    module.eval()
    expected = torch_flop_count(module, inputs)
    g = meta_graph(model, variant, granularity)
    assert sum(n.attrs["flops"] for n in g.nodes) == expected > 0
    assert g.meta["flops"] == expected == model_flops(module, inputs)


@pytest.mark.parametrize(("model", "variant"), [m for m in SMALL if m[0] != "gnmt"])
def test_flops_match_torch_counter_on_real_weights(model, variant):
    # (On CPU the counter does not see fused LSTM kernels, hence no GNMT here.)
    module, inputs = real_model(model, variant)
    module.train()
    g = from_module(module, inputs, training=True)
    assert g.meta["flops"] == torch_flop_count(module, inputs)


@pytest.mark.parametrize(("model", "variant"), SMALL)
def test_bytes_match_the_shapes_of_leaf_module_outputs(model, variant):
    module, inputs = real_model(model, variant)
    module.eval()
    shapes = {}

    def remember(name):
        def hook(mod, args, out):
            tensors = [t for t in torch.utils._pytree.tree_leaves(out) if torch.is_tensor(t)]
            shapes.setdefault(name, ([list(t.shape) for t in tensors], tensors))

        return hook

    for name, leaf in module.named_modules():
        if not any(leaf.children()) and name:
            leaf.register_forward_hook(remember(name))
    with torch.no_grad():
        module(*inputs)
    g = from_module(module, inputs, granularity="module")
    checked = 0
    for node in g.nodes:
        size = sum(
            math.prod(shape) * dtype_size(dtype)
            for shape, dtype in zip(node.attrs["shapes"], node.attrs["dtypes"], strict=True)
        )
        assert node.out_bytes == size
        if node.name in shapes:
            expected, tensors = shapes[node.name]
            assert node.attrs["shapes"] == expected
            assert node.out_bytes == sum(t.numel() * t.element_size() for t in tensors)
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize(("model", "variant"), SMALL)
def test_parameters_counted_once(model, variant, granularity):
    module, _ = build_model(model, variant)
    g = meta_graph(model, variant, granularity)
    total = sum(p.numel() for p in module.parameters())
    assert g.meta["params"] == total
    assert sum(n.attrs["params"] for n in g.nodes) == total  # tied weights once
    tensors = [*module.parameters(), *module.buffers()]
    state = sum(t.numel() * t.element_size() for t in tensors)
    assert sum(n.mem_bytes for n in g.nodes) <= state


def test_tied_embedding_counted_once():
    module, inputs = build_model("transformer", "gpt2_tiny")
    g = from_module(module, inputs)
    wte = module.wte.weight.numel()
    assert g.node("wte/embedding").attrs["params"] == wte
    lm_head = [n for n in g.nodes if n.attrs["target"] == "aten.linear.default"][-1]
    assert lm_head.attrs["params"] == 0 and lm_head.mem_bytes == 0


def test_training_graph_memory_totals(resnet_graphs):
    module, _ = build_model("resnet50", "small")
    params = sum(p.numel() * 4 for p in module.parameters())
    for granularity in GRANULARITY:
        g = resnet_graphs[(granularity, True)]
        buffers = sum(b.numel() * b.element_size() for b in module.buffers())
        activations = sum(n.out_bytes for n in g.nodes if n.attrs["bytes"] or n.op == "input")
        expected = params * (2 + OPTIMIZER_STATES) + activations
        assert expected <= sum(n.mem_bytes for n in g.nodes) <= expected + buffers


def test_names_keep_the_module_path(resnet_graphs):
    op_graph = resnet_graphs[("op", False)]
    module_graph = resnet_graphs[("module", False)]
    assert "layer1.0.conv1/conv2d" in op_graph.names
    assert "layer1.0.conv1" in module_graph.names
    assert op_graph.node("layer1.0.conv1/conv2d").attrs["module"] == "layer1.0.conv1"
    assert op_graph.node("layer1.0/add").attrs["target"] == "aten.add.Tensor"
    assert module_graph.node("layer1.0.conv1").attrs["target"] == "torch.nn.modules.conv.Conv2d"


def test_node_order_is_execution_order(resnet_graphs):
    for g in resnet_graphs.values():
        a = g.arrays
        assert (a.src < a.dst).all()


def test_unused_ops_are_dropped(resnet_graphs):
    # Training-mode BatchNorm bumps num_batches_tracked, which nothing reads.
    g = resnet_graphs[("op", True)]
    assert not [n for n in g.nodes if n.op == "add_"]
    assert g.num_nodes == resnet_graphs[("op", False)].num_nodes


def test_views_are_free_and_tuple_outputs_split_their_bytes():
    module, inputs = build_model("transformer", "gpt2_tiny")
    g = from_module(module, inputs)
    views = [n for n in g.nodes if n.op in ("view", "transpose", "split")]
    assert views and all(n.cost == 0 and set(n.costs.values()) == {0.0} for n in views)
    split = g.node("layers.0.attn/split")
    out = [e for e in g.edges if e.src == split.name]
    assert len(out) == 3 and all(e.bytes == split.out_bytes / 3 for e in out)


def test_lstm_edges_carry_only_the_output_they_read():
    module, inputs = build_model("gnmt", "small")
    g = from_module(module, inputs)
    lstm = g.node("encoder.layers.1/lstm")
    edges = [e for e in g.edges if e.src == lstm.name]
    output, hidden, cell = lstm.attrs["shapes"]  # (output, (h, c)) of nn.LSTM
    assert lstm.out_bytes == 4 * (math.prod(output) + math.prod(hidden) + math.prod(cell))
    assert edges and all(e.bytes == math.prod(output) * 4 for e in edges)


def test_meta_and_real_weights_import_alike():
    meta_module, meta_inputs = build_model("resnet50", "small")
    real_module, real_inputs = real_model("resnet50", "small")
    assert (
        from_module(meta_module, meta_inputs).nodes == from_module(real_module, real_inputs).nodes
    )


def test_module_mode_is_restored():
    module, inputs = real_model("resnet50", "small")
    module.eval()
    module.layer1.train()
    from_module(module, inputs, training=True)
    assert not module.training and module.layer1.training and not module.fc.training


# ------------------------------------------------------------------------- bad input
class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return x


class Gate(nn.Module):
    """A leaf module with data-dependent control flow."""

    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


class GatedMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.fc(x))


def test_data_dependent_control_flow_names_the_construct():
    with pytest.raises(GraphError) as info:
        from_module(DataDependent(), (torch.randn(2, 4),))
    message = str(info.value)
    assert "cannot trace DataDependent at granularity 'op'" in message
    assert "data-dependent control flow" in message
    assert "`if x.sum() > 0:`" in message and "test_torch_import.py" in message
    assert 'granularity="module"' in message


def test_untraceable_at_module_granularity_names_the_construct():
    with pytest.raises(GraphError, match="Python control flow on a traced tensor") as info:
        from_module(DataDependent(), (torch.randn(2, 4),), granularity="module")
    assert "`if x.sum() > 0:`" in str(info.value)
    assert "leaf module" in str(info.value)


def test_module_granularity_keeps_data_dependent_leaves_opaque():
    with pytest.raises(GraphError, match="data-dependent"):
        from_module(GatedMLP(), (torch.randn(2, 4),))
    g = from_module(GatedMLP(), (torch.randn(2, 4),), granularity="module")
    assert g.names == ("x", "fc", "gate")
    assert g.node("fc").attrs["flops"] == 2 * 2 * 4 * 4


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ((), "example_inputs is empty"),
        ([], "example_inputs is empty"),
        ((3, "a"), "holds no tensor"),
        ({"x": torch.ones(2)}, "must be a tensor or a tuple"),
    ],
)
def test_bad_example_inputs(inputs, message):
    with pytest.raises(GraphError, match=message):
        from_module(nn.Linear(2, 2), inputs)


def test_single_tensor_input_is_accepted():
    assert from_module(nn.Linear(2, 2), torch.ones(1, 2)).num_nodes == 2


def test_not_a_module():
    with pytest.raises(GraphError, match=r"expected a torch\.nn\.Module, got function"):
        from_module(lambda x: x, (torch.ones(2),))


def test_zero_op_graph():
    with pytest.raises(GraphError, match="Identity has no op to place"):
        from_module(nn.Identity(), (torch.ones(2),))


def test_unknown_granularity():
    with pytest.raises(ConfigError, match="unknown granularity 'layer'; known: module, op"):
        from_module(nn.Linear(2, 2), (torch.ones(1, 2),), granularity="layer")
