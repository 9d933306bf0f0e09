"""Small modules for the measurement tests (importable, so worker processes can unpickle them).

``Faulty`` misbehaves only inside worker processes and only while the file named by
``$PLACERL_TEST_FAULT`` says how (``crash``, ``hang`` or ``oom``): tracing and the
coordinator's reference run are unaffected, and tests switch faults on and off between runs.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import torch
from torch import nn

FAULT_ENV = "PLACERL_TEST_FAULT"


class Branches(nn.Module):
    """Two parallel branches joined by an add: placement can run them side by side."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.left = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
        self.right = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))
        self.head = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.left(x) + self.right(x))


class _Fault(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        path = os.environ.get(FAULT_ENV)
        worker = multiprocessing.current_process().name.startswith("placerl-worker")
        if path and worker and x.device.type != "meta":  # runs, not the workers' own import
            fault = Path(path).read_text().strip() if Path(path).exists() else ""
            if fault == "crash":
                os._exit(3)
            if fault == "hang":
                time.sleep(600)
            if fault == "oom":
                raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate")
        return x * 2


class Faulty(nn.Module):
    """A linear layer, a leaf that can fail on demand, and another linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.fault, self.last = nn.Linear(8, 8), _Fault(), nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.last(self.fault(self.first(x)))


class Box:
    """Not a pytree: a tensor inside it cannot be found, so it cannot move between devices."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


class _Boxer(nn.Module):
    def forward(self, x: torch.Tensor) -> Box:
        return Box(x + 1)


class Boxed(nn.Module):
    """Passes a ``Box`` from one leaf module to the next op."""

    def __init__(self) -> None:
        super().__init__()
        self.boxer, self.out = _Boxer(), nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.boxer(x).tensor)


class LostWrite(nn.Module):
    """Writes into a computed tensor in place, and reads the tensor, not the write's result."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y[:, 0] = 0.0
        return y * 2
