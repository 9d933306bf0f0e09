"""Device specifications and the roofline cost model, written once.

The synthetic families and the PyTorch importer cost ops with :func:`roofline_cost` on these
devices, and the cluster presets build their devices from the same specs, so a graph's
``costs["gpu"]`` and a preset's GPU always describe the same hardware.

Sources: NVIDIA's datasheets (FP32 peak, memory bandwidth, memory) for the K80 (one of its two
GK210 dies), V100-16GB (SXM2) and A100-40GB; the host CPU is a 2-socket Xeon of the V100 era,
about 1/15 of a V100's FP32 throughput. Links: PCIe 3.0 x16 is 15.75 GB/s per direction in
theory, about 12 GB/s for peer-to-peer copies; NVLink 3 through NVSwitch gives 600 GB/s per A100,
300 GB/s per direction.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1024**3


@dataclass(frozen=True)
class DeviceSpec:
    """One kind of hardware.

    Attributes:
        name: Product name.
        kind: Cost-table key its nodes use (``gpu``, ``cpu``).
        peak_flops: Peak FP32 FLOP/s.
        mem_bandwidth: Memory bandwidth in bytes/s.
        memory: Memory in bytes.
    """

    name: str
    kind: str
    peak_flops: float
    mem_bandwidth: float
    memory: float


K80_DIE = DeviceSpec("K80 (one GK210 die)", "gpu", 4.37e12, 240e9, 12 * GiB)
V100_16GB = DeviceSpec("V100-SXM2-16GB", "gpu", 15.7e12, 900e9, 16 * GiB)
A100_40GB = DeviceSpec("A100-SXM4-40GB", "gpu", 19.5e12, 1555e9, 40 * GiB)
XEON_HOST = DeviceSpec("2-socket Xeon host", "cpu", 1.0e12, 230e9, 256 * GiB)

#: The device ``Node.cost`` is measured on: a V100 (``speed`` 1 in every cluster).
REFERENCE_DEVICE = V100_16GB

#: The device each kind's roofline costs assume (``costs[kind]`` of imported graphs); the
#: ``cpu_gpu`` cluster preset is built from the same two.
KIND_DEVICES: dict[str, DeviceSpec] = {"gpu": V100_16GB, "cpu": XEON_HOST}

#: Speed of the host CPU relative to the reference device, used where a cluster has no roofline.
XEON_HOST_SPEED = 1 / 15

PCIE3_BANDWIDTH, PCIE3_LATENCY = 12e9, 10e-6
NVLINK3_BANDWIDTH, NVLINK3_LATENCY = 300e9, 3e-6
#: Messages between worker processes of one machine: a cautious first guess (gloo over loopback
#: TCP measured this on the 2-core CI machine). calibrate() fits the machine's own: about
#: 40e9 B/s and 15 us through placerl's shared-memory transport there.
LOOPBACK_BANDWIDTH, LOOPBACK_LATENCY = 1e9, 2e-4

#: Fixed cost of launching one kernel (s), so that tiny ops do not cost nothing.
LAUNCH_OVERHEAD = 5e-6


def roofline_cost(
    flops: float,
    bytes_touched: float,
    device: DeviceSpec = REFERENCE_DEVICE,
    *,
    overhead: float = LAUNCH_OVERHEAD,
) -> float:
    """Seconds an op takes on ``device``: compute- or memory-bound, whichever is slower, plus a
    launch.

    Args:
        flops: Floating-point operations of the op.
        bytes_touched: Bytes read (inputs, weights) plus bytes written (output).
        device: The hardware (default: the reference device).
        overhead: Fixed launch cost in seconds.
    """
    return max(flops / device.peak_flops, bytes_touched / device.mem_bandwidth) + overhead


def kind_costs(flops: float, bytes_touched: float) -> dict[str, float]:
    """Roofline seconds of an op on the device of each kind of :data:`KIND_DEVICES`."""
    return {kind: roofline_cost(flops, bytes_touched, spec) for kind, spec in KIND_DEVICES.items()}
