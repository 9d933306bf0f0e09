"""Which order should a deployable learned placer visit the nodes in? The ``improve`` recipe
(the policy that places unseen graphs faster than the classic placers) per traversal order.

The study's arms train from a random placement for 50 episodes, a regime where no policy is
one to deploy. Here each order gets placerl's best recipe instead: ``experiment=improve``
(cloned from ``best_move`` on the 24 training graphs of the layered family, three passes over
the nodes in the order, from ``best_of``), 3 seeds, and places graphs it never saw: the 8
held-out layered graphs and the 16 validation graphs, so 24 and 48 pairs per order (graph x
seed). Each order runs ``benchmarks/bench_recipes.py --recipes improve --steps 0 --seeds 3
--override order=<order>`` (topo: the recipe's own results, ``recipes_improve.json``); this
script pairs every order's zero-shot runtimes with topo's and writes the report:

    python experiments/traversal_order_study/improve_orders.py                # runs what is missing
    python experiments/traversal_order_study/improve_orders.py --models DIR   # keep the policies

Results: ``results/improve/report.md`` and ``orders.csv``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats

from placerl.comparison import compare_pairs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
ORDERS = (
    "topo",
    "alpha",
    "reverse_topo",
    "dfs_preorder",
    "dfs_postorder",
    "bfs",
    "lexico_topo",
    "reverse_postorder",
    "random_topo",
)
#: The rows each order is compared on: the held-out graphs' zero-shot placements and the
#: validation graphs' greedy ones (neither seen in training).
SPLITS = {"held-out": "zero-shot", "validation": "validation"}


def results_file(order: str) -> Path:
    """The benchmark's results of ``order`` (topo: the recipe's own run)."""
    return RESULTS / (
        "recipes_improve.json" if order == "topo" else f"recipes_improve_order-{order}.json"
    )


def run_missing(models: str | None) -> None:
    """Run the benchmark for every order whose results file is missing."""
    for order in ORDERS:
        if results_file(order).is_file():
            continue
        command = [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_recipes.py"),
            "--recipes",
            "improve",
            "--steps",
            "0",
            "--seeds",
            "3",
            "--threads",
            "1",
            "--name",
            "recipes_improve",
        ]
        command += [] if order == "topo" else ["--override", f"order={order}"]
        command += ["--models", models] if models else []
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True, cwd=ROOT)


def load(order: str) -> pd.DataFrame:
    """One order's zero-shot and validation runs: split, graph, seed, runtime, evaluations."""
    rows = json.loads(results_file(order).read_text())
    frame = pd.DataFrame([r for r in rows if r["recipe"] == "improve"])
    frame = frame[frame["method"].isin(SPLITS.values())]
    frame["split"] = frame["method"].map({m: s for s, m in SPLITS.items()})
    frame["order"] = order
    return frame[["order", "split", "graph", "seed", "runtime", "vs_constructive", "evaluations"]]


def compare(runs: pd.DataFrame) -> pd.DataFrame:
    """Per split and order: the paired comparison with topo, and the order's own figures."""
    rows: list[dict[str, Any]] = []
    for (split, order), mine in runs.groupby(["split", "order"], sort=False):
        topo = runs[(runs["split"] == split) & (runs["order"] == "topo")]
        both = mine.merge(topo, on=["graph", "seed"], suffixes=("", "_topo"))
        result = compare_pairs(both["runtime"].to_numpy(), both["runtime_topo"].to_numpy())
        rows.append(
            {
                "split": split,
                "order": order,
                "pairs": result.pairs,
                "vs_constructive": round(float(stats.gmean(mine["vs_constructive"])), 3),
                "evaluations": round(float(mine["evaluations"].mean())),
                "vs_topo": round(result.ratio, 3),
                "ci95": (
                    f"[{result.ci_low:.3f}, {result.ci_high:.3f}]" if order != "topo" else "-"
                ),
                "faster": f"{result.wins}/{result.pairs}",
                "p_value": round(result.p_value, 4) if order != "topo" else float("nan"),
                "verdict": "" if order == "topo" else result.verdict(order, "topo"),
            }
        )
    return pd.DataFrame(rows)


def report(table: pd.DataFrame, out: Path) -> str:
    """The report's markdown: the tables per split and every verdict."""
    parts = [
        "# The improve recipe per traversal order\n",
        "Zero-shot runtime over the best constructive placer (HEFT, m-ETF, m-SCT) per "
        "graph, simulator evaluations per episode, and each order's runtime over topo's "
        "on the same graph and seed (geometric mean, bootstrap 95% interval, pairs where "
        "the order is faster, Wilcoxon signed-rank p). Generated by `python "
        "experiments/traversal_order_study/improve_orders.py`.\n",
    ]
    for split, rows in table.groupby("split", sort=False):
        parts.append(f"## {split}\n")
        parts.append(rows.drop(columns=["split", "verdict"]).to_markdown(index=False) + "\n")
        parts += [f"- {verdict}" for verdict in rows["verdict"] if verdict]
        parts.append("")
    text = "\n".join(parts)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(text)
    table.to_csv(out / "orders.csv", index=False)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="folder to keep the policies in")
    parser.add_argument("--out", default=str(HERE / "results" / "improve"))
    args = parser.parse_args(argv)
    run_missing(args.models)
    runs = pd.concat([load(order) for order in ORDERS], ignore_index=True)
    print(report(compare(runs), Path(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
