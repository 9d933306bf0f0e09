import math

import numpy as np
import pytest

from placerl.cluster import PRESETS, Cluster, Device, homogeneous
from placerl.devices import GiB
from placerl.errors import ClusterError, ConfigError


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds(name):
    cluster = Cluster.preset(name) if name != "homogeneous" else Cluster.preset(name, n_devices=2)
    assert cluster.num_devices >= 1
    assert cluster.bandwidth.shape == (len(cluster), len(cluster))
    assert np.all(cluster.speeds > 0)


def test_placeto_constants():
    c = Cluster.preset("placeto", n_devices=3)
    assert len(c) == 3 and c.comm_model == "placeto"
    assert c.bandwidth[0, 1] == pytest.approx(7600 / 1e-6)  # 7,600 bytes per microsecond
    assert c.transfer_gap == pytest.approx(25e-6)
    assert c.op_gap == pytest.approx(5.7e-6)
    assert c.kinds == ("gpu", "gpu", "gpu")
    assert c.transfer_time(7600.0, 0, 1) == pytest.approx(1e-6)
    assert c.transfer_time(1e9, 1, 1) == 0.0


def test_published_presets():
    pcie, nvlink = Cluster.preset("gpu4_pcie"), Cluster.preset("gpu8_nvlink")
    assert len(pcie) == 4 and len(nvlink) == 8
    assert pcie.bandwidth[0, 1] == 12e9 and pcie.latency[0, 1] == 10e-6
    assert nvlink.bandwidth[0, 1] == 300e9
    assert nvlink.devices[0].memory == 40 * GiB


def test_cpu_gpu_is_heterogeneous():
    c = Cluster.preset("cpu_gpu", n_gpus=3)
    assert c.kinds == ("cpu", "gpu", "gpu", "gpu")
    assert c.speeds[0] < c.speeds[1]
    assert c.is_cpu.tolist() == [True, False, False, False]


def test_from_msr_header():
    c = Cluster.from_msr("bert_l-3_training")
    assert c.kinds == ("accelerator",) * 3 + ("cpu",)
    assert c.devices[0].memory == 17185374208.0 and math.isinf(c.devices[3].memory)
    assert c.name == "msr:bert_l-3_training"


def test_equality_and_to_dict():
    assert Cluster.preset("placeto") == Cluster.preset("placeto")
    assert Cluster.preset("placeto", n_devices=2) != Cluster.preset("placeto")
    d = Cluster.preset("cpu_gpu").to_dict()
    assert d["devices"][0]["kind"] == "cpu" and len(d["bandwidth"]) == 3


def test_link_matrices():
    bw = np.array([[0, 1e9], [2e9, 0]])
    c = Cluster((Device("a"), Device("b")), bandwidth=bw, latency=[[0, 1e-6], [2e-6, 0]])
    assert c.transfer_time(1e9, 0, 1) == pytest.approx(1 + 1e-6)
    assert c.transfer_time(1e9, 1, 0) == pytest.approx(0.5 + 2e-6)
    with pytest.raises(ValueError):
        c.bandwidth[0, 1] = 5


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Cluster(()), "at least one device"),
        (lambda: Cluster((Device("a"), Device("a"))), "duplicate device names: a"),
        (
            lambda: Cluster((Device("a"), Device("b")), bandwidth=0),
            "bandwidth a -> b is 0.0; it must be > 0",
        ),
        (lambda: Cluster((Device("a"), Device("b")), bandwidth=-5), "bandwidth a -> b is -5.0"),
        (
            lambda: Cluster((Device("a"), Device("b")), bandwidth=float("nan")),
            "bandwidth a -> b is nan",
        ),
        (lambda: Cluster((Device("a"), Device("b")), latency=-1), "latency a -> b is -1.0"),
        (
            lambda: Cluster((Device("a"), Device("b")), bandwidth=np.ones((3, 3))),
            r"shape \(3, 3\); expected \(2, 2\)",
        ),
        (
            lambda: Cluster((Device("a"),), comm_model="pigeon"),
            "unknown comm_model 'pigeon'; known: placeto",
        ),
        (lambda: Cluster((Device("a"),), op_gap=-1), "op_gap is -1.0"),
        (lambda: Cluster(("a",)), "must be placerl.cluster.Device"),
        (lambda: Device("a", memory=0), "device 'a' memory is 0.0; it must be > 0"),
        (lambda: Device("a", memory=-1), "device 'a' memory is -1.0"),
        (lambda: Device("a", speed=0), "device 'a' speed is 0.0; it must be finite and > 0"),
        (lambda: Device("a", speed="fast"), "device 'a' speed must be a number"),
        (lambda: Device(""), "device name must be a non-empty string"),
        (lambda: Cluster.preset("tpu_pod"), "unknown cluster preset 'tpu_pod'; known: cpu_gpu"),
        (
            lambda: Cluster.preset("placeto", n_devices=0),
            "n_devices must be a positive integer, got 0",
        ),
        (lambda: Cluster.preset("placeto", gpus=2), r"unknown option\(s\) gpus for cluster preset"),
        (lambda: homogeneous(2, speeds=[1.0]), "got 1 speeds for 2 devices"),
        (lambda: Cluster.from_msr("nope"), "no msr graph 'nope'"),
    ],
)
def test_bad_clusters_raise_named_errors(build, message):
    with pytest.raises((ClusterError, ConfigError), match=message):
        build()


def test_from_msr_bad_header(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"maxFPGAs": 2}')
    with pytest.raises(ClusterError, match="has a bad header"):
        Cluster.from_msr(path)
    path.write_text('{"maxFPGAs": 0, "maxCPUs": 0, "maxSizePerFPGA": 1}')
    with pytest.raises(ClusterError, match="need maxFPGAs \\+ maxCPUs >= 1"):
        Cluster.from_msr(path)
