"""Running placements for real: results equal the module's, timings add up, bad input fails
clearly."""

import math

import numpy as np
import pytest
import torch

from placerl.cluster import Cluster, Device
from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import load_graph
from placerl.graph.passes import with_backward
from placerl.graph.torch_import import from_module
from placerl.measure import Measurer, bind
from placerl.measure.program import load_program, reference_run
from placerl.measure.source import source_of
from tests.measure.conftest import RESNET_TRAINING
from tests.measure.models import Boxed, Branches, LostWrite


def _reference_outputs(graph):
    loaded = load_program(source_of(graph))
    values = reference_run(loaded)
    return loaded, values


@pytest.mark.parametrize("placement", ["single", "alternate", "random"])
def test_split_runs_compute_what_the_module_computes(resnet_measurer, resnet, placement):
    n = resnet.num_nodes
    chosen = {
        "single": np.zeros(n, dtype=int),
        "alternate": np.arange(n) % 2,
        "random": np.random.default_rng(3).integers(0, 2, n),
    }[placement]
    result = resnet_measurer.measure(chosen, outputs=True)
    _, values = _reference_outputs(resnet)
    assert set(result.outputs) == set(resnet_measurer.layout.outputs)
    for name, value in result.outputs.items():
        torch.testing.assert_close(value, values[name])


def test_timings_are_consistent(resnet_measurer, resnet):
    placement = np.arange(resnet.num_nodes) % 2
    result = resnet_measurer.measure(placement)
    assert len(result.samples) == resnet_measurer.repeats
    assert min(result.samples) <= result.runtime <= max(result.samples)
    assert np.all(result.finish >= result.start) and np.all(result.start >= 0)
    assert result.finish.max() <= max(result.samples) + 1e-9
    steps = result.finish - result.start
    busy = np.array([steps[placement == d].sum() for d in range(2)])
    np.testing.assert_allclose(result.busy, busy, rtol=1e-6)
    assert np.all(result.durations >= 0) and result.durations.sum() > 0
    for d in range(2):  # a device runs one step at a time
        mine = np.flatnonzero(placement == d)
        order = mine[np.argsort(result.start[mine])]
        assert np.all(result.start[order[1:]] >= result.finish[order[:-1]] - 1e-9)


def test_training_graph_gradients_match_autograd():
    graph = load_graph(RESNET_TRAINING)
    loaded, values = _reference_outputs(graph)
    with Measurer(graph, "local", warmup=0, repeats=1) as measurer:
        layout = measurer.layout
        outputs = [values[v] for v in layout.outputs]
        torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
        expected = {
            n: t.grad
            for n, t in loaded.state.items()
            if isinstance(t, torch.Tensor) and t.grad is not None
        }
        placement = np.random.default_rng(0).integers(0, 2, graph.num_nodes)
        placement[layout.backward] = placement[layout.forward]
        result = measurer.measure(placement, outputs=True)
    assert expected and set(result.grads) == set(expected)
    for name, grad in expected.items():
        torch.testing.assert_close(result.grads[name], grad, rtol=1e-4, atol=1e-5)
    backward_steps = result.finish[layout.backward] - result.start[layout.backward]
    assert backward_steps.sum() > 0


def test_a_bound_module_runs_and_matches(branches):
    module, x, graph = branches
    with Measurer(graph, "local", module=module, example_inputs=(x,), repeats=1) as measurer:
        result = measurer.measure(np.arange(graph.num_nodes) % 2, outputs=True)
    (value,) = result.outputs.values()
    torch.testing.assert_close(value, module(x))


def test_transfer_times_have_one_row_per_size(resnet_measurer):
    times = resnet_measurer.transfer_times(0, 1, [1 << 10, 1 << 22], repeats=3)
    assert times.shape == (2, 3) and np.all(times > 0)


@pytest.mark.slow  # a timing comparison: on a busy machine the workers' wake-up latency
def test_transfer_times_grow_with_size(resnet_measurer):  # can exceed a 4 MB copy
    times = resnet_measurer.transfer_times(0, 1, [1 << 10, 1 << 24], repeats=5)
    assert times[1].min() > times[0].min()


# ------------------------------------------------------------------------------ bad input
def test_a_device_the_machine_lacks_lists_the_available_ones(resnet):
    gpus = torch.cuda.device_count()  # one GPU more than this machine has, wherever it runs
    names = ["cpu:0", *(f"gpu:{i}" for i in range(gpus + 1))]
    cluster = Cluster(tuple(Device(name, name[:3]) for name in names))
    measurer = Measurer(resnet, cluster)
    placement = np.zeros(resnet.num_nodes, dtype=int)
    placement[5] = gpus + 1
    here = ", ".join(f"{i} \\({name}\\)" for i, name in enumerate(names[:-1]))
    with pytest.raises(
        PlacementError,
        match=rf"on device {gpus + 1} \(gpu:{gpus}, kind gpu\), "
        rf"which this machine lacks; available here: {here}$",
    ):
        measurer.measure(placement)
    measurer.close()


def test_backward_away_from_its_forward_node_is_refused():
    graph = load_graph(RESNET_TRAINING)
    measurer = Measurer(graph, "local")
    placement = np.zeros(graph.num_nodes, dtype=int)
    placement[measurer.layout.backward[3]] = 1
    with pytest.raises(PlacementError, match="and its backward node are on different devices"):
        measurer.measure(placement)


def test_a_graph_without_a_module_is_refused():
    with pytest.raises(GraphError, match="not imported from a PyTorch module"):
        Measurer("synthetic:layered?n=10&seed=0")


def test_an_output_that_cannot_move_names_its_node():
    module, x = Boxed(), torch.randn(2, 8)
    graph = from_module(module, (x,), granularity="module")
    with pytest.raises(GraphError, match=r"node 'boxer' .* returns a Box, which cannot move"):
        Measurer(graph, module=module, example_inputs=(x,))


def test_a_binding_from_another_process_is_reported(branches, monkeypatch):
    module, x, graph = branches
    bound = bind(graph, module, (x,))
    monkeypatch.setattr("placerl.measure.source._bound", {})
    with pytest.raises(GraphError, match="bound to a module in another process"):
        Measurer(bound)


def test_a_graph_of_another_module_is_refused(branches):
    _, x, graph = branches
    other = torch.nn.Sequential(torch.nn.Linear(32, 4))
    with pytest.raises(GraphError, match="does not match its module"):
        Measurer(graph, module=other, example_inputs=(x,))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repeats": 0}, "repeats must be"),
        ({"warmup": -1}, "warmup must be"),
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": math.nan}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": math.inf}, "timeout must be a finite number of seconds > 0"),
    ],
)
def test_bad_measurer_options(resnet, options, message):
    with pytest.raises(ConfigError, match=message):
        Measurer(resnet, **options)


def test_transfer_times_need_two_devices(resnet_measurer):
    with pytest.raises(PlacementError, match=r"two different devices among 0\.\.1"):
        resnet_measurer.transfer_times(1, 1, [8])
    with pytest.raises(ConfigError, match="at least one message size"):
        resnet_measurer.transfer_times(0, 1, [])
    with pytest.raises(ConfigError, match="repeats must be"):
        resnet_measurer.transfer_times(0, 1, [8], repeats=0)


def test_an_in_place_write_the_import_dropped_is_refused():
    module, x = LostWrite(), torch.randn(2, 8)
    graph = from_module(module, (x,))
    with pytest.raises(GraphError, match=r"writes into '\w+' in place and nothing reads"):
        Measurer(graph, module=module, example_inputs=(x,))


def test_backward_nodes_on_an_inference_trace_are_refused(branches):
    module, x, graph = branches
    with pytest.raises(GraphError, match="has backward nodes but was traced for inference"):
        Measurer(with_backward(graph), module=module, example_inputs=(x,))


def test_leaf_module_parameters_get_their_gradients_once_per_run():
    torch.manual_seed(0)
    module, x = Branches(), torch.randn(4, 32)
    graph = with_backward(from_module(module, (x,), training=True, granularity="module"))
    loss = module(x).sum()
    loss.backward()
    with Measurer(graph, module=module, example_inputs=(x,), warmup=1, repeats=1) as measurer:
        layout = measurer.layout
        placement = np.arange(graph.num_nodes) % 2
        placement[layout.backward] = placement[layout.forward]
        first = measurer.measure(placement, outputs=True).grads
        again = measurer.measure(placement, outputs=True).grads
    expected = dict(module.named_parameters())
    assert set(first) == set(expected)
    for name, parameter in expected.items():
        torch.testing.assert_close(first[name], parameter.grad)
        torch.testing.assert_close(again[name], parameter.grad)


def test_a_worker_that_died_between_runs_is_replaced(resnet):
    with Measurer(resnet, warmup=0, repeats=1) as measurer:
        placement = np.arange(resnet.num_nodes) % 2
        measurer.measure(placement)
        killed = measurer.pool._processes[1]
        killed.kill()
        killed.join()
        assert measurer.measure(placement).runtime > 0
        assert killed not in measurer.pool._processes


@pytest.mark.parametrize("training", [False, True])
def test_the_thread_executor_computes_what_the_module_computes(training):
    graph = load_graph(RESNET_TRAINING if training else "zoo:resnet50?variant=small")
    loaded, values = _reference_outputs(graph)
    with Measurer(graph, "local", warmup=0, repeats=2, executor="threads") as measurer:
        assert measurer.executor == "threads" and measurer.devices == ["cpu", "cpu"]
        layout = measurer.layout
        placement = np.random.default_rng(1).integers(0, 2, graph.num_nodes)
        placement[layout.backward[layout.backward >= 0]] = placement[layout.forward][
            layout.backward >= 0
        ]
        result = measurer.measure(placement, outputs=True)
        assert measurer.profile([0, 1]).shape == (2, graph.num_nodes)
    for name, value in result.outputs.items():
        torch.testing.assert_close(value, values[name])
    if training:
        outputs = [values[v] for v in layout.outputs]
        torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
        for name, tensor in loaded.state.items():
            if isinstance(tensor, torch.Tensor) and tensor.grad is not None:
                torch.testing.assert_close(result.grads[name], tensor.grad, rtol=1e-4, atol=1e-5)


def test_a_failing_thread_device_ends_the_run_with_an_error(tmp_path, monkeypatch):
    from placerl.errors import MeasurementError
    from tests.measure.models import FAULT_ENV, Faulty

    fault = tmp_path / "fault"
    monkeypatch.setenv(FAULT_ENV, str(fault))
    module, x = Faulty(), torch.randn(2, 8)
    graph = from_module(module, (x,), granularity="module")
    with Measurer(
        graph, module=module, example_inputs=(x,), repeats=1, executor="threads", timeout=5
    ) as measurer:
        fault.write_text("oom")
        monkeypatch.setattr("multiprocessing.current_process", _worker_named)
        with pytest.raises(MeasurementError, match=r"device \d failed while run: .*not enough"):
            measurer.measure([0, 0, 1, 1])
        fault.write_text("")
        assert measurer.measure([0, 1, 1, 1]).runtime > 0


def _worker_named():
    class _Process:
        name = "placerl-worker-thread"

    return _Process()


def test_an_unknown_executor_is_refused(resnet):
    with pytest.raises(ConfigError, match="unknown executor 'gpu'; known: processes, threads"):
        Measurer(resnet, executor="gpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpus_and_the_host_cpu_compute_what_the_module_computes(resnet):
    cluster = Cluster((Device("cpu:0", "cpu"), Device("gpu:0", "gpu")))
    _, values = _reference_outputs(resnet)
    with Measurer(resnet, cluster, repeats=2) as measurer:
        assert measurer.executor == "threads" and measurer.devices == ["cpu", "cuda:0"]
        result = measurer.measure(np.arange(resnet.num_nodes) % 2, outputs=True)
        assert measurer.profile([1]).sum() > 0
    for name, value in result.outputs.items():
        torch.testing.assert_close(value.cpu(), values[name], rtol=1e-3, atol=1e-3)
