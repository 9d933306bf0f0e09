"""Shared helpers of the benchmarks: timing by repetition, result tables and result files.

A result file is ``<name>.json``, an object ``{"provenance", "config", "rows"}``: what made
the rows (:func:`placerl._provenance.provenance`: versions, git revision, command, machine,
date), the script's arguments and the rows. The markdown table beside it opens with a line
naming the same commit, date and machine (:func:`provenance_line`), so that a figure quoted
from either can be traced. Files written before provenance was recorded are a bare list of
rows; :func:`read_results` reads both.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from placerl._provenance import provenance


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


def load_note() -> tuple[str, dict[str, Any]]:
    """The machine's load when a timing benchmark starts, as a sentence and a JSON field: on
    a shared machine the same code times several-fold slower under load, and the provenance
    names the machine, not how busy it was."""
    if not hasattr(os, "getloadavg"):
        return "", {}
    one, five, _ = os.getloadavg()
    cores = os.cpu_count()
    return (
        f" Load average when it started: {one:.1f} (1 min), {five:.1f} (5 min) on {cores} cores.",
        {"load_average": {"1min": one, "5min": five, "cores": cores}},
    )


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of equal keys as a markdown table."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(row[k]) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def paired_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Paired comparisons (:func:`placerl.comparison.compare_pairs` rows) as markdown:
    ``columns`` of each row, the ratio to 3 decimals with its ``interval``, a ``p_value`` to 2
    significant digits, the ``commit`` of the run that made the row (:func:`merged_rows`), the
    other numbers to 4, ``None`` (a field an earlier run did not record) as nothing."""

    def shown(row: dict[str, Any]) -> dict[str, Any]:
        text = {
            key: f"{value:.4g}" if isinstance(value, float) else "" if value is None else value
            for key, value in row.items()
        }
        text["ratio"] = f"{row['ratio']:.3f}"
        text["interval"] = f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        text["commit"] = f"`{str((row.get('run') or {}).get('commit') or 'not recorded')[:12]}`"
        if "p_value" in row:
            text["p_value"] = f"{row['p_value']:.2g}"
        return {key: text[key] for key in columns}

    return markdown_table([shown(row) for row in rows])


def merged_rows(
    path: str | Path,
    rows: Sequence[dict[str, Any]],
    key: Sequence[str],
    defaults: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``rows`` after the rows of the result file at ``path`` (if any) that they do not
    replace, a row replacing one with the same ``key`` fields: runs into one folder pool.
    Each of ``rows`` gets the ``run`` that made it (commit, date, command; a row of an
    earlier run keeps its own), since the file's provenance is its last run's. ``defaults``
    fills fields that earlier rows were written without."""
    try:
        earlier = json.loads(Path(path).read_text())["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        earlier = []
    earlier = [{**(defaults or {}), **row} for row in earlier]
    here = provenance()
    run = {
        "commit": here.get("git_revision"),
        "date": here.get("date"),
        "command": here.get("command"),
    }
    new = {tuple(row[k] for k in key) for row in rows}
    return [row for row in earlier if tuple(row.get(k) for k in key) not in new] + [
        {**row, "run": row.get("run", run)} for row in rows
    ]


def write_results(
    name: str,
    rows: Sequence[dict[str, Any]],
    out_dir: str | Path,
    *,
    config: argparse.Namespace | Mapping[str, Any],
    markdown: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<name>.json`` under ``out_dir`` (:func:`result_record`); with ``markdown``,
    also ``<name>.md``, headed by the same provenance (:func:`write_markdown`). Returns the
    JSON's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = result_record(rows, config, extra)
    path = out / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, default=str))
    if markdown is not None:
        write_markdown(name, markdown, out, record["provenance"])
    return path


def result_record(
    rows: Sequence[dict[str, Any]],
    config: argparse.Namespace | Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A result file's content: the rows with their provenance and ``config`` (the script's
    arguments, as JSON values), and ``extra`` fields beside the rows."""
    items = vars(config) if isinstance(config, argparse.Namespace) else dict(config)
    plain = json.loads(json.dumps(items, default=str))  # paths and the like as their text
    return {"provenance": provenance(), "config": plain, "rows": list(rows), **(extra or {})}


def write_markdown(
    name: str, text: str, out_dir: str | Path, record: Mapping[str, Any] | None
) -> Path:
    """Write ``<name>.md``: ``text`` headed by the provenance ``record``
    (:func:`with_provenance`). Returns the path."""
    path = Path(out_dir) / f"{name}.md"
    path.write_text(with_provenance(text, record))
    return path


def with_provenance(text: str, record: Mapping[str, Any] | None) -> str:
    """Markdown ``text`` with :func:`provenance_line` of ``record`` on top (below the title
    where ``text`` opens with one)."""
    title = ""
    if text.startswith("# "):
        title, _, text = text.partition("\n")
        title += "\n\n"
    return f"{title}{provenance_line(record)}\n\n{text.lstrip()}"


def provenance_line(record: Mapping[str, Any] | None) -> str:
    """One line naming the commit, date, machine and command of a result's provenance."""
    if not record:
        return "_No provenance recorded: the commit, command and machine are unknown._"
    revision = record.get("git_revision") or "unknown"
    commit, dirty = revision.removesuffix("+dirty"), revision.endswith("+dirty")
    machine = record.get("machine") or {}
    gpus = machine.get("gpus")
    gpu_words = "GPUs not looked up" if gpus is None else ", ".join(gpus) or "no GPU"
    return (
        f"_Commit `{commit[:12]}`{' with uncommitted changes' if dirty else ''}, "
        f"{record.get('date', 'date unknown')}, on {machine.get('cpu', 'an unknown CPU')} "
        f"({machine.get('cores', '?')} cores, {gpu_words}): "
        f"`{record.get('command', '?')}`._"
    )


def read_results(path: str | Path) -> dict[str, Any]:
    """A result file as ``{"provenance", "config", "rows", ...}``; a file from before
    provenance was recorded (a bare list of rows) gets ``None`` for both."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, list):
        return {"provenance": None, "config": None, "rows": data}
    return data


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a result file, of either layout (:func:`read_results`)."""
    return read_results(path)["rows"]


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--out`` (where results go) and ``--threads`` (torch threads) for training benchmarks."""
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (1 when running beside other jobs)"
    )


def apply_run_options(args: argparse.Namespace) -> None:
    """Set torch's thread count when ``--threads`` was given (also through
    ``OMP_NUM_THREADS``, which :func:`placerl.train.train`'s automatic count follows)."""
    if args.threads:
        import os

        import torch

        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)
