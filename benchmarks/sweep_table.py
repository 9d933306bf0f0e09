"""The trials of a hyperparameter search as a table: parameters and objective, best first.

    placerl-train -m hparams_search=placeto_optuna
    python benchmarks/sweep_table.py multirun/placeto_optuna --name optuna_placeto

Reads each ``trial_<n>/.hydra/overrides.yaml`` (the parameters Optuna chose) and
``trial_<n>/result.json`` (the run's ``vs_best_baseline``), writes
``benchmarks/results/<name>.{json,md}`` with the best parameters from
``optimization_results.yaml`` on top, and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, write_results

from placerl.results import vs_best_baseline


def trials(sweep: Path, searched: list[str]) -> list[dict[str, Any]]:
    """One row per finished trial: its number, the searched parameters, its objective."""
    rows = []
    for folder in sorted(sweep.glob("trial_*"), key=lambda p: int(p.name.split("_")[1])):
        result = folder / "result.json"
        if not result.is_file():
            continue
        overrides = yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text())
        chosen = dict(item.split("=", 1) for item in overrides)
        graphs = json.loads(result.read_text())["graphs"]
        objective = vs_best_baseline([(g["final_runtime"], g["baselines"]) for g in graphs])
        rows.append(
            {
                "trial": int(folder.name.split("_")[1]),
                **{key.lstrip("+").split(".")[-1]: chosen.get(key, "-") for key in searched},
                "vs_best_baseline": round(objective, 4),
            }
        )
    return sorted(
        rows, key=lambda row: (math.isnan(row["vs_best_baseline"]), row["vs_best_baseline"])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="the search's sweep folder")
    parser.add_argument("--name", default="optuna", help="results file name")
    parser.add_argument("--command", default="", help="the command that ran the search")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    best = yaml.safe_load((args.sweep / "optimization_results.yaml").read_text())
    rows = trials(args.sweep, list(best["best_params"]))
    params = ", ".join(f"`{k.lstrip('+')}={v}`" for k, v in best["best_params"].items())
    text = (
        f"Command: `{args.command}`. Best value {best['best_value']:.4f} with {params}."
        f"\n\n{markdown_table(rows)}\n"
    )
    write_results(args.name, rows, args.out, config=args, markdown=text)
    print(text)


if __name__ == "__main__":
    main()
