"""Torch's intra-op thread count, set deliberately for training processes and env workers.

Torch starts one thread per core it can see. In a container whose CPU quota (cgroup) is below
the cores it can see, or beside other training jobs, those threads outnumber the cores they
get, and every parallel region waits for threads that are not running: the LSTM, which opens
one region per time step, trained 10x to 40x slower that way (``bench_training_speed.py
--threads 16`` on two cores reproduces it). So training picks its thread count from the
cores the process may actually use, and vector-env workers, which run no torch, take one.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

#: cgroup v2 and v1 files that hold a CPU quota.
_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
              Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))  # fmt: skip


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


def available_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by the cgroup quota (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    quota = cpu_quota()
    if quota is not None:
        cores = min(cores or 1, math.floor(quota) or 1)
    return max(cores or 1, 1)


def training_threads(requested: int = 0) -> int:
    """The intra-op thread count for a training process.

    Args:
        requested: A thread count, or 0 for automatic: ``OMP_NUM_THREADS`` when it is set
            (a launcher that runs several jobs side by side sets it, as joblib does),
            otherwise :func:`available_cores`.
    """
    if requested > 0:
        return requested
    from_env = os.environ.get("OMP_NUM_THREADS", "")
    return int(from_env) if from_env.isdigit() and int(from_env) > 0 else available_cores()


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
