"""The ablation ladder of the faithful presets on PlaceBench, each step a paired row.

For each faithful preset (``placeto_faithful``, ``doppler_faithful``, ``gdp_faithful``), every
step of its ladder (``placerl.bench.ablation``: faithful -> +heft_features -> +clone ->
+rollback -> the tuned recipe) trains per family on the tier's ``train`` cases, selects on
its ``validation`` cases and places the split's cases (``placerl.bench.recipe.run_recipe``), at
every seed, into ``<out>/<preset>/<step>/``; the classic placers of ``--classic`` place the
same cases into ``<out>/classic/<placer>/``. Finished trainings and records are read back,
so an interrupted run resumes. Then it writes:

* ``LEADERBOARD.md`` (and its JSON and anytime plots): one row per step and placer, the
  score with its interval over cases and seeds, against the strongest classic placer at
  equal budget (``placerl.bench.leaderboard``);
* ``ablation.md`` and ``ablation.json``: each step paired with the one below by case and
  seed, the geometric-mean runtime ratio with its bootstrap 95% interval, wins, losses and
  the signed-rank test (``placerl.comparison.compare_pairs``): the gain of each choice.

Both pool every ladder run into ``--out``: a run replaces only the rows it makes again.

    python benchmarks/bench_ablation.py --tier tiny --seeds 0 1 2 --budget total_steps=20000
    python benchmarks/bench_ablation.py --presets placeto_faithful --tier families \\
        --family families/cifar10 --budget total_steps=40000 time_limit_s=600
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import merged_rows, paired_table, write_results

from placerl.bench.ablation import faithful_presets, paired_rows, run_ladder
from placerl.bench.leaderboard import write_leaderboard
from placerl.bench.run import run_cases, select_cases

OUT = Path(__file__).resolve().parent / "results" / "ablation"
#: The columns of ``ablation.md``.
SHOWN = (
    "preset",
    "step",
    "versus",
    "pairs",
    "ratio",
    "interval",
    "wins",
    "losses",
    "p_value",
    "kept",
    "commit",
)


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """``ablation.md``: what ran, the paired table, and each step's verdict."""
    verdicts = "\n".join(f"* {row['preset']}, {row['step']}: {row['verdict']}." for row in rows)
    return (
        f"# The ablation ladder on {args.suite} {args.tier} ({args.split})\n\n"
        f"The last run: seeds {', '.join(map(str, args.seeds))}; budget "
        f"{' '.join(args.budget) or 'the recipes own'}. The table pools every run into this "
        "folder, each row with the commit of its run (its records hold the rest). Each step "
        "over the one below it, paired by case and seed (below 1: the step's placements run "
        "faster); `kept`: the env step of the weights each of the step's trainings kept, of "
        "its steps (0: those before the first update, the warm start's clone where the step "
        "clones; empty: a row of a run that did not record it).\n\n"
        f"{paired_table(rows, SHOWN)}\n\n{verdicts}\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--presets",
        nargs="+",
        default=None,
        help="faithful presets to climb from (default: every one)",
    )
    parser.add_argument("--suite", default="placebench-v1")
    parser.add_argument("--tier", default="tiny")
    parser.add_argument("--split", default="test")
    parser.add_argument("--family", default=None, help="only this family of the tier")
    parser.add_argument(
        "--steps",
        nargs="+",
        default=None,
        help="only these steps of each ladder (faithful +heft_features "
        "+clone +rollback tuned); each pairs with the one run below it",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--budget",
        nargs="*",
        default=[],
        help="placerl-train overrides on every step (total_steps=20000 ...)",
    )
    parser.add_argument(
        "--classic",
        nargs="*",
        default=["heft", "best_of"],
        help="classic placers to place the same cases, for the leaderboard",
    )
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    suite, cases = select_cases(args.suite, args.tier, args.split, args.family)
    out = Path(args.out)
    presets = args.presets or faithful_presets()
    rows = []
    for preset in presets:
        records = run_ladder(suite, cases, preset, args.budget, args.seeds, out, steps=args.steps)
        rows += paired_rows(preset, records)
        print(
            f"{preset}: {', '.join(records)} on {len(cases)} cases x {len(args.seeds)} seeds",
            flush=True,
        )
    for placer in args.classic:
        run_cases(
            suite,
            args.tier,
            args.split,
            placer,
            out / "classic" / placer,
            family=args.family,
            progress=False,
        )
    folders = sorted(path for path in out.iterdir() if path.is_dir())  # earlier runs' too
    board = write_leaderboard(folders, out / "LEADERBOARD.md")  # not ablation.json: no record
    rows = merged_rows(out / "ablation.json", rows, ("preset", "step", "versus"), {"kept": None})
    path = write_results("ablation", rows, out, config=args, markdown=report(rows, args))
    print(f"{paired_table(rows, SHOWN)}\nLeaderboard in {board}; paired steps in {path}")


if __name__ == "__main__":
    main()
