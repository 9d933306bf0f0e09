"""The classic rows of PlaceBench, regenerated: every classic placer on every tier's test cases.

Runs each row of ``placerl.bench.placebench.CLASSIC_ROWS`` on the test split of its tiers
(``placerl.bench.run.run_cases``: one record per case with its provenance, trace and simulator
calls; finished records are read back, so an interrupted run resumes), into
``<out>/<placer as a folder name>/<tier>/``, then writes the leaderboard of the whole folder
(``LEADERBOARD.md``, its JSON and the anytime plots). The committed board in
``benchmarks/results/placebench-v1/`` is this script's output.

    python benchmarks/bench_placebench.py                       # every row: hours on 2 cores
    python benchmarks/bench_placebench.py --tiers tiny          # one tier
    python benchmarks/bench_placebench.py --placers heft m_etf --tiers scale
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from placerl.bench.leaderboard import write_leaderboard
from placerl.bench.placebench import CLASSIC_ROWS, placebench_v1
from placerl.bench.run import run_cases

OUT = Path(__file__).resolve().parent / "results" / "placebench-v1"


def folder_name(placer: str) -> str:
    """A placer spec as a folder name (``local_search?init=best_of`` ->
    ``local_search_init_best_of``)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", placer).strip("_")


def rows(tiers: list[str], placers: list[str] | None) -> list[tuple[str, str]]:
    """``(placer, tier)`` pairs of :data:`CLASSIC_ROWS` within ``tiers`` and ``placers``."""
    every = [tier for tier in placebench_v1().tiers if tier != "scale"]
    return [
        (placer, tier)
        for placer, only in CLASSIC_ROWS
        for tier in (only or every)
        if tier in tiers and (placers is None or placer in placers)
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", nargs="+", default=list(placebench_v1().tiers))
    parser.add_argument(
        "--placers",
        nargs="+",
        default=None,
        help="only these rows (placer specs as CLASSIC_ROWS writes them)",
    )
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    known = {placer for placer, _ in CLASSIC_ROWS}
    unknown = sorted(set(args.placers or ()) - known)
    if unknown:
        parser.error(f"not a classic row: {', '.join(unknown)}; rows: {', '.join(sorted(known))}")
    out = Path(args.out)
    for placer, tier in rows(args.tiers, args.placers):
        records = run_cases("placebench-v1", tier, "test", placer, out / folder_name(placer) / tier)
        failed = sum(1 for record in records if record.get("error"))
        print(f"{placer} on {tier}: {len(records)} cases, {failed} failed", flush=True)
    board = write_leaderboard([out], out / "LEADERBOARD.md")
    print(f"Leaderboard in {board}")


if __name__ == "__main__":
    main()
