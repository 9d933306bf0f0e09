"""CPU worker processes: one per logical device, pinned to its own cores.

Each worker is a fresh process (:mod:`placerl._processes`: forked from a server that imported
torch once, or spawned) that pins itself to its cores (``sched_setaffinity``), sets
torch's thread count to match, loads the program and then serves commands from the
coordinator over a pipe. Workers exchange tensors through shared memory and pipes
(:mod:`placerl.measure.transport`), so two branches placed on two workers really run in
parallel and a cut edge really pays a copy.

The coordinator never blocks without a deadline: a worker that does not answer in time, or
dies, ends the command with a :class:`~placerl.errors.MeasurementError`, and the whole pool is
stopped (a worker may be left waiting for a message that never comes); the next command
starts a fresh one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

from placerl._processes import adopt_environment, start_method
from placerl.errors import MeasurementError
from placerl.measure.layout import Layout
from placerl.measure.source import ModelSource
from placerl.measure.transport import Arena

__all__ = ["WorkerPool", "cpu_slots", "worker_devices"]

#: Seconds a worker gets to start: spawn, import torch, trace the module.
START_TIMEOUT = 300.0


def cpu_slots(workers: int) -> list[list[int]]:
    """Cores of each worker: this process's cores split evenly (``workers`` <= cores)."""
    cores = sorted(os.sched_getaffinity(0))
    per = len(cores) // workers
    return [cores[i * per : (i + 1) * per] for i in range(workers)]


def worker_devices(kinds: list[str]) -> list[str]:
    """Torch devices of the leading device kinds worker processes can be: ``cpu`` kinds, one
    core or more each."""
    cores = len(os.sched_getaffinity(0))
    devices: list[str] = []
    for kind in kinds:
        if kind != "cpu" or len(devices) >= cores:
            break
        devices.append("cpu")
    return devices


def _worker_main(
    rank: int,
    source: ModelSource,
    layout: Layout,
    cores: list[int],
    peers: dict[int, Connection],
    conn: Connection,
    environ: dict[str, str],
) -> None:
    """A worker's whole life: set up, then answer commands until told to stop."""
    try:
        adopt_environment(environ)
        os.sched_setaffinity(0, cores)
        import torch

        from placerl.measure.program import load_program
        from placerl.measure.runner import Runner
        from placerl.measure.transport import PipeTransport

        torch.set_num_threads(len(cores))
        runner = Runner(load_program(source), layout, PipeTransport(rank, peers))
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
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}{where}"


class WorkerPool:
    """Worker processes for one program, started on first use and restarted after a failure.

    Args:
        source: What rebuilds the module in each worker.
        layout: The program laid over the graph.
        devices: Torch device of each worker (``cpu``; one worker per entry).
        timeout: Seconds a command may take before the pool is stopped and it fails.
    """

    def __init__(
        self, source: ModelSource, layout: Layout, devices: list[str], timeout: float
    ) -> None:
        self.source, self.layout, self.timeout = source, layout, timeout
        self.workers = len(devices)
        self._processes: list[Any] = []
        self._conns: list[Connection] = []
        self._arena = Arena()

    @property
    def running(self) -> bool:
        """Whether the workers are up."""
        return bool(self._processes)

    def start(self) -> None:
        """Spawn the workers and wait until each has loaded the program."""
        if self.running and all(p.is_alive() for p in self._processes):
            return
        if self.running:  # one died while idle: start afresh
            self.stop(force=True)
        context = multiprocessing.get_context(start_method())
        peers: list[dict[int, Connection]] = [{} for _ in range(self.workers)]
        for a in range(self.workers):
            for b in range(a + 1, self.workers):
                peers[a][b], peers[b][a] = context.Pipe()
        for rank, cores in enumerate(cpu_slots(self.workers)):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_worker_main,
                args=(rank, self.source, self.layout, cores, peers[rank], theirs, dict(os.environ)),
                daemon=True,
                name=f"placerl-worker-{rank}",
            )
            process.start()
            theirs.close()
            self._processes.append(process)
            self._conns.append(ours)
        for pipes in peers:
            for pipe in pipes.values():
                pipe.close()
        self._arena = Arena()  # fresh workers have none yet
        self._collect(max(START_TIMEOUT, self.timeout), "starting")

    def call(self, command: str, per_worker: list[tuple[Any, ...]], arena: int = 0) -> list[Any]:
        """Run ``runner.<command>(*args, new_arena)`` on every worker; replies in rank order.

        ``arena``: bytes of shared payload buffer the command needs (a bigger buffer, when
        one is made, goes to every worker as the last argument; else ``None``).

        Raises:
            MeasurementError: A worker failed, died or did not answer within the timeout
                (the pool is then stopped).
        """
        self.start()
        new = self._arena.tensor if self._arena.fit(arena) else None
        for rank, (conn, args) in enumerate(zip(self._conns, per_worker, strict=True)):
            try:
                conn.send((command, (*args, new)))
            except OSError:  # it died since start()
                raise self._death(rank, command) from None
        return self._collect(self.timeout, command)

    def _death(self, rank: int, what: str) -> MeasurementError:
        """Stop the pool; the error that says worker ``rank`` died."""
        for process in self._processes:
            process.join(timeout=0.2)  # let a killed worker's exit code settle
        code = self._processes[rank].exitcode
        self.stop(force=True)
        return MeasurementError(
            f"worker {rank} died while {what} (exit code {code}; a negative code is the "
            "signal, -9 often the out-of-memory killer); the workers restart on next use"
        )

    def _dead(self) -> int | None:
        """A worker process that has exited, if any."""
        return next((r for r, p in enumerate(self._processes) if not p.is_alive()), None)

    def _collect(self, timeout: float, what: str) -> list[Any]:
        replies: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        while len(replies) < len(self._conns):
            waiting = [c for r, c in enumerate(self._conns) if r not in replies]
            ready = wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                late = [r for r in range(len(self._conns)) if r not in replies]
                self.stop(force=True)
                raise MeasurementError(
                    f"worker {late[0]} did not finish {what} within {timeout:g} s "
                    "(hung or too slow); the workers were stopped and restart on next use"
                )
            for conn in ready:
                rank = self._conns.index(conn)
                try:
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    raise self._death(rank, what) from None
                if status != "ok":
                    dead = self._dead()  # peers of a killed worker fail too: report the death
                    if dead is not None:
                        raise self._death(dead, what)
                    self.stop(force=True)
                    raise MeasurementError(f"worker {rank} failed while {what}: {payload}")
                replies[rank] = payload
        return [replies[r] for r in range(len(self._conns))]

    def stop(self, force: bool = False) -> None:
        """Stop every worker: politely, then by force (at once with ``force``: after a
        failure some may wait forever for a message)."""
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):  # a dead worker's pipe
                conn.send(("stop", ()))
        for process in self._processes:
            process.join(timeout=0.0 if force else 2.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=5.0)
        for conn in self._conns:
            conn.close()
        self._processes, self._conns = [], []

    def __del__(self) -> None:
        if self._processes:
            self.stop()
