"""How placerl starts worker processes (measurement workers, subprocess envs).

A spawned worker imports torch again, 1 to 2 s of CPU each. Where the platform has a fork
server, workers fork from it instead, and it imports torch (and Stable-Baselines3, when
installed) once. Like spawned ones, they start clean of the parent's state: no CUDA context,
no torch threads, since the server itself never computes anything.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping

#: Modules the fork server imports once for all its workers (a missing one is skipped).
PRELOAD = ["torch", "stable_baselines3"]


def start_method() -> str:
    """``"forkserver"`` with :data:`PRELOAD` where available, else ``"spawn"``.

    The preload list is the server's when it starts (the first worker of the process):
    workers still import what else they need themselves.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    multiprocessing.set_forkserver_preload(PRELOAD)
    return "forkserver"


def adopt_environment(environ: Mapping[str, str]) -> None:
    """In a worker: take the parent's environment as it was when the worker was made (pass
    ``dict(os.environ)`` along); a fork server's children would otherwise keep the server's,
    from when it started."""
    os.environ.clear()
    os.environ.update(environ)
