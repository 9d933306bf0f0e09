"""The learned rows of PlaceBench, each against iterated local search at its own budget.

For every recipe, tier and seed, the recipe trains per family (or per case, ``--learn-on
case``), selects on the ``validation`` cases and places the ``test`` cases
(``placerl.bench.recipe.run_recipe``) into ``<out>/<recipe label>/<tier>/``. Its budget per
case, every training call and second counted once, then buys iterated local search on the
same cases twice: at equal simulator calls and at equal seconds
(``placerl.bench.versus``), into ``<out>/search/``. It writes:

* ``LEADERBOARD.md`` (its JSON and the anytime plots): the learned rows beside the searches
  and the committed classic rows (``--classic``), each against the strongest classic placer
  within its budget;
* ``versus.md`` and ``versus.json``: each recipe over iterated local search per tier and
  regime, paired by case (each case's seeds as their geometric mean), with the interval
  (the rows of earlier runs into the folder kept, unless this run replaces them); a recipe
  trained per family on a tier of several also family by family, each family's search at
  that family's own budget per case.

Finished trainings and records are read back, so an interrupted run resumes.
``--pretrained`` places the tiers with a shipped policy instead (trained once, for its own
family): its card's training is counted once over the cases it places here.

    python benchmarks/bench_learned.py --recipes improve --tiers families devices \\
        --seeds 0 1 2 --budget total_steps=0
    python benchmarks/bench_learned.py --recipes improve --tiers devices --searches greedy local
    python benchmarks/bench_learned.py --recipes scratch --tiers tiny --learn-on case \\
        --budget total_steps=20000
    python benchmarks/bench_learned.py --recipes excursions --tiers tiny --learn-on case \\
        --seeds 0 1 --train-only --budget total_steps=100000 eval_samples=0 env.moves=64 \\
        env.undo_worse=true env.kick=4 &  # other seeds likewise, then one run without it
    python benchmarks/bench_learned.py --recipes --pretrained cifar10 --tiers models \\
        --searches greedy local
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, merged_rows, paired_table, write_results
from bench_placebench import folder_name

from placerl.bench.case import Case
from placerl.bench.leaderboard import load_records, write_leaderboard
from placerl.bench.recipe import finished_record, recipe_label, run_recipe
from placerl.bench.run import run_case, run_cases, select_cases
from placerl.bench.suite import Suite, load_suite
from placerl.bench.versus import (
    FAMILY_SEARCHES,
    best_runtimes,
    budget_per_case,
    coverage_sections,
    search_at_calls,
    search_at_seconds,
    versus_rows,
)

RESULTS = Path(__file__).resolve().parent / "results" / "placebench-v1"
#: Marks ``versus.json`` as no record: the leaderboard of the folder skips it.
VERSUS_KIND = "placebench-versus"
#: What a row of a run from before a field existed shows for it.
EARLIER_ROWS = {
    "family": "all",
    "floor": None,
    "best_known": None,
    "unplaced": None,
    "placements": None,
}
#: The columns of ``versus.md``.
SHOWN = (
    "placer",
    "tier",
    "family",
    "regime",
    "pairs",
    "ratio",
    "interval",
    "wins",
    "losses",
    "unplaced",
    "placements",
    "floor",
    "best_known",
    "calls_per_case",
    "search_calls_per_case",
    "seconds_per_case",
    "search_seconds_per_case",
    "commit",
)


def search_options(spec: str) -> dict[str, Any] | None:
    """``greedy`` (none), ``local`` or ``sample?budget=200`` as the policy placer's options."""
    name, _, query = spec.partition("?")
    if name == "greedy" and not query:
        return None
    options: dict[str, Any] = {"search": name}
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        options[key] = int(value) if value.isdigit() else value
    return options


def run_tier(
    args: argparse.Namespace, recipe: str, search: str, tier: str, out: Path
) -> list[dict[str, Any]]:
    """The recipe's records on ``tier`` over the seeds (placed with ``search``), the two
    matched searches, and their paired rows (none with ``--train-only``)."""
    suite, cases = select_cases(args.suite, tier, "test", args.family)
    options = search_options(search)
    label = recipe_label(recipe, args.budget, args.learn_on, options)
    learned = []
    for seed in args.seeds:
        learned += run_recipe(
            suite,
            cases,
            recipe,
            args.budget,
            seed,
            out / folder_name(label) / tier,
            learn_on=args.learn_on,
            search=options,
        )
        print(f"{label} seed {seed} on {tier}: {len(cases)} cases", flush=True)
    if args.train_only:
        return []
    return matched(args, learned, label, cases, by_family=args.learn_on == "family")


def run_pretrained_tier(
    args: argparse.Namespace, name: str, search: str, tier: str, out: Path
) -> list[dict[str, Any]]:
    """The shipped policy ``name``'s records on ``tier`` (placed with ``search``; trained
    once, for its own family: its card's training counted once over these cases), the two
    matched searches, and their paired rows."""
    from placerl.agents.pretrained import load_card

    suite, cases = select_cases(args.suite, tier, "test", args.family)
    card = load_card(name)
    options = {"pretrained": name, **(search_options(search) or {})}
    label = "policy?" + "&".join(f"{key}={value}" for key, value in options.items())
    training = card["training"] | {"seed": card["seed"]}
    folder = out / folder_name(label) / tier
    learned = [
        finished_record(folder, case, label, card["seed"])
        or run_case(
            case, "policy", folder, suite=suite.id, label=label, training=training, options=options
        )
        for case in cases
    ]
    print(f"{label} on {tier}: {len(cases)} cases", flush=True)
    return matched(args, learned, label, cases)


def matched(
    args: argparse.Namespace,
    learned: list[dict[str, Any]],
    label: str,
    cases: list[Case],
    by_family: bool = False,
) -> list[dict[str, Any]]:
    """Iterated local search on ``cases`` (one tier's) at the learned records' calls and
    seconds per case, and the paired rows of the learned records against each; with
    ``by_family`` (a recipe trained per family) on a tier of several families, also each
    family's records against the search at that family's own budget (a family whose
    training cost more gets a longer search)."""
    out = Path(args.out)
    found = searches(args.suite, out, learned, label, cases, args.family)
    known = known_runtimes([out, *args.classic])
    rows = versus_rows(learned, found, args.family or "all", known)
    families = sorted({case.family for case in cases})
    if not by_family or len(families) < 2:
        return rows
    family_of = {case.name: case.family for case in cases}
    for family in families:
        mine = [r for r in learned if family_of.get(r["case"]) == family]
        if mine:
            found = searches(args.suite, out, mine, label, cases, family, own_budget=True)
            rows += versus_rows(mine, found, family, known)
    return rows


def known_runtimes(folders: list[Path | str]) -> dict[str, float]:
    """Each case's best known runtime over every record under those of ``folders`` that
    exist (:func:`placerl.bench.versus.best_runtimes`; none without a record)."""
    try:
        records = load_records([folder for folder in folders if Path(folder).is_dir()])
    except FileNotFoundError:  # no record there yet
        return {}
    return best_runtimes(record for _, record in records)


def searches(
    suite: str | Suite,
    out: Path,
    learned: list[dict[str, Any]],
    label: str,
    cases: list[Case],
    only: str | None = None,
    *,
    own_budget: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Iterated local search on the tier of ``cases`` (or family ``only`` of it) at the calls
    and at the seconds per case of the ``learned`` records: ``{"calls": records, "seconds":
    records}``, in ``<out>/search/<label>-<regime>[-<family>]/<tier>``; a family searched at
    its ``own_budget`` (part of a tier's cases, no leaderboard row) under
    :data:`~placerl.bench.versus.FAMILY_SEARCHES`."""
    budget = budget_per_case(learned)
    tier, out = cases[0].tier, out / "search"
    if own_budget:
        out = out / FAMILY_SEARCHES
    found = {}
    for regime, spec in (
        ("calls", search_at_calls(budget["calls"])),
        ("seconds", search_at_seconds(budget["seconds"])),
    ):
        name = f"{label}-{regime}" + (f"-{only.rpartition('/')[2]}" if only else "")
        where = out / folder_name(name) / tier
        drop_other_matches(where, spec)
        found[regime] = run_cases(suite, tier, "test", spec, where, family=only, progress=False)
    return found


def drop_other_matches(folder: Path, spec: str) -> int:
    """Delete the records in ``folder`` of another search than ``spec``.

    They matched an earlier budget of the same recipe, whose records were placed again (so
    their calls or seconds moved); the match to this budget replaces them. Records of
    ``spec`` stay, so an interrupted match resumes; a file that does not read stays too
    (``run_cases`` runs its case again).

    Returns:
        How many records were deleted.
    """
    dropped = 0
    for path in folder.glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or record.get("placer") != spec:
            path.unlink()
            dropped += 1
    return dropped


def save_versus(
    rows: list[dict[str, Any]],
    out: Path,
    config: argparse.Namespace | dict[str, Any],
    last_run: str,
    classic: list[str],
    suite: str = "placebench-v1",
) -> Path:
    """Pool ``rows`` into ``<out>/versus.json`` (a row replacing the earlier one of its
    placer, tier, family and regime) and its ``versus.md`` (whose header says what the
    ``last_run`` was), and write ``<out>/LEADERBOARD.md`` over ``out`` and the ``classic``
    folders. Returns the JSON's path."""
    key = ("placer", "tier", "family", "regime")
    rows = merged_rows(out / "versus.json", rows, key, defaults=EARLIER_ROWS)
    board = write_leaderboard([out, *classic], out / "LEADERBOARD.md")
    path = write_results(
        "versus",
        rows,
        out,
        config=config,
        markdown=report(rows, suite, last_run),
        extra={"kind": VERSUS_KIND},
    )
    print(f"{paired_table(rows, SHOWN)}\nLeaderboard in {board}; paired rows in {path}")
    return path


def report(rows: list[dict[str, Any]], suite: str, last_run: str) -> str:
    """``versus.md``: what ran last, the rows at a glance (:func:`at_a_glance`), the paired
    table and each row's verdict."""
    verdicts = "\n".join(
        f"* {row['tier']}{_family(row)}, {row['regime']}: {row['verdict']}." for row in rows
    )
    return (
        f"# Learned recipes against iterated local search on {suite} (test)\n\n"
        f"The last run: {last_run}. The "
        "table pools every run into this folder, each row with the commit of its run. "
        "Each recipe's runtimes over the search's at the recipe's calls or seconds per "
        "case (every training call counted once), paired by case over the seeds "
        "(below 1: the recipe's placements run faster). A case whose placement did not "
        "fit or failed in some seed is no pair but a loss (where the search's fit); "
        "`unplaced` counts those placements, of `placements` over the cases and seeds. "
        "`floor`: the lower bound over "
        "the search's runtime, as a geometric mean over the paired cases: no placer's "
        "ratio goes below it. `best_known`: the same mean of the best runtime any record "
        "of the case in the results reached (any placer, budget or seed): a ratio below it needs a "
        "placement nobody has found (empty, here and in `unplaced` and `placements`: a row of "
        "a run that did not record them).\n\n"
        f"{at_a_glance(rows, suite)}\n\n## Every row\n\n"
        f"{paired_table(rows, SHOWN)}\n\n{verdicts}\n"
    )


def at_a_glance(rows: list[dict[str, Any]], suite: str) -> str:
    """Each placer's ratio to the search per tier of ``suite``, one table per regime
    (:func:`placerl.bench.versus.coverage`): where it ran, and where it did not."""
    families = load_suite(suite).families("test")
    return "## At a glance\n\n" + coverage_sections(rows, families, markdown_table)


def _family(row: dict[str, Any]) -> str:
    """`` (<family>)`` for a row of one family, nothing for a whole tier's."""
    family = row.get("family", "all")
    return "" if family == "all" else f" ({family})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="*", default=["improve"])
    parser.add_argument(
        "--pretrained",
        nargs="*",
        default=[],
        help="shipped policies to place the tiers with (e.g. cifar10), "
        "their training counted once over the cases",
    )
    parser.add_argument("--tiers", nargs="+", default=["families", "devices"])
    parser.add_argument("--suite", default="placebench-v1")
    parser.add_argument("--family", default=None, help="only this family of each tier")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--budget",
        nargs="*",
        default=[],
        help="placerl-train overrides of every recipe (total_steps=20000 ...)",
    )
    parser.add_argument("--learn-on", default="family", choices=("family", "case"))
    parser.add_argument(
        "--searches",
        nargs="+",
        default=["greedy"],
        help="the policy's searches at inference: greedy, local, 'ils?budget=2000', "
        "'sample?budget=200' (each its own row and training)",
    )
    parser.add_argument(
        "--classic",
        nargs="*",
        default=[str(RESULTS)],
        help="folders of classic records for the leaderboard",
    )
    parser.add_argument("--out", default=str(RESULTS / "learned"))
    parser.add_argument(
        "--train-only",
        action="store_true",
        help="train and place the recipes' cases, nothing else: processes given other "
        "--seeds share the work, and a last run without it reads theirs back",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    rows = [
        row
        for recipe in args.recipes
        for search in args.searches
        for tier in args.tiers
        for row in run_tier(args, recipe, search, tier, out)
    ]
    if args.train_only:
        return
    rows += [
        row
        for name in args.pretrained
        for search in args.searches
        for tier in args.tiers
        for row in run_pretrained_tier(args, name, search, tier, out)
    ]
    last_run = (
        f"seeds {', '.join(map(str, args.seeds))}; budget "
        f"{' '.join(args.budget) or 'the recipes own'}; learned per {args.learn_on}"
    )
    save_versus(rows, out, args, last_run, args.classic, args.suite)


if __name__ == "__main__":
    main()
