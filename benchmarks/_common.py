"""Shared helpers of the benchmarks: timing by repetition and result tables."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def best_time(fn: Callable[[], Any], *, repeat: int = 5, number: int = 1) -> float:
    """Seconds per call: the best of ``repeat`` rounds of ``number`` calls (least noisy)."""
    fn()  # warm up (numba compilation, caches)
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return min(rounds)


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of equal keys as a markdown table."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(row[k]) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def write_results(name: str, rows: Sequence[dict[str, Any]], out_dir: str | Path) -> Path:
    """Write rows as JSON beside the benchmarks; returns the path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(list(rows), indent=1))
    return path


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--out`` (where results go) and ``--threads`` (torch threads) for training benchmarks."""
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (1 when running beside other jobs)")  # fmt: skip


def apply_run_options(args: argparse.Namespace) -> None:
    """Set torch's thread count when ``--threads`` was given (also through
    ``OMP_NUM_THREADS``, which :func:`placerl.train.train`'s automatic count follows)."""
    if args.threads:
        import os

        import torch

        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)
