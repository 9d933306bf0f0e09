"""Two results of ``bench_recipes.py`` paired: each row of a candidate run over the same row
(recipe, seed, graph, method) of a reference run, per method.

For an ablation whose policies share their seeds with a reference run (an ``--override`` the
same seeds trained without): the pairs differ only in the setting, so a paired comparison
detects effects that the two runs' intervals over graphs and seeds hide. A results file holds
its run's arguments in ``config`` (those from before provenance was recorded, in
``results/archive/``, hold none: the ``.md`` beside each names its command); that the runs
differ only in the setting is the caller's to check. The
statistics are placerl's (:func:`placerl.comparison.compare_pairs`): geometric-mean ratio
of runtimes with a bootstrap 95% interval over the pairs, wins and losses, and the Wilcoxon
signed-rank p-value.

    python benchmarks/recipes_paired.py benchmarks/results/recipes_improve_cifar10_X.json \\
        benchmarks/results/archive/recipes_improve_cifar10.json --recipe improve
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, read_rows

from placerl.comparison import compare_pairs

Key = tuple[int, str, str]  # seed, graph, method


FIELDS = ("recipe", "seed", "graph", "method", "runtime")


def runtimes(rows: list[dict[str, Any]], recipe: str) -> dict[Key, float]:
    """``recipe``'s runtime per (seed, graph, method) in a results file's rows.

    Raises:
        SystemExit: A row lacks one of :data:`FIELDS` (not a ``bench_recipes.py`` result), or
            two rows share a (seed, graph, method).
    """
    found: dict[Key, float] = {}
    for r in rows:
        missing = [field for field in FIELDS if field not in r]
        if missing:
            raise SystemExit(f"not a bench_recipes.py result: a row lacks {', '.join(missing)}")
        key = (r["seed"], r["graph"], r["method"])
        if r["recipe"] == recipe and found.setdefault(key, float(r["runtime"])) != r["runtime"]:
            raise SystemExit(
                f"two rows of recipe {recipe!r} for seed {key[0]}, graph {key[1]!r}, "
                f"method {key[2]!r}"
            )
    return found


def paired(
    candidate: list[dict[str, Any]], reference: list[dict[str, Any]], recipe: str
) -> list[dict[str, Any]]:
    """One row per method both runs hold for ``recipe``: the candidate over the reference on
    their common (seed, graph) pairs.

    Raises:
        SystemExit: The runs share no row of ``recipe``.
    """
    ours, theirs = runtimes(candidate, recipe), runtimes(reference, recipe)
    common = sorted(set(ours) & set(theirs))
    if not common:
        raise SystemExit(f"the two runs share no (seed, graph, method) row of recipe {recipe!r}")
    table = []
    for method in dict.fromkeys(key[2] for key in ours):  # in the candidate's order
        keys = [key for key in common if key[2] == method]
        if not keys:
            continue
        result = compare_pairs([ours[k] for k in keys], [theirs[k] for k in keys])
        table.append(
            {
                "method": method,
                "pairs": result.pairs,
                "ratio": round(result.ratio, 4),
                "ci95": result.ci_note or f"{result.ci_low:.4f}-{result.ci_high:.4f}",
                "faster": result.wins,
                "slower": result.losses,
                "equal": result.ties,
                "p": result.p_note or f"{result.p_value:.2g}",  # the note says why there is none
            }
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate", type=Path, help="results JSON of the setting under test")
    parser.add_argument("reference", type=Path, help="results JSON of the same seeds without it")
    parser.add_argument("--recipe", default="improve")
    args = parser.parse_args()
    rows = [read_rows(path) for path in (args.candidate, args.reference)]
    print(f"{args.candidate.name} over {args.reference.name} ({args.recipe}; below 1: faster)")
    print(markdown_table(paired(*rows, args.recipe)))


if __name__ == "__main__":
    main()
