"""``unchecked_distributions``: torch distributions built without argument checks, in a block."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def unchecked_distributions() -> Iterator[None]:
    """Build torch distributions without checking their arguments, within the block.

    The checks (that logits are finite, probabilities a simplex, a sample in the support)
    cost about 50 us per distribution on 2 cores, and SB3 builds two to three per policy call
    (masking rebuilds the categorical): 0.1-0.2 ms per rollout step, more than a small
    policy's arithmetic. placerl's heads and masks produce valid logits by construction; the
    previous default is restored on leaving.
    """
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)
