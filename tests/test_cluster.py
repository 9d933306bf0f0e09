import math

import numpy as np
import pytest

from placerl.cluster import PRESETS, Cluster, Device, homogeneous, load_cluster
from placerl.devices import GiB


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
    ("spec", "expected"),
    [
        ("placeto", Cluster.preset("placeto")),
        ("placeto?n_devices=4", Cluster.preset("placeto", n_devices=4)),
        ("homogeneous?n_devices=8&bandwidth=12e9", homogeneous(8, bandwidth=12e9)),
        ("cpu_gpu?n_gpus=2", Cluster.preset("cpu_gpu", n_gpus=2)),
        ("homogeneous?n_devices=2&memory=inf&comm_model=ideal", homogeneous(2, comm_model="ideal")),
        ("msr:bert24_training", Cluster.from_msr("bert24_training")),
    ],
)
def test_load_cluster_specs(spec, expected):
    assert load_cluster(spec) == expected
    assert load_cluster(expected) is expected


def test_save_load_round_trip_through_every_spec_form(tmp_path):
    cluster = Cluster.preset("cpu_gpu", n_gpus=3)
    path = cluster.save(tmp_path / "sub" / "c.json")
    assert [p.name for p in path.parent.iterdir()] == ["c.json"]  # no temporary left behind
    for spec in (path, str(path)):
        loaded = load_cluster(spec)
        assert loaded == cluster and loaded.name == "cpu_gpu"
        assert loaded.devices[0].peak_flops == cluster.devices[0].peak_flops
    unlimited = homogeneous(2)  # inf bandwidth diagonal, inf memory survive JSON
    assert Cluster.load(unlimited.save(tmp_path / "u.json")) == unlimited


def test_fingerprints_follow_costs_not_labels():
    a = Cluster.preset("placeto", n_devices=3)
    assert a.fingerprint() == Cluster.preset("placeto", n_devices=3).fingerprint()
    assert a.fingerprint() != Cluster.preset("placeto", n_devices=4).fingerprint()
    relabelled = Cluster(
        a.devices, a.bandwidth, a.latency, a.comm_model, a.transfer_gap, a.op_gap, name="mine"
    )
    assert relabelled.fingerprint() == a.fingerprint()
    slower = load_cluster("homogeneous?n_devices=2&bandwidth=1e9")
    assert (
        slower.fingerprint() != load_cluster("homogeneous?n_devices=2&bandwidth=2e9").fingerprint()
    )


def test_presets_are_built_from_the_shared_device_specs():
    from placerl.devices import A100_40GB, K80_DIE, V100_16GB, XEON_HOST

    assert Cluster.preset("placeto").devices[0].peak_flops == K80_DIE.peak_flops
    assert Cluster.preset("gpu4_pcie").devices[0].memory == V100_16GB.memory
    assert Cluster.preset("gpu8_nvlink").devices[0].mem_bandwidth == A100_40GB.mem_bandwidth
    assert Cluster.preset("cpu_gpu").devices[0].peak_flops == XEON_HOST.peak_flops
