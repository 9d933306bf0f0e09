"""Every bad input of the cluster layer raises a ClusterError naming the problem."""

import re

import numpy as np
import pytest

from placerl.cluster import Cluster, Device, homogeneous, load_cluster
from placerl.errors import ClusterError

BAD = [
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
        "shape (3, 3); expected (2, 2)",
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
    (lambda: Device("a", speed="2"), "device 'a' speed must be a number, got '2'"),
    (lambda: Device("a", memory=True), "device 'a' memory must be a number, got True"),
    (
        lambda: Cluster((Device("a"),), transfer_gap="0.1"),
        "transfer_gap must be a number, got '0.1'",
    ),
    (
        lambda: Cluster((Device("a"), Device("b")), bandwidth="1e9"),
        "bandwidth must be a number or a matrix of numbers, got '1e9'",
    ),
    (
        lambda: Cluster((Device("a"), Device("b")), bandwidth=True),
        "bandwidth must be a number or a matrix of numbers, got True",
    ),
    (lambda: Cluster((Device("a"),), name=5), "cluster name must be a string, got 5"),
    (lambda: load_cluster("cpu_gpu?n_gpus=0"), "n_gpus must be an integer >= 1, got 0"),
    (lambda: Device(""), "device name must be a non-empty string"),
    (lambda: Cluster.preset("tpu_pod"), "unknown cluster preset 'tpu_pod'; known: cpu_gpu"),
    (
        lambda: Cluster.preset("placeto", n_devices=0),
        "n_devices must be an integer >= 1, got 0",
    ),
    (lambda: Cluster.preset("placeto", gpus=2), "unknown option(s) gpus for cluster preset"),
    (lambda: homogeneous(2, speeds=[1.0]), "got 1 speeds for 2 devices"),
    (lambda: Cluster.from_msr("nope"), "no msr graph 'nope'"),
    # specs (load_cluster)
    (
        lambda: load_cluster("placeto?n_devices=abc"),
        "option 'n_devices' of cluster preset 'placeto' must be an integer, got 'abc'",
    ),
    (
        lambda: load_cluster("placeto?n_devices=2.5"),
        "option 'n_devices' of cluster preset 'placeto' must be an integer, got 2.5",
    ),
    (lambda: load_cluster("placeto?n_devices=true"), "must be an integer, got True"),
    (lambda: Cluster.preset("placeto", n_devices="4"), "must be an integer, got '4'"),
    (
        lambda: Cluster.preset("homogeneous", n_devices=2, bandwidth="12e9"),
        "option 'bandwidth' of cluster preset 'homogeneous' must be a number, got '12e9'",
    ),
    (
        lambda: load_cluster("homogeneous?n_devices=2&bandwidth=fast"),
        "option 'bandwidth' of cluster preset 'homogeneous' must be a number, got 'fast'",
    ),
    (lambda: load_cluster("homogeneous?n_devices=2&latency=-1"), "latency gpu:0 -> gpu:1 is -1.0"),
    (lambda: load_cluster("homogeneous"), "cluster preset 'homogeneous' needs option(s) n_devices"),
    (
        lambda: load_cluster("cpu_gpu?n_devices=2"),
        "unknown option(s) n_devices for cluster preset 'cpu_gpu'; known: n_gpus",
    ),
    (
        lambda: load_cluster("placeto?n_devices=2&n_devices=3"),
        "gives option 'n_devices' more than once",
    ),
    (lambda: load_cluster("placeto?n_devices"), "has a malformed query"),
    (lambda: load_cluster("tpu?n=1"), "unknown cluster preset 'tpu'; known: cpu_gpu"),
    (lambda: load_cluster("?n_devices=2"), "has no name before '?'"),
    (lambda: load_cluster(""), "a cluster spec must be a Cluster, a preset spec"),
    (lambda: load_cluster(3), "a cluster spec must be a Cluster, a preset spec"),
    (lambda: load_cluster(None), "a cluster spec must be a Cluster, a preset spec"),
    (lambda: load_cluster("msr:nope"), "no msr graph 'nope'"),
    (lambda: load_cluster("missing.json"), "cluster file not found: missing.json"),
    (lambda: Cluster.from_dict({"format": "x"}), "not a placerl cluster document"),
    (
        lambda: Cluster.from_dict({"format": "placerl-cluster", "version": 9}),
        "unsupported cluster schema version 9",
    ),
    (
        lambda: Cluster.from_dict({"format": "placerl-cluster", "version": 1, "devices": [1]}),
        "needs a list of device objects under 'devices'",
    ),
    (
        lambda: Cluster.from_dict(
            {"format": "placerl-cluster", "version": 1, "devices": [{"name": "a", "colour": "red"}]}
        ),
        "bad field in cluster document",
    ),
]


@pytest.mark.parametrize(("build", "message"), BAD)
def test_bad_cluster_input_raises_a_named_cluster_error(build, message):
    with pytest.raises(ClusterError, match=re.escape(message)):
        build()


def test_bad_json_files(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{oops")
    with pytest.raises(ClusterError, match="is not valid JSON"):
        load_cluster(str(path))


def test_msr_headers_are_checked(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"maxFPGAs": 2}')
    with pytest.raises(ClusterError, match="has a bad header"):
        Cluster.from_msr(path)
    path.write_text('{"maxFPGAs": "2", "maxCPUs": 1, "maxSizePerFPGA": 1}')
    with pytest.raises(ClusterError, match="bad header: maxFPGAs is '2'"):
        Cluster.from_msr(path)
    path.write_text('{"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": "1e9"}')
    with pytest.raises(ClusterError, match="bad header: maxSizePerFPGA is '1e9'"):
        Cluster.from_msr(path)
    path.write_text('{"maxFPGAs": 0, "maxCPUs": 0, "maxSizePerFPGA": 1}')
    with pytest.raises(ClusterError, match="need maxFPGAs \\+ maxCPUs >= 1"):
        Cluster.from_msr(path)
    path.write_text('{"nodes": []}')
    with pytest.raises(ClusterError, match="lacks the msr-fiddle header"):
        Cluster.from_msr(path)


def test_strings_in_cluster_files_are_refused_not_read(tmp_path):
    data = homogeneous(2).to_dict()
    data["devices"][0]["memory"] = "1e9"
    path = tmp_path / "c.json"
    path.write_text(__import__("json").dumps(data))
    with pytest.raises(ClusterError, match="device 'gpu:0' memory must be a number, got '1e9'"):
        load_cluster(str(path))


def test_a_folder_is_not_a_cluster_file(tmp_path):
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ClusterError, match="cannot be read"):
        load_cluster(str(tmp_path / "dir.json"))
