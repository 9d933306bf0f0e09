"""Devices of one process: one thread per device, for GPUs (and the host CPU beside them).

CUDA launches are asynchronous, so one process drives every GPU: each device gets a thread
that runs its steps in order on that device's current stream. A value read on another device
is copied there peer to peer (no host round trip) on a pair of copy streams that wait only for
the event recorded where the value was made; the reading stream then waits for the copy.
Host-CPU devices in the same cluster run their steps on their thread. A run ends when every
device is synchronized, so its runtime is the wall-clock time of the whole step; per-step
times are what the host saw (launch times on a GPU), except in
:meth:`~placerl.measure.Measurer.profile`, which synchronizes after every step. A device
thread that hangs cannot be stopped: the pool is abandoned (its weights stay in memory) and a
new one starts.

The same executor runs CPU devices only (``executor="threads"``), which is how the tests check
it without a GPU: the threads share the interpreter, so it measures less faithfully than
worker processes, but it computes the same results.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import torch

from placerl.errors import MeasurementError
from placerl.measure.layout import Layout
from placerl.measure.program import load_program
from placerl.measure.runner import Runner
from placerl.measure.source import ModelSource

__all__ = ["ThreadPool", "ThreadTransport", "thread_devices"]


def thread_devices(kinds: list[str]) -> list[str]:
    """Torch devices for the leading device kinds this process can drive: ``gpu`` kinds take
    the CUDA devices in order, ``cpu`` kinds the host."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    devices: list[str] = []
    for kind in kinds:
        if kind == "gpu" and gpus > sum(d.startswith("cuda") for d in devices):
            devices.append(f"cuda:{sum(d.startswith('cuda') for d in devices)}")
        elif kind == "cpu":
            devices.append("cpu")
        else:
            break
    return devices


class _Mailbox:
    """Messages between the threads of one run: tag -> (tensor, event), and an abort flag."""

    def __init__(self, parties: int) -> None:
        self.items: dict[int, tuple[torch.Tensor, Any]] = {}
        self.ready = threading.Condition()
        self.barrier = threading.Barrier(parties)
        self.aborted = False

    def abort(self) -> None:
        with self.ready:
            self.aborted = True
            self.ready.notify_all()
        self.barrier.abort()


class ThreadTransport:
    """:class:`~placerl.measure.runner.Transport` between the device threads of one process."""

    def __init__(self, rank: int, device: str, mailbox: _Mailbox) -> None:
        self.rank, self.device, self.mailbox = rank, torch.device(device), mailbox
        self.arena = torch.empty(0, dtype=torch.uint8)  # payloads travel as tensors here
        self._cuda = self.device.type == "cuda"
        # Sources of copies still in flight: freed at the next barrier, after every device
        # synchronized (the caching allocator would otherwise hand a source's memory to its
        # own stream while another device's stream still reads it).
        self._in_flight: list[torch.Tensor] = []
        self._streams: dict[torch.device, tuple[Any, Any]] = {}

    def send(self, data: torch.Tensor, peer: int, tag: int, slot: tuple[int, int]) -> None:
        copy = data.clone()  # later in-place ops on the source cannot race the reader
        event = None
        if self._cuda:
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))
        with self.mailbox.ready:
            self.mailbox.items[tag] = (copy, event)
            self.mailbox.ready.notify_all()

    def receive(self, peer: int, tag: int, slot: tuple[int, int]) -> torch.Tensor:
        box = self.mailbox
        with box.ready:
            box.ready.wait_for(lambda: tag in box.items or box.aborted)
            if box.aborted:
                raise MeasurementError("another device failed during this run")
            data, event = box.items.pop(tag)
        if not self._cuda:  # a host device reads the bytes itself: the copy must be done
            if event is not None:
                event.synchronize()
            return data.to(self.device)
        compute = torch.cuda.current_stream(self.device)
        self._in_flight.append(data)
        if data.device.type != "cuda" or data.device == self.device:
            if event is not None:
                compute.wait_event(event)
            return data.to(self.device, non_blocking=True)
        # A peer copy waits for the current streams of both devices and makes both wait for
        # it; on copy streams of their own it waits only for the value's event.
        src_stream, dst_stream = self._copy_streams(data.device)
        src_stream.wait_event(event)
        with torch.cuda.stream(src_stream), torch.cuda.stream(dst_stream):
            out = data.to(self.device, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(dst_stream)
        compute.wait_event(copied)
        out.record_stream(compute)  # allocated on the copy stream, read on this one
        return out

    def _copy_streams(self, source: torch.device) -> tuple[Any, Any]:
        """The copy streams (on ``source`` and on this device) for values from ``source``."""
        if source not in self._streams:
            self._streams[source] = (torch.cuda.Stream(source), torch.cuda.Stream(self.device))
        return self._streams[source]

    def barrier(self) -> None:
        self._in_flight.clear()
        self.mailbox.barrier.wait()

    def synchronize(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)


class ThreadPool:
    """Device threads for one program (same interface as
    :class:`~placerl.measure.workers.WorkerPool`).

    Args:
        source: What rebuilds the module (loaded once per device, weights on it).
        layout: The program laid over the graph.
        devices: Torch device of each logical device.
        timeout: Seconds a command may take before it fails.
    """

    def __init__(
        self, source: ModelSource, layout: Layout, devices: list[str], timeout: float
    ) -> None:
        self.source, self.layout, self.devices, self.timeout = source, layout, devices, timeout
        self._runners: list[Runner] = []
        self._mailbox: _Mailbox | None = None
        self._threads: ThreadPoolExecutor | None = None

    def start(self) -> None:
        """Load the program on every device."""
        if self._runners:
            return
        self._mailbox = _Mailbox(len(self.devices))
        self._runners = [
            Runner(
                load_program(self.source, device),
                self.layout,
                ThreadTransport(rank, device, self._mailbox),
            )
            for rank, device in enumerate(self.devices)
        ]
        self._threads = ThreadPoolExecutor(len(self.devices), thread_name_prefix="placerl-device")

    def call(self, command: str, per_worker: list[tuple[Any, ...]], arena: int = 0) -> list[Any]:
        """Run ``runner.<command>(*args, None)`` on every device thread; replies in order.

        Raises:
            MeasurementError: A device failed or did not finish within the timeout (a hung
                thread cannot be stopped: the pool is abandoned and a new one starts).
        """
        self.start()
        assert self._threads is not None and self._mailbox is not None
        self._mailbox.items.clear()
        calls: list[Callable[[], Any]] = [
            lambda r=runner, a=args: getattr(r, command)(*a, None)
            for runner, args in zip(self._runners, per_worker, strict=True)
        ]
        futures = [self._threads.submit(c) for c in calls]
        done, late = wait(futures, timeout=self.timeout, return_when="FIRST_EXCEPTION")
        failed = [f for f in done if f.exception() is not None]
        if failed or late:
            self._mailbox.abort()
            wait(futures, timeout=1.0)
            self._abandon()
            if failed:
                error = failed[0].exception()
                raise MeasurementError(
                    f"device {futures.index(failed[0])} failed while {command}: "
                    f"{type(error).__name__}: {error}"
                )
            raise MeasurementError(
                f"device {futures.index(next(iter(late)))} did not finish {command} within "
                f"{self.timeout:g} s (hung or too slow); the devices restart on next use"
            )
        return [f.result() for f in futures]

    def _abandon(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        self._runners, self._mailbox, self._threads = [], None, None

    def stop(self, force: bool = False) -> None:
        """Release the devices' programs."""
        self._abandon()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    @property
    def running(self) -> bool:
        """Whether the devices are loaded."""
        return bool(self._runners)
