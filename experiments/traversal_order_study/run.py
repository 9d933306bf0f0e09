"""Regenerate the traversal-order study: a Hydra multirun per arm, ``placerl-report``, analyses.

    python experiments/traversal_order_study/run.py                  # the committed subsample
    python experiments/traversal_order_study/run.py --arms refine    # one arm
    python experiments/traversal_order_study/run.py --full --launcher slurm \\
        hydra.launcher.partition=gpu                                  # the whole protocol, SLURM
    python experiments/traversal_order_study/run.py --dry-run         # print the commands only

After the arms, ``analyze.py`` writes ``results/analysis.md`` (the learned order, the
graph-feature rule) when the run included an arm it reads (:data:`ANALYZED_ARMS`) and the
refine arm it always reads is there (:func:`analyzed`). A job that fails never stops its sweep
(the report lists it). A sweep that dies as a whole stops no other arm; its report and the
analyses are then left as they were (not rewritten from part of the runs), and running the same
command again resumes it. The exit status is 1 if anything failed (a failed job within a sweep
too), and each failure is named at the end.

Arms (:data:`ARMS`): ``refine``, the study's setting (Placeto's refine env, StartFromBest), with
the GNN and the LSTM; ``construct``, the nodes placed one by one in the order, GNN; ``learned``,
DOPPLER's dual env where the policy picks the next node itself (the learned order), GNN. The
subsample: 9 orders x the cifar10-, ptb- and nmt-like families (2 graphs each, ``n=100``) x 5
seeds, 50 episodes per run. ``--full``: Placeto's sizes (about 300-400 nodes) and 32 graphs per
family (nmt: its 16 distinct ones). Extra arguments are Hydra overrides for every job. Finished
jobs are skipped when the command runs again (a half-written result runs again); a failed one is
listed in the report.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
ORDERS = [
    "topo",
    "alpha",
    "reverse_topo",
    "dfs_preorder",
    "dfs_postorder",
    "bfs",
    "lexico_topo",
    "reverse_postorder",
    "random_topo",
]
FAMILIES = ["cifar10", "ptb", "nmt"]
SEEDS = 5


def family_graphs(full: bool) -> list[str]:
    """2 graphs per family at ``n=100`` (subsample) or up to Placeto's 32 per family at the
    generators' default sizes (``full``). Graph seed 0 shaped placerl's recipes and is left
    out, as is any seed whose graph repeats seed 0's or an earlier seed's: nmt's seed draws
    only its shapes, so seeds 1-32 give 16 distinct nmt graphs (cifar10's and ptb's 32)."""
    seeds, size = (range(1, 33), "") if full else (range(1, 3), "n=100&")
    graphs = []
    for family in FAMILIES:
        specs = [f"synthetic:{family}?{size}seed={s}" for s in (0, *seeds)]
        graphs += distinct_graphs(specs)[1:]  # seed 0's first: its repeats go with it
    return graphs


def distinct_graphs(specs: list[str]) -> list[str]:
    """``specs`` without those whose graph (its ops and edges) an earlier one already gave."""
    from placerl.graph import load_graph

    seen, kept = set(), []
    for spec in specs:
        content = load_graph(spec).content_fingerprint()
        if content not in seen:
            seen.add(content)
            kept.append(spec)
    return kept


def zoo_graphs(full: bool) -> list[str]:
    """Zoo models coarsened to 100 nodes (GNMT whole, 98); ``full``: all four whole, as the
    families then run at their full sizes (not beside the coarsened ones: a model's graph has
    its name at any coarsening, and the report and the analyses key on the name)."""
    size = "" if full else "?max_nodes=100"
    return [*(f"zoo:{m}{size}" for m in ("inception_v3", "resnet50", "transformer")), "zoo:gnmt"]


def msr_graphs(full: bool) -> list[str]:
    """The msr graphs (each on its own cluster); the subsample takes the three smallest."""
    names = ["bert_l-3_inference", "bert_l-3_training", "resnet50_inference"]
    if full:
        names += ["bert24_inference", "bert24_training", "gnmt_inference", "resnet50_training"]
    return [f"msr:{name}" for name in names]


class Arm(NamedTuple):
    """One sweep of the study."""

    experiment: str  # conf/experiment/<name>.yaml
    agents: list[str]
    sweeps_order: bool  # False: the policy picks the order itself
    graphs: Callable[[bool], list[str]]


ARMS = {
    "refine": Arm("order_study", ["placeto_gnn", "placeto_lstm"], True, family_graphs),
    "construct": Arm("order_study_construct", ["placeto_gnn"], True, family_graphs),
    "learned": Arm("order_study_learned", ["placeto_gnn"], False, family_graphs),
    "zoo": Arm("order_study", ["placeto_gnn"], True, zoo_graphs),
    "msr": Arm("order_study_msr", ["placeto_gnn"], True, msr_graphs),
}
#: The committed subsample's arms (about an hour on 2 cores); zoo and msr by ``--arms``.
DEFAULT_ARMS = ["refine", "construct", "learned"]
#: The arms ``analyze.py`` reads (from ``runs/`` or, where an arm was not re-run, from its
#: committed ``results/<arm>/runs.csv``).
ANALYZED_ARMS = ("refine", "construct", "learned", "zoo")


def sweep_command(args: argparse.Namespace, arm: str) -> list[str]:
    """``placerl-train -m ...`` for one arm of the study."""
    experiment, agents, sweeps_order, graphs = ARMS[arm]
    launcher = (
        ["hydra/launcher=slurm"]
        if args.launcher == "slurm"
        else ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"]
    )
    orders = [f"order={','.join(ORDERS)}"] if sweeps_order else []
    return [
        "placerl-train",
        "-m",
        "--config-dir",
        str(HERE / "conf"),
        f"experiment={experiment}",
        *launcher,
        f"hydra.sweep.dir={args.out / 'runs' / arm}",
        *orders,
        f"agent={','.join(agents)}",
        "graph.spec=" + ",".join(f"'{spec}'" for spec in graphs(args.full)),
        f"seed={','.join(str(s) for s in range(args.seeds))}",
        "threads=1",
        *args.overrides,
    ]


def report_command(args: argparse.Namespace, arm: str) -> list[str]:
    """``placerl-report`` of one arm: the best placement found, as the study reports it."""
    return [
        "placerl-report",
        str(args.out / "runs" / arm),
        "--out",
        str(args.out / "results" / arm),
        "--metric",
        "best",
    ]


class Step(NamedTuple):
    """One command of the run: an arm's ``sweep`` or ``report``, or the ``analysis``."""

    arm: str  # "" for the analysis, which reads every arm
    kind: str
    command: list[str]

    @property
    def name(self) -> str:
        return f"{self.arm} {self.kind}".strip()


def plan(args: argparse.Namespace) -> list[Step]:
    """The run's steps in order: each arm's sweep and report, then the analyses."""
    steps = [
        Step(arm, kind, command(args, arm))
        for arm in args.arms
        for kind, command in (("sweep", sweep_command), ("report", report_command))
    ]
    return steps + ([Step("", "analysis", analysis_command(args))] if analyzed(args) else [])


def analyzed(args: argparse.Namespace) -> bool:
    """Whether the run ends with ``analyze.py``: an arm it reads ran, and the refine arm it
    always reads is there (run now, or its runs or committed table under ``--out``)."""
    refine = (
        "refine" in args.arms
        or (args.out / "runs" / "refine").is_dir()
        or (args.out / "results" / "refine" / "runs.csv").is_file()
    )
    return refine and bool(set(args.arms) & set(ANALYZED_ARMS))


def run_step(name: str, command: list[str], failed: list[str]) -> bool:
    """Run ``command``; on failure append ``name`` and why to ``failed``. True if it ran."""
    executable = shutil.which(command[0]) or command[0]
    try:
        code = subprocess.run([executable, *command[1:]], check=False).returncode
    except OSError as error:  # e.g. placerl-train not installed
        failed.append(f"{name} ({error})")
        return False
    if code != 0:
        failed.append(f"{name} (exit status {code})")
    return code == 0


def run_steps(steps: list[Step], runs: Path) -> tuple[list[str], set[str]]:
    """Run ``steps`` in order; returns what failed, and the arms whose sweep died as a whole.
    A dead sweep's report, and after a dead sweep of an arm they read the analyses, are left
    as they were rather than rewritten from part of the runs."""
    from placerl.report import unfinished_jobs

    failed: list[str] = []
    broken: set[str] = set()
    for step in steps:
        if (step.kind == "report" and step.arm in broken) or (
            step.kind == "analysis" and broken & set(ANALYZED_ARMS)
        ):
            continue
        ran = run_step(step.name, step.command, failed)
        if step.kind == "sweep" and not ran:
            broken.add(step.arm)
        elif step.kind == "sweep" and (jobs := len(unfinished_jobs([runs / step.arm]))):
            # a multirun goes on past a failed job and exits 0
            failed.append(
                f"{step.arm}: {jobs} unfinished job(s) (a failed one's traceback "
                "is in its error.txt)"
            )
    return failed, broken


def analysis_command(args: argparse.Namespace) -> list[str]:
    """``analyze.py`` over the study's ``runs/`` into its ``results/``."""
    return [
        sys.executable,
        str(HERE / "analyze.py"),
        "--runs",
        str(args.out / "runs"),
        "--out",
        str(args.out / "results"),
    ]


def main(argv: list[str] | None = None) -> int:
    """Run (or with ``--dry-run`` print) every chosen arm's sweep and report, then the
    analyses; returns 1 if any command failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arms",
        type=lambda text: text.split(","),
        default=DEFAULT_ARMS,
        help=f"comma-separated arms of {', '.join(ARMS)} (default: {','.join(DEFAULT_ARMS)})",
    )
    parser.add_argument("--full", action="store_true", help="Placeto's 32 graphs per family")
    parser.add_argument("--launcher", choices=["joblib", "slurm"], default="joblib")
    parser.add_argument("--jobs", type=int, default=2, help="joblib's parallel jobs")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--out", type=Path, default=HERE, help="runs/ and results/ go here")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every job")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(ARMS)}")
    steps = plan(args)
    if args.dry_run:
        print(*(" ".join(step.command) for step in steps), sep="\n")
        return 0
    failed, broken = run_steps(steps, args.out / "runs")
    if set(args.arms) & set(ANALYZED_ARMS) and not analyzed(args):
        print(
            "analyze.py not run: it reads the refine arm, which is not under "
            f"{args.out} (run.py --arms refine)",
            file=sys.stderr,
        )
    if failed:
        print(
            f"failed: {', '.join(failed)}"
            + (
                "; a failed sweep's report was left as it "
                "was, and so were the analyses if they read its arm: run the same command "
                "again to resume it"
                if broken
                else ""
            ),
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
