"""CPU worker processes: one per logical device, pinned to its own cores, talking over gloo.

Each worker is a spawned process that joins a ``torch.distributed`` gloo group with the
other workers, pins its compute thread to its cores (``sched_setaffinity``; gloo's I/O threads
stay unpinned), sets torch's thread count to match, loads the program and then serves commands from the coordinator over a pipe. Tensors
move between workers with gloo's point-to-point ``isend`` / ``irecv``, so two branches placed on
two workers really run in parallel and a cut edge really pays a copy.

The coordinator never blocks without a deadline: a worker that does not answer in time, or
dies, ends the command with a :class:`~placerl.errors.MeasurementError`, and the whole pool is
stopped (its gloo group may be wedged); the next command starts a fresh one.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from typing import Any

from placerl.errors import MeasurementError
from placerl.measure.layout import Layout
from placerl.measure.source import ModelSource

__all__ = ["WorkerPool", "cpu_slots"]

#: Seconds a worker gets to start: spawn, import torch, trace the module, join the group.
START_TIMEOUT = 300.0


def cpu_slots(workers: int) -> list[list[int]]:
    """Cores of each worker: this process's cores split evenly (``workers`` <= cores)."""
    cores = sorted(os.sched_getaffinity(0))
    per = len(cores) // workers
    return [cores[i * per : (i + 1) * per] for i in range(workers)]


@dataclass
class _GlooTransport:
    """:class:`~placerl.measure.runner.Transport` over the default gloo group."""

    dist: Any

    def isend(self, tensor: Any, peer: int, tag: int) -> Any:
        return self.dist.isend(tensor, peer, tag=tag)

    def irecv(self, tensor: Any, peer: int, tag: int) -> Any:
        return self.dist.irecv(tensor, peer, tag=tag)

    def barrier(self) -> None:
        self.dist.barrier()

    @property
    def rank(self) -> int:
        return self.dist.get_rank()


def _worker_main(rank: int, world: int, store: str, source: ModelSource, layout: Layout,
                 cores: list[int], timeout: float, conn: Connection) -> None:  # fmt: skip
    """A worker's whole life: set up, then answer commands until told to stop."""
    try:
        import torch
        import torch.distributed as dist

        from placerl.measure.program import load_program
        from placerl.measure.runner import Runner

        dist.init_process_group(
            "gloo", init_method=f"file://{store}", rank=rank, world_size=world,
            timeout=timedelta(seconds=timeout),
        )  # fmt: skip
        # Pinned after gloo started its I/O threads, which stay free to run on any core:
        # on the compute thread's own core they wait for a scheduler tick (measured on 2
        # cores: 1 KiB round trips of 2.7 ms instead of 0.23 ms).
        os.sched_setaffinity(0, cores)
        torch.set_num_threads(len(cores))
        runner = Runner(load_program(source), layout, _GlooTransport(dist))
        conn.send(("ok", None))
    except BaseException as err:  # report anything, then exit
        conn.send(("error", _describe(err)))
        return
    while True:
        command, args = conn.recv()
        if command == "stop":
            return
        try:
            conn.send(("ok", getattr(runner, command)(*args)))
        except BaseException as err:
            conn.send(("error", _describe(err)))


def _describe(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err) else ''}{where}"


class WorkerPool:
    """Worker processes for one program, started on first use and restarted after a failure.

    Args:
        source: What rebuilds the module in each worker.
        layout: The program laid over the graph.
        workers: Number of workers (logical devices).
        timeout: Seconds a command may take before the pool is stopped and it fails.
    """

    def __init__(self, source: ModelSource, layout: Layout, workers: int, timeout: float) -> None:
        self.source, self.layout, self.workers, self.timeout = source, layout, workers, timeout
        self._processes: list[Any] = []
        self._conns: list[Connection] = []
        self._store: str | None = None

    @property
    def running(self) -> bool:
        """Whether the workers are up."""
        return bool(self._processes)

    def start(self) -> None:
        """Spawn the workers and wait until each has loaded the program."""
        if self.running:
            return
        context = multiprocessing.get_context("spawn")
        fd, self._store = tempfile.mkstemp(prefix="placerl-gloo-")
        os.close(fd)
        os.unlink(self._store)  # gloo's file store creates it
        for rank, cores in enumerate(cpu_slots(self.workers)):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_worker_main,
                args=(rank, self.workers, self._store, self.source, self.layout, cores,
                      self.timeout, theirs),
                daemon=True, name=f"placerl-worker-{rank}",
            )  # fmt: skip
            process.start()
            theirs.close()
            self._processes.append(process)
            self._conns.append(ours)
        self._collect(max(START_TIMEOUT, self.timeout), "starting")

    def call(self, command: str, per_worker: list[tuple[Any, ...]]) -> list[Any]:
        """Run ``runner.<command>(*args)`` on every worker; their replies in rank order.

        Raises:
            MeasurementError: A worker failed, died or did not answer within the timeout
                (the pool is then stopped).
        """
        self.start()
        for conn, args in zip(self._conns, per_worker, strict=True):
            conn.send((command, args))
        return self._collect(self.timeout, command)

    def _collect(self, timeout: float, what: str) -> list[Any]:
        replies: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        while len(replies) < len(self._conns):
            waiting = [c for r, c in enumerate(self._conns) if r not in replies]
            ready = wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                late = [r for r in range(len(self._conns)) if r not in replies]
                self.stop()
                raise MeasurementError(
                    f"worker {late[0]} did not finish {what} within {timeout:g} s "
                    "(hung or too slow); the workers were stopped and restart on next use"
                )
            for conn in ready:
                rank = self._conns.index(conn)
                try:
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    code = self._processes[rank].exitcode
                    self.stop()
                    raise MeasurementError(
                        f"worker {rank} died while {what} (exit code {code}; a negative code is "
                        "the signal, -9 often the out-of-memory killer); the workers restart "
                        "on next use"
                    ) from None
                if status != "ok":
                    self.stop()
                    raise MeasurementError(f"worker {rank} failed while {what}: {payload}")
                replies[rank] = payload
        return [replies[r] for r in range(len(self._conns))]

    def stop(self) -> None:
        """Stop every worker (politely, then by force)."""
        for conn in self._conns:
            try:
                conn.send(("stop", ()))
            except (OSError, ValueError):
                pass
        for process in self._processes:
            process.join(timeout=2.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=5.0)
        for conn in self._conns:
            conn.close()
        self._processes, self._conns = [], []
        if self._store and os.path.exists(self._store):
            os.unlink(self._store)
        self._store = None

    def __del__(self) -> None:
        if self._processes:
            self.stop()
