"""Torch's intra-op thread count, set deliberately for training processes and env workers.

Torch starts one thread per core it can see. In a container whose CPU quota (cgroup) is below
the cores it can see, or beside another busy process, those threads outnumber the cores they
get, and every parallel region waits for a thread that is not running: with one other process
busy on a two-core machine, training ran 5x to 20x slower (``bench_training_speed.py --busy
1``), worst for the LSTM, which opens a region per time step. So training takes the cores the
process may use, less those other processes kept busy while it looked, and vector-env workers,
which run no torch, take one.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

#: cgroup v2 and v1 files that hold a CPU quota.
_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1 = (
    Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
    Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
)


def cpu_quota(v2: Path = _CGROUP_V2, v1: tuple[Path, Path] = _CGROUP_V1) -> float | None:
    """The cgroup CPU quota in cores (``None``: no quota, or none readable)."""
    try:
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        if v1[0].is_file() and v1[1].is_file():
            quota, period = (int(p.read_text()) for p in v1)
            return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None
    return None


def _affinity() -> set[int]:
    if hasattr(os, "sched_getaffinity"):
        return os.sched_getaffinity(0)
    return set(range(os.cpu_count() or 1))


def available_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by the cgroup quota (at least 1)."""
    cores = len(_affinity())
    quota = cpu_quota()
    if quota is not None:
        cores = min(cores, math.floor(quota) or 1)
    return max(cores, 1)


def _cpu_times(cpus: set[int], stat: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(busy, total) clock ticks of ``cpus`` since boot, from ``/proc/stat`` (``None``: unread)."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    busy = total = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
            total += sum(ticks)
            busy += sum(ticks) - ticks[3] - ticks[4]
    return (busy, total) if total else None


def busy_elsewhere(window_s: float = 0.1) -> float:
    """Cores of this process's CPUs that other processes kept busy for ``window_s`` seconds,
    while this one slept (0.0 where ``/proc/stat`` cannot be read)."""
    cpus = _affinity()
    before, own_before = _cpu_times(cpus), time.process_time()
    time.sleep(window_s)
    after, own_after = _cpu_times(cpus), time.process_time()
    if before is None or after is None or after[1] <= before[1]:
        return 0.0
    busy = len(cpus) * (after[0] - before[0]) / (after[1] - before[1])
    return max(0.0, busy - (own_after - own_before) / window_s)


def training_threads(requested: int = 0) -> int:
    """The intra-op thread count for a training process.

    Args:
        requested: A thread count, or 0 for automatic: ``OMP_NUM_THREADS`` when it is set
            (a launcher that runs several jobs side by side sets it, as joblib does);
            otherwise :func:`available_cores` less the cores other processes keep busy
            (:func:`busy_elsewhere`; not under a CPU quota, where the CPUs are shared by
            design and their load says nothing about this process's share).
    """
    if requested > 0:
        return requested
    from_env = os.environ.get("OMP_NUM_THREADS", "")
    if from_env.isdigit() and int(from_env) > 0:
        return int(from_env)
    cores = available_cores()
    if cores > 1 and cores == len(_affinity()):
        cores -= round(busy_elsewhere())
    return max(cores, 1)


def set_torch_threads(requested: int = 0) -> int:
    """Set torch's intra-op threads to :func:`training_threads`; returns the count."""
    import torch

    threads = training_threads(requested)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def single_thread_worker() -> None:
    """Make a vector-env worker process single-threaded: it steps envs and runs no torch, so
    threads it would start only compete with the training process for the cores."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
