"""Clusters: the devices a graph is placed on, the links between them, and the comm model.

A :class:`Cluster` is a frozen description: devices (name, kind, speed factor, memory), one
bandwidth and latency per ordered device pair, and the name of the communication model the
step-time simulator uses (``placeto``, ``links`` or ``ideal``; see :mod:`placerl.sim`).

Speed factors are relative to the reference device on which ``Node.cost`` was measured: a
device of speed 2 runs an op in ``cost / 2`` seconds (unless the node has an explicit cost for
the device's kind). Units are seconds, bytes and bytes per second.

Presets (``Cluster.preset(name, ...)``) live in the :data:`PRESETS` registry:

* ``placeto`` - n identical K80-class GPUs with the constants of Placeto's simulator
  (Addanki et al., NeurIPS 2019): 7,600 bytes/us transfer speed, a 25 us gap after each
  transfer, a 5.7 us gap after each op, one outgoing transfer channel per device.
* ``gpu4_pcie`` - 4 V100-16GB on PCIe 3.0 x16: 15.75 GB/s theoretical per direction, of which
  about 12 GB/s is reached by peer-to-peer copies; we use 12e9 B/s and a 10 us latency.
* ``gpu8_nvlink`` - a DGX A100: 8 A100-40GB on NVSwitch, 600 GB/s of NVLink 3 bandwidth per GPU
  (300e9 B/s per direction, NVIDIA's A100 datasheet) and about 3 us latency.
* ``cpu_gpu`` - one host CPU (a 2-socket Xeon, roughly 1/15 of a V100's FP32 throughput) and
  ``n_gpus`` V100-16GB GPUs on PCIe 3.0 (12e9 B/s, 10 us).
* ``local`` - this machine's cores as ``workers`` CPU devices (worker processes), for the
  measured objective (:mod:`placerl.measure`).
* ``homogeneous`` - ``n_devices`` identical devices with configurable links (tests, sweeps).

Device specifications come from :mod:`placerl.devices`, shared with the graph cost estimates.
:func:`load_cluster` resolves every spec form (preset with options, ``msr:<name>``, JSON file).
* ``Cluster.from_msr(path)`` - k accelerators and l CPUs from an msr-fiddle file header
  (Tarnawski et al., NeurIPS 2020); transfer times there come from the edges themselves.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import placerl.devices as specs
from placerl._io import atomic_write_text
from placerl._options import check_int, check_options
from placerl._registry import Registry
from placerl._spec import split_named
from placerl.errors import ClusterError, ConfigError
from placerl.msr_format import read_header, read_msr

#: Format tag and schema version of cluster JSON files (:meth:`Cluster.save`).
SCHEMA_FORMAT, SCHEMA_VERSION = "placerl-cluster", 1

#: Values of :attr:`Cluster.comm_model`, documented in :mod:`placerl.sim`.
COMM_MODELS = ("placeto", "links", "ideal")

#: Device kinds the pipeline objective treats as host CPUs (they pay no communication).
CPU_KINDS = frozenset({"cpu"})


@dataclass(frozen=True)
class Device:
    """One device of a cluster.

    Attributes:
        name: Unique name, e.g. ``gpu:0``.
        kind: Cost-table key (``gpu``, ``cpu``, ``accelerator``, ...): a node's ``costs[kind]``
            applies to this device.
        speed: Speed relative to the reference device (cost / speed = seconds here).
        memory: Bytes of memory (``math.inf`` for unlimited).
        peak_flops: Optional peak FLOP/s, for roofline cost estimates.
        mem_bandwidth: Optional memory bandwidth in bytes/s, for roofline cost estimates.
    """

    name: str
    kind: str = "gpu"
    speed: float = 1.0
    memory: float = math.inf
    peak_flops: float | None = None
    mem_bandwidth: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ClusterError(f"device name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.kind, str) or not self.kind:
            raise ClusterError(f"device {self.name!r}: kind must be a non-empty string")
        _positive(self.speed, f"device {self.name!r} speed", allow_inf=False)
        _positive(self.memory, f"device {self.name!r} memory", allow_inf=True)
        for what in ("peak_flops", "mem_bandwidth"):
            value = getattr(self, what)
            if value is not None:
                _positive(value, f"device {self.name!r} {what}", allow_inf=False)

    @property
    def is_cpu(self) -> bool:
        """True for host-CPU kinds (no communication charge under the pipeline objective)."""
        return self.kind in CPU_KINDS

    @classmethod
    def from_spec(cls, name: str, spec: specs.DeviceSpec, **overrides: Any) -> Device:
        """A device of the hardware ``spec`` (kind, memory, roofline), with overrides."""
        fields = {
            "kind": spec.kind,
            "memory": spec.memory,
            "peak_flops": spec.peak_flops,
            "mem_bandwidth": spec.mem_bandwidth,
        }
        return cls(name, **{**fields, **overrides})


def _number(value: Any, what: str) -> float:
    """``value`` as a float if it is a real number: strings and bools are refused, not read."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ClusterError(f"{what} must be a number, got {value!r}")
    return float(value)


def _positive(value: Any, what: str, *, allow_inf: bool) -> float:
    x = _number(value, what)
    if not x > 0 or (math.isinf(x) and not allow_inf):
        limit = "> 0" if allow_inf else "finite and > 0"
        raise ClusterError(f"{what} is {x!r}; it must be {limit}")
    return x


def _pair_matrix(value: Any, n: int, what: str) -> np.ndarray:
    """A scalar or an n x n matrix as a read-only float matrix (the diagonal is unused)."""
    raw = np.asarray(value)
    if raw.dtype.kind not in "iuf":  # strings, bools and objects are refused, not converted
        raise ClusterError(f"{what} must be a number or a matrix of numbers, got {value!r:.60}")
    arr = raw.astype(np.float64)
    if arr.ndim == 0:
        arr = np.full((n, n), float(arr))
    if arr.shape != (n, n):
        raise ClusterError(
            f"{what} matrix has shape {arr.shape}; expected ({n}, {n}) for {n} devices"
        )
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class Cluster:
    """Devices, pairwise links and the communication model of the step-time simulator.

    Args:
        devices: The devices; placements index into this sequence.
        bandwidth: Bytes/s per ordered pair ``[src, dst]`` (a scalar means every pair).
        latency: Seconds per transfer per ordered pair (a scalar means every pair).
        comm_model: ``placeto``, ``links`` or ``ideal`` (see :mod:`placerl.sim`).
        transfer_gap: Idle seconds on a channel after each transfer (``placeto`` model).
        op_gap: Idle seconds on a device after each op of nonzero cost.
        name: A label (the preset name for presets).

    Raises:
        ClusterError: No devices, duplicate names, zero / negative / NaN bandwidth, negative
            latency, bad memory or speed, mismatched matrix shapes, an unknown comm model.
    """

    devices: tuple[Device, ...]
    bandwidth: np.ndarray = field(default=np.inf)  # type: ignore[assignment]
    latency: np.ndarray = field(default=0.0)  # type: ignore[assignment]
    comm_model: str = "links"
    transfer_gap: float = 0.0
    op_gap: float = 0.0
    name: str = "cluster"

    def __post_init__(self) -> None:
        devices = tuple(self.devices)
        if not devices:
            raise ClusterError("a cluster needs at least one device")
        if not all(isinstance(d, Device) for d in devices):
            raise ClusterError("devices must be placerl.cluster.Device objects")
        names = [d.name for d in devices]
        duplicates = sorted({x for x in names if names.count(x) > 1})
        if duplicates:
            raise ClusterError(f"duplicate device names: {', '.join(duplicates)}")
        if self.comm_model not in COMM_MODELS:
            raise ClusterError(
                f"unknown comm_model {self.comm_model!r}; known: {', '.join(COMM_MODELS)}"
            )
        n = len(devices)
        bandwidth = _pair_matrix(self.bandwidth, n, "bandwidth")
        latency = _pair_matrix(self.latency, n, "latency")
        off_diagonal = ~np.eye(n, dtype=bool)
        bad = off_diagonal & ~(bandwidth > 0)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ClusterError(
                f"bandwidth {names[i]} -> {names[j]} is {float(bandwidth[i, j])!r}; it must be > 0"
            )
        bad = off_diagonal & ~((latency >= 0) & np.isfinite(latency))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ClusterError(
                f"latency {names[i]} -> {names[j]} is {float(latency[i, j])!r}; "
                "it must be finite and >= 0"
            )
        if not isinstance(self.name, str):
            raise ClusterError(f"cluster name must be a string, got {self.name!r}")
        for what in ("transfer_gap", "op_gap"):
            value = _number(getattr(self, what), what)
            if not (value >= 0 and math.isfinite(value)):
                raise ClusterError(f"{what} is {value!r}; it must be finite and >= 0")
            object.__setattr__(self, what, value)
        object.__setattr__(self, "devices", devices)
        object.__setattr__(self, "bandwidth", bandwidth)
        object.__setattr__(self, "latency", latency)

    # ------------------------------------------------------------------------- accessors
    @property
    def num_devices(self) -> int:
        """Number of devices."""
        return len(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Kind of each device, in device order."""
        return tuple(d.kind for d in self.devices)

    @property
    def speeds(self) -> np.ndarray:
        """Speed factor of each device."""
        return np.array([d.speed for d in self.devices], dtype=np.float64)

    @property
    def memory(self) -> np.ndarray:
        """Memory bytes of each device (``inf`` for unlimited)."""
        return np.array([d.memory for d in self.devices], dtype=np.float64)

    @property
    def is_cpu(self) -> np.ndarray:
        """Boolean per device: a host CPU kind."""
        return np.array([d.is_cpu for d in self.devices], dtype=bool)

    def transfer_time(self, nbytes: float, src: int, dst: int) -> float:
        """Uncontended seconds to move ``nbytes`` from device ``src`` to ``dst``."""
        if src == dst:
            return 0.0
        return float(self.latency[src, dst] + nbytes / self.bandwidth[src, dst])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description; :meth:`from_dict` reads it back."""
        return {
            "format": SCHEMA_FORMAT,
            "version": SCHEMA_VERSION,
            "name": self.name,
            "comm_model": self.comm_model,
            "transfer_gap": self.transfer_gap,
            "op_gap": self.op_gap,
            "devices": [vars(d).copy() for d in self.devices],
            "bandwidth": self.bandwidth.tolist(),
            "latency": self.latency.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Cluster:
        """Inverse of :meth:`to_dict`; checks the format tag, the version and every field.

        Raises:
            ClusterError: Not a cluster document, another schema version, or a bad field.
        """
        if not isinstance(data, dict) or data.get("format") != SCHEMA_FORMAT:
            raise ClusterError(
                f"not a placerl cluster document (expected format {SCHEMA_FORMAT!r})"
            )
        if data.get("version") != SCHEMA_VERSION:
            raise ClusterError(
                f"unsupported cluster schema version {data.get('version')!r}; "
                f"this placerl reads {SCHEMA_VERSION}"
            )
        records = data.get("devices")
        if not isinstance(records, list) or not all(isinstance(d, dict) for d in records):
            raise ClusterError("cluster document needs a list of device objects under 'devices'")
        try:
            devices = tuple(Device(**record) for record in records)
            fields = {
                k: data[k]
                for k in ("bandwidth", "latency", "comm_model", "transfer_gap", "op_gap", "name")
                if k in data
            }
            return cls(devices, **fields)
        except ClusterError:
            raise
        except (TypeError, ValueError) as err:
            raise ClusterError(f"bad field in cluster document: {err}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the cluster as versioned JSON, atomically; :meth:`load` reads it back."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cluster:
        """Read a cluster written by :meth:`save`.

        Raises:
            ClusterError: Missing file, invalid JSON or a bad document.
        """
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ClusterError(f"cluster file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ClusterError(f"cluster file {path} cannot be read: {err}") from None
        except json.JSONDecodeError as err:
            raise ClusterError(f"cluster file {path} is not valid JSON: {err}") from None
        return cls.from_dict(data)

    def fingerprint(self) -> str:
        """A SHA-256 of everything that affects costs (the label ``name`` excluded).

        Computed once (clusters are frozen): reference-cache lookups read it on every reset.
        """
        cached = self.__dict__.get("_fingerprint")
        if cached is None:
            description = {k: v for k, v in self.to_dict().items() if k != "name"}
            cached = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()
            object.__setattr__(self, "_fingerprint", cached)
        return cached

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cluster):
            return NotImplemented
        return (
            self.devices == other.devices
            and np.array_equal(self.bandwidth, other.bandwidth)
            and np.array_equal(self.latency, other.latency)
            and (self.comm_model, self.transfer_gap, self.op_gap)
            == (other.comm_model, other.transfer_gap, other.op_gap)
        )

    __hash__ = None  # type: ignore[assignment]

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Pickles drop the read-only flag of the link matrices; put it back.
        self.__dict__.update(state)
        self.bandwidth.flags.writeable = False
        self.latency.flags.writeable = False

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}x{self.kinds.count(k)}" for k in dict.fromkeys(self.kinds))
        return f"Cluster({self.name!r}, {kinds}, comm_model={self.comm_model!r})"

    # ----------------------------------------------------------------------- factories
    @classmethod
    def preset(cls, name: str, **options: Any) -> Cluster:
        """Build a registered preset, e.g. ``Cluster.preset("placeto", n_devices=3)``.

        Raises:
            ClusterError: Unknown preset (lists the known ones), unknown option (lists the
                preset's options) or a value of the wrong type (names the option).
        """
        try:
            factory = PRESETS[name]
        except ConfigError as err:
            raise ClusterError(str(err)) from None
        check_options(factory, options, what=f"cluster preset {name!r}", error=ClusterError)
        return factory(**options)

    @classmethod
    def from_msr(cls, path: str | Path) -> Cluster:
        """k accelerators + l CPUs with per-accelerator memory from an msr-fiddle file header.

        Args:
            path: A file path, or the name of a bundled file (``"bert24_training"``).
        """
        resolved, data = read_msr(path, ClusterError)
        k, l_cpus, memory = read_header(data, str(resolved), ClusterError)
        devices = [Device(f"acc:{i}", "accelerator", memory=memory) for i in range(k)]
        devices += [Device(f"cpu:{i}", "cpu") for i in range(l_cpus)]
        return cls(tuple(devices), comm_model="ideal", name=f"msr:{resolved.stem}")


PresetFn = Callable[..., Cluster]
#: Cluster presets by name (``<preset>?<options>`` cluster specs, :func:`load_cluster`).
PRESETS: Registry[PresetFn] = Registry("cluster preset")


def register_preset(name: str, *, overwrite: bool = False) -> Callable[[PresetFn], PresetFn]:
    """Register a cluster factory usable as ``Cluster.preset(name, **options)``."""
    return PRESETS.decorator(name, overwrite=overwrite)


def _gpus(n: int, spec: specs.DeviceSpec, *, option: str, **overrides: Any) -> list[Device]:
    count = check_int(n, option, minimum=1, error=ClusterError)
    return [Device.from_spec(f"gpu:{i}", spec, **overrides) for i in range(count)]


@register_preset("placeto")
def placeto(n_devices: int = 3, memory: float = specs.K80_DIE.memory) -> Cluster:
    """Placeto's simulator: K80-class GPUs, 7,600 B/us, 25 us transfer gap, 5.7 us op gap."""
    return Cluster(
        tuple(_gpus(n_devices, specs.K80_DIE, option="n_devices", memory=memory)),
        bandwidth=7600e6,
        latency=0.0,
        comm_model="placeto",
        transfer_gap=25e-6,
        op_gap=5.7e-6,
        name="placeto",
    )


@register_preset("gpu4_pcie")
def gpu4_pcie(n_devices: int = 4, comm_model: str = "links") -> Cluster:
    """V100-16GB GPUs on PCIe 3.0 x16 (12e9 B/s peer-to-peer, 10 us)."""
    return Cluster(
        tuple(_gpus(n_devices, specs.V100_16GB, option="n_devices")),
        bandwidth=specs.PCIE3_BANDWIDTH,
        latency=specs.PCIE3_LATENCY,
        comm_model=comm_model,
        name="gpu4_pcie",
    )


@register_preset("gpu8_nvlink")
def gpu8_nvlink(n_devices: int = 8, comm_model: str = "links") -> Cluster:
    """DGX A100: A100-40GB GPUs on NVSwitch (300e9 B/s per direction, 3 us)."""
    return Cluster(
        tuple(_gpus(n_devices, specs.A100_40GB, option="n_devices")),
        bandwidth=specs.NVLINK3_BANDWIDTH,
        latency=specs.NVLINK3_LATENCY,
        comm_model=comm_model,
        name="gpu8_nvlink",
    )


@register_preset("cpu_gpu")
def cpu_gpu(
    n_gpus: int = 2,
    cpu_speed: float = specs.XEON_HOST_SPEED,
    cpu_memory: float = specs.XEON_HOST.memory,
    comm_model: str = "links",
) -> Cluster:
    """One host CPU (device 0) and ``n_gpus`` V100-16GB GPUs, all on PCIe 3.0."""
    cpu = Device.from_spec("cpu:0", specs.XEON_HOST, speed=cpu_speed, memory=cpu_memory)
    return Cluster(
        (cpu, *_gpus(n_gpus, specs.V100_16GB, option="n_gpus")),
        bandwidth=specs.PCIE3_BANDWIDTH,
        latency=specs.PCIE3_LATENCY,
        comm_model=comm_model,
        name="cpu_gpu",
    )


@register_preset("local")
def local(
    workers: int = 2,
    bandwidth: float = specs.LOOPBACK_BANDWIDTH,
    latency: float = specs.LOOPBACK_LATENCY,
) -> Cluster:
    """This machine's cores as ``workers`` CPU devices, for measured runtimes.

    :mod:`placerl.measure` runs device ``i`` as a worker process pinned to the ``i``-th equal
    share of this process's cores; tensors move between workers through shared memory. Costs
    and links here are first guesses: :func:`placerl.measure.calibrate` fits them to
    measurements.
    """
    count = check_int(workers, "workers", minimum=1, error=ClusterError)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / count
    devices = tuple(Device(f"cpu:{i}", "cpu", memory=memory) for i in range(count))
    return Cluster(devices, bandwidth=bandwidth, latency=latency, name="local")


@register_preset("homogeneous")
def homogeneous(
    n_devices: int,
    *,
    kind: str = "gpu",
    memory: float = math.inf,
    bandwidth: float = specs.PCIE3_BANDWIDTH,
    latency: float = 0.0,
    comm_model: str = "links",
    speeds: Sequence[float] | None = None,
) -> Cluster:
    """A quick cluster of ``n_devices`` devices of one kind (tests, sanity envs, sweeps)."""
    n_devices = check_int(n_devices, "n_devices", minimum=1, error=ClusterError)
    speeds = [1.0] * n_devices if speeds is None else list(speeds)
    if len(speeds) != n_devices:
        raise ClusterError(f"got {len(speeds)} speeds for {n_devices} devices")
    devices = [Device(f"{kind}:{i}", kind, speed=s, memory=memory) for i, s in enumerate(speeds)]
    return Cluster(
        tuple(devices),
        bandwidth=bandwidth,
        latency=latency,
        comm_model=comm_model,
        name="homogeneous",
    )


def load_cluster(spec: str | os.PathLike[str] | Cluster) -> Cluster:
    """Resolve a cluster spec to a :class:`Cluster`; every consumer goes through this.

    Specs mirror :func:`placerl.graph.load_graph`:

    * a ``Cluster`` (returned as is);
    * a preset with options: ``placeto``, ``placeto?n_devices=4``,
      ``homogeneous?n_devices=8&bandwidth=12e9``, ``cpu_gpu?n_gpus=2`` (see :data:`PRESETS`);
    * ``msr:<name or path>``: the devices of an msr-fiddle file's header;
    * a path to a cluster JSON file written by :meth:`Cluster.save` (a ``.json`` name or a Path).

    Raises:
        ClusterError: Unknown preset or option (the message lists the known ones), a value of
            the wrong type (names the option), a repeated option, a missing or bad file.
    """
    if isinstance(spec, Cluster):
        return spec
    if isinstance(spec, os.PathLike):
        return Cluster.load(spec)
    if not isinstance(spec, str) or not spec:
        raise ClusterError(
            f"a cluster spec must be a Cluster, a preset spec, msr:<name> or a .json path, "
            f"got {spec!r}"
        )
    if spec.startswith("msr:"):
        return Cluster.from_msr(spec[4:])
    if spec.endswith(".json"):
        return Cluster.load(spec)
    try:
        name, options = split_named(spec, what="cluster spec")
    except ConfigError as err:
        raise ClusterError(str(err)) from None
    return Cluster.preset(name, **options)
