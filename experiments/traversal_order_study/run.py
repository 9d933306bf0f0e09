"""Regenerate the traversal-order study: one Hydra multirun, then ``placerl-report``.

    python experiments/traversal_order_study/run.py            # the committed subsample
    python experiments/traversal_order_study/run.py --full --launcher slurm \\
        hydra.launcher.partition=gpu                            # the whole protocol on SLURM
    python experiments/traversal_order_study/run.py --dry-run   # print the command only

The subsample (about 55 minutes on 2 cores): 9 orders x the cifar10-, ptb- and nmt-like
families (2 graphs each, ``n=100``) x the GNN and the LSTM x 5 seeds, 5,000 env steps (50
episodes) per run. ``--full``: Placeto's sizes (about 300-400 nodes) and 32 graphs per family.
Extra arguments are Hydra overrides for every job (``env=construct``, ``total_steps=...``).
Finished jobs are skipped when the command runs again; a failed one is listed in the report.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDERS = ["topo", "alpha", "reverse_topo", "dfs_preorder", "dfs_postorder", "bfs",
          "lexico_topo", "reverse_postorder", "random_topo"]  # fmt: skip
FAMILIES = ["cifar10", "ptb", "nmt"]
POLICIES = ["placeto_gnn", "placeto_lstm"]
SEEDS = 5


def graph_specs(full: bool) -> list[str]:
    """The study's graphs: 2 per family at ``n=100`` (subsample) or Placeto's 32 per family at
    the generators' default sizes (``--full``); graph seed 0 shaped placerl's recipes and is
    left out."""
    seeds, size = (range(1, 33), "") if full else (range(1, 3), "n=100&")
    return [f"synthetic:{family}?{size}seed={s}" for family in FAMILIES for s in seeds]


def sweep_command(args: argparse.Namespace) -> list[str]:
    """``placerl-train -m ...`` for the study."""
    launcher = (["hydra/launcher=slurm"] if args.launcher == "slurm" else
                ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"])  # fmt: skip
    return [
        "placerl-train", "-m", "--config-dir", str(HERE / "conf"), "experiment=order_study",
        *launcher, f"hydra.sweep.dir={args.out / 'runs'}",
        f"order={','.join(ORDERS)}", f"agent={','.join(POLICIES)}",
        "graph.spec=" + ",".join(f"'{spec}'" for spec in graph_specs(args.full)),
        f"seed={','.join(str(s) for s in range(args.seeds))}", "threads=1", *args.overrides,
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="Placeto's 32 graphs per family")
    parser.add_argument("--launcher", choices=["joblib", "slurm"], default="joblib")
    parser.add_argument("--jobs", type=int, default=2, help="joblib's parallel jobs")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--out", type=Path, default=HERE, help="runs/ and results/ go here")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every job")
    args = parser.parse_args(argv)
    sweep = sweep_command(args)
    report = ["placerl-report", str(args.out / "runs"), "--out", str(args.out / "results"),
              "--metric", "best"]  # fmt: skip
    if args.dry_run:
        print(" ".join(sweep), " ".join(report), sep="\n")
        return 0
    for command in (sweep, report):
        executable = shutil.which(command[0]) or command[0]
        subprocess.run([executable, *command[1:]], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
