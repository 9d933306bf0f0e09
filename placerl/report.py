"""``placerl-report DIR...``: tables, verdicts and plots from finished runs and sweeps.

Every ``result.json`` under the given folders (``placerl-train`` and ``placerl-eval`` runs) is
one row per graph. The report aggregates them per graph x cluster x objective x order x agent:
the jobs pooled and the mean over seeds with a Student-t 95% interval (runs whose configs differ
in more than the seed, such as the env or the budget, carry different ``variant`` labels, are
never pooled or paired, and are listed with what differs). Per graph group (a family's graphs,
``cifar10-s3`` in ``cifar10``), agent and variant, each traversal order faces a reference order
on the same graphs and seeds (:mod:`placerl.comparison`): geometric-mean ratio with a bootstrap
interval, wins, a Wilcoxon p-value or the reason it is missing, and a worded verdict. It writes
``report.md``, ``runs.csv``, ``summary.csv``, ``orders.csv``, ``provenance.json`` (the commits,
commands, machines and dates of the runs, and the report's own provenance and config) and
plots with their intervals: runtime per order per graph, speedup over the best baseline
placer, learning curves (min-max over seeds) and the paired ratios. Failed and unfinished jobs
are listed. An evaluation run (``placerl-eval``) has order ``none``, its placer spec as agent,
and its bars labelled by it.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from placerl._options import check_out_dir
from placerl._provenance import machine_label, provenance
from placerl.comparison import compare_pairs, t_interval
from placerl.errors import ConfigError
from placerl.report_figures import NO_ORDER, report_figures
from placerl.results import CHECKPOINT, flat_config, result_kind, write_json

#: What a run's provenance field reads when its result file predates provenance.
NOT_RECORDED = "not recorded"
KEYS = ["graph", "cluster", "objective", "order", "agent", "variant"]
#: The order the others face unless ``--reference-order`` says otherwise.
DEFAULT_REFERENCE_ORDER = "topo"

#: Config fields (dotted, as :func:`placerl.results.flat_config` names them) that do not make
#: runs different experiments: what the rows show apart, the seed and the bookkeeping.
NOT_VARIANT = {
    "graph",
    "cluster",
    "objective",
    "placer",
    "graph.spec",
    "cluster.spec",
    "env.objective",
    "order.name",
    "agent.algo",
    "agent.extractor",
    "seed",
    "resume",
    "device",
    "progress_bar",
    "force",
    "baselines",
    "eval_every",
    "eval_samples",
    "checkpoint_every",
    "logger.kind",
    "logger.project",
    "logger.entity",
    "logger.mode",
}


def load_runs(folders: Sequence[str | Path]) -> Any:
    """One row per (result.json, graph) under ``folders``, as a pandas DataFrame.

    A ``result.json`` that cannot be read (truncated, hand-edited) is skipped with a warning
    naming it; ``frame.attrs["skipped"]`` lists those files with the reason.

    Raises:
        FileNotFoundError: A folder does not exist, or none holds a readable ``result.json``.
    """
    import pandas as pd

    rows, skipped = [], []
    for folder in map(Path, folders):
        if not folder.exists():
            raise FileNotFoundError(f"no such folder: {folder}")
        for path in sorted(folder.rglob("result.json")):
            try:
                rows.extend(_rows(json.loads(path.read_text()), path.parent))
            except (ValueError, KeyError, TypeError, IndexError) as error:
                reason = f"{type(error).__name__}: {error}"
                warnings.warn(f"skipped {path}: not a readable result ({reason})", stacklevel=2)
                skipped.append(f"{path} ({reason})")
    if not rows:
        raise FileNotFoundError(f"no readable result.json under {', '.join(map(str, folders))}")
    frame = pd.DataFrame(rows)
    frame.attrs["skipped"] = skipped
    return frame


def variant(config: dict[str, Any]) -> str:
    """What else the run's config sets (env, head, hyperparameters, budget, ...), as a short
    stable label, so that runs differing in more than the seed are never pooled."""
    rest = {k: v for k, v in sorted(config.items()) if k not in NOT_VARIANT}
    return hashlib.sha1(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:8]


def graph_group(name: str) -> str:
    """The family a graph belongs to: its name without the seed suffix (``cifar10-s3`` ->
    ``cifar10``); a graph without one is a group of its own."""
    return re.sub(r"-s\d+$", "", name)


def _rows(result: dict[str, Any], run: Path) -> list[dict[str, Any]]:
    config = flat_config(result["config"])
    if result_kind(result, run / "result.json") == "eval":
        order, agent, seed = NO_ORDER, config["placer"], 0
        cluster, objective = config["cluster.spec"], config["objective"]
    else:
        order, seed = config["order.name"], config["seed"]
        agent = f"{config['agent.algo']}_{config['agent.extractor']}"
        cluster, objective = config["cluster.spec"], config["env.objective"]
    rows, label, settings = [], variant(config), _settings(config)
    made = result.get("provenance") or {}
    for g, outcome in enumerate(result["graphs"]):
        best = min(outcome["baselines"].values()) if outcome["baselines"] else np.nan
        rows.append(
            {
                "run": str(run),
                "graph": outcome["graph"],
                "group": graph_group(outcome["graph"]),
                "cluster": cluster,
                "objective": objective,
                "order": order,
                "agent": agent,
                "variant": label,
                "settings": settings,
                "seed": seed,
                "runtime_ms": 1e3 * outcome["final_runtime"],
                "infeasible": bool(outcome.get("final_infeasible")),
                "best_seen_ms": 1e3 * outcome["best_runtime"],
                "best_baseline_ms": 1e3 * best,
                "speedup_vs_best": best / outcome["final_runtime"],
                "steps": result["steps"],
                "train_s": result["timings"].get("train", 0.0),
                "curve": [(p["step"], 1e3 * p["runtimes"][g]) for p in result["curve"]],
                "commit": made.get("git_revision") or NOT_RECORDED,
                "date": made.get("date") or NOT_RECORDED,
                "machine": machine_label(made.get("machine")),
                "command": made.get("command") or NOT_RECORDED,
                "best_curve": _best_curve(result, g),
            }
        )
    return rows


def _best_curve(result: dict[str, Any], g: int) -> list[tuple[int, float]]:
    """Graph ``g``'s best runtime found so far (ms) against steps, at every rollout (older
    results, without ``best_curve``: at every evaluation)."""
    points = result.get("best_curve") or result["curve"]
    return [(p["step"], 1e3 * p.get("best", p.get("runtimes"))[g]) for p in points]


def _settings(config: dict[str, Any]) -> str:
    """The config fields that make up the variant, as JSON (to name how variants differ)."""
    return json.dumps(
        {k: v for k, v in sorted(config.items()) if k not in NOT_VARIANT},
        sort_keys=True,
        default=str,
    )


#: What a run's runtime is: ``final``, the greedy placement of the weights it kept (what a
#: trained policy deploys), or ``best``, the best placement it found while training (what
#: Placeto and the traversal-order study report); each with its learning curve.
METRICS = {"final": ("runtime_ms", "curve"), "best": ("best_seen_ms", "best_curve")}
#: "Learned" is within this factor of the run's own end result.
WITHIN = 1.05


def select_metric(runs: Any, metric: str) -> Any:
    """``runs`` with ``runtime_ms``, ``speedup_vs_best`` and ``curve`` taken from ``metric``
    (a :data:`METRICS` name), and ``steps_to_5pct``: the first evaluated step at which the
    curve is within 5% of the run's result (``nan`` without a curve).

    Raises:
        ConfigError: An unknown metric.
    """
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    column, curve = METRICS[metric]
    runs = runs.assign(runtime_ms=runs[column], curve=runs[curve])
    runs["speedup_vs_best"] = runs["best_baseline_ms"] / runs["runtime_ms"]
    runs["steps_to_5pct"] = [
        _steps_to_within(c, r) for c, r in zip(runs["curve"], runs["runtime_ms"], strict=True)
    ]
    return runs.drop(columns="best_curve")


def _steps_to_within(curve: list[tuple[int, float]], result: float) -> float:
    reached = [step for step, runtime in curve if runtime <= WITHIN * result]
    return float(min(reached)) if reached else np.nan


def summarize(runs: Any) -> Any:
    """Per graph x cluster x objective x order x agent x variant: the jobs and seeds it pools,
    the mean runtime with its Student-t 95% interval over seeds (``nan`` for one seed), the
    best runtime seen, the env steps trained, the speedup over the best baseline (with its
    interval) and ``infeasible``: how many runs ended on a placement that does not fit (its
    runtime is a penalty, and so is the mean's share of it)."""
    grouped = runs.groupby(KEYS, sort=True)
    table = grouped.agg(
        jobs=("run", "nunique"),
        seeds=("seed", "nunique"),
        steps=("steps", "mean"),
        runtime_ms=("runtime_ms", "mean"),
        best_seen_ms=("best_seen_ms", "mean"),
        speedup_vs_best=("speedup_vs_best", "mean"),
        infeasible=("infeasible", "sum"),
    )
    if "steps_to_5pct" in runs:
        table["steps_to_5pct"] = grouped["steps_to_5pct"].mean()
    for column, prefix in (("runtime_ms", "runtime_ci95"), ("speedup_vs_best", "speedup_ci95")):
        bounds = grouped[column].apply(t_interval, floor=0.0)  # both are positive
        table[f"{prefix}_low"] = [low for low, _ in bounds]
        table[f"{prefix}_high"] = [high for _, high in bounds]
    return table.reset_index()


#: What a paired comparison pools over: pairs are (graph, seed) within one of these.
CELL = ["group", "cluster", "objective", "agent", "variant"]


def compare_orders(runs: Any, reference: str = "topo") -> Any:
    """Each order against ``reference`` per graph group, cluster, objective, agent and variant,
    paired on the same graph and seed (see :mod:`placerl.comparison`).

    Returns:
        Per cell and order: pairs, the geometric-mean runtime ratio to the reference (below 1:
        faster) with its bootstrap 95% interval, wins, losses and ties, the Wilcoxon
        signed-rank p-value and the reason when it is missing, the pairs a difference of the
        observed size would need, and the worded verdict.
    """
    import pandas as pd

    trained = runs[runs["order"] != NO_ORDER]
    rows = []
    for cell, group in trained.groupby(CELL, sort=True):
        pivot = group.pivot_table(index=["graph", "seed"], columns="order", values="runtime_ms")
        if reference not in pivot.columns:
            continue
        speed = _learning_speed(group)
        for order in (o for o in pivot.columns if o != reference):
            pairs = pivot[[reference, order]].dropna()
            result = compare_pairs(pairs[order].to_numpy(), pairs[reference].to_numpy())
            rows.append(
                {
                    **dict(zip(CELL, cell, strict=True)),
                    "order": order,
                    "reference": reference,
                    "pairs": result.pairs,
                    "ratio": result.ratio,
                    "ratio_ci95_low": result.ci_low,
                    "ratio_ci95_high": result.ci_high,
                    "wins": result.wins,
                    "losses": result.losses,
                    "ties": result.ties,
                    "p_value": result.p_value,
                    "p_value_note": result.p_note,
                    "pairs_needed": result.pairs_needed,
                    "steps_to_5pct": speed.get(order, np.nan),
                    "reference_steps_to_5pct": speed.get(reference, np.nan),
                    "verdict": result.verdict(order, reference),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            *CELL,
            "order",
            "reference",
            "pairs",
            "ratio",
            "ratio_ci95_low",
            "ratio_ci95_high",
            "wins",
            "losses",
            "ties",
            "p_value",
            "p_value_note",
            "pairs_needed",
            "steps_to_5pct",
            "reference_steps_to_5pct",
            "verdict",
        ],
    )


def _learning_speed(cell: Any) -> dict[str, float]:
    """Mean ``steps_to_5pct`` per order of a cell (empty without the column: runs not passed
    through :func:`select_metric`)."""
    if "steps_to_5pct" not in cell:
        return {}
    return cell.groupby("order")["steps_to_5pct"].mean().to_dict()


def not_compared(runs: Any) -> list[str]:
    """Cells whose orders ran under different configs (another budget, env or
    hyperparameter), which the report refuses to pool or pair; one line each naming what
    differs."""
    lines = []
    trained = runs[runs["order"] != NO_ORDER]
    for cell, group in trained.groupby(CELL[:-1], sort=True):
        variants = group.drop_duplicates("variant")
        if len(variants) < 2:
            continue
        settings = [json.loads(s) for s in variants["settings"]]
        keys = _differing_keys(settings)
        parts = []
        for (_, row), values in zip(variants.iterrows(), settings, strict=True):
            orders = sorted(set(group.loc[group["variant"] == row["variant"], "order"]))
            shown = ", ".join(f"{k}={values.get(k)}" for k in keys)
            parts.append(f"{'/'.join(orders)} with {shown}")
        lines.append(
            f"{' · '.join(map(str, cell))}: {'; '.join(parts)} (they differ in "
            f"{', '.join(keys)}; compared only within one setting)"
        )
    return lines


def _differing_keys(settings: list[dict[str, Any]]) -> list[str]:
    """The keys whose values are not the same in every one of ``settings``."""
    keys = {k for values in settings for k in values}
    return sorted(k for k in keys if len({json.dumps(s.get(k), default=str) for s in settings}) > 1)


@dataclass(frozen=True)
class OpenJob:
    """A job folder without a ``result.json``.

    Attributes:
        folder: The job's run directory.
        status: ``failed`` (its ``error.txt`` holds the traceback), ``unfinished`` (it holds a
            checkpoint and no error: re-running resumes it) or ``no result`` (neither).
        detail: The error (exception type and message), or where the job stands.
    """

    folder: Path
    status: str
    detail: str

    def line(self) -> str:
        """The job as a line of the report."""
        return f"{self.folder}: {self.status}: {self.detail}"


def open_jobs(folders: Sequence[str | Path]) -> list[OpenJob]:
    """The job folders under ``folders`` without a ``result.json``: Hydra job folders
    (``.hydra/``) and any folder with an ``error.txt`` or a checkpoint, sorted by path."""
    jobs = []
    for folder in map(Path, folders):
        found = {p.parent for p in folder.rglob("error.txt")}
        found |= {p.parent for p in folder.rglob(".hydra") if p.is_dir()}
        found |= {p.parent.parent for p in folder.rglob(f"{CHECKPOINT}/state.json")}
        jobs += [_open_job(job) for job in sorted(found) if not (job / "result.json").is_file()]
    return [job for job in jobs if job is not None]


def _open_job(job: Path) -> OpenJob | None:
    """Why ``job`` has no result (``None``: a folder of finished jobs, such as a sweep's)."""
    error = job / "error.txt"
    if error.is_file():
        return OpenJob(
            job,
            "failed",
            f"{error_summary(error.read_text(errors='replace'))} (traceback in {error})",
        )
    state = job / CHECKPOINT / "state.json"
    if state.is_file():
        return OpenJob(
            job,
            "unfinished",
            f"{_checkpoint_progress(state)}; re-running the same command resumes it",
        )
    if any(job.rglob("result.json")):
        return None
    return OpenJob(
        job,
        "no result",
        "no result.json, checkpoint or error.txt: it stopped (or "
        "is still running) before its first checkpoint, or failed before its job "
        "began, as on a bad override, whose error the command printed; re-running "
        "starts it afresh",
    )


def error_summary(text: str) -> str:
    """The exception an ``error.txt`` ends with, type and message: the lines after the last
    traceback frame (a message may span lines), or the last line of other text."""
    lines = text.strip().splitlines()
    if not lines:
        return "(empty error.txt)"
    block = list(itertools.takewhile(_exception_line, reversed(lines)))
    return " ".join(reversed(block)) if block else lines[-1].strip()


def _exception_line(line: str) -> bool:
    """Whether a line of a traceback may be its exception's: not blank, not a frame's (those
    are indented) and not the ``Traceback`` heading."""
    return bool(line) and not line[0].isspace() and not line.startswith("Traceback")


def _checkpoint_progress(state: Path) -> str:
    """``checkpoint at step N of M``, from a checkpoint's ``state.json``."""
    try:
        saved = json.loads(state.read_text())
        steps, total = int(saved["steps"]), int(saved["config"]["total_steps"])
    except (ValueError, KeyError, TypeError):  # half-written or from another version
        return f"a checkpoint ({state} is unreadable)"
    return f"checkpoint at step {steps:,} of {total:,}"


def unfinished_jobs(folders: Sequence[str | Path]) -> list[str]:
    """Every :func:`open_jobs` job, failed or not, as a report line."""
    return [job.line() for job in open_jobs(folders)]


def write_report(
    folders: Sequence[str | Path],
    out: str | Path,
    *,
    reference_order: str | None = None,
    metric: str = "final",
) -> Path:
    """Write the report of every run under ``folders`` into ``out``; returns ``report.md``.

    Args:
        folders: Run or sweep folders holding ``result.json`` files.
        out: Where the report goes.
        reference_order: The order the others face (``None``: ``topo``, and where no run used
            it the report says so).
        metric: A :data:`METRICS` name: what a run's runtime is.

    Raises:
        FileNotFoundError: See :func:`load_runs`.
        ConfigError: ``out`` is a file; a ``reference_order`` given that no run used; an
            unknown metric.
    """
    out = Path(out)
    check_out_dir(out)
    raw = load_runs(folders)
    runs = select_metric(raw, metric)
    runs.attrs = raw.attrs
    orders_run = sorted(set(runs["order"]) - {NO_ORDER})
    if reference_order is not None and orders_run and reference_order not in orders_run:
        raise ConfigError(
            f"reference order {reference_order!r} is none of the runs' orders: "
            f"{', '.join(orders_run)}"
        )
    reference_order = reference_order or DEFAULT_REFERENCE_ORDER
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(runs)
    orders = compare_orders(runs, reference_order)
    runs.drop(columns=["curve", "command"]).to_csv(out / "runs.csv", index=False)
    made = run_provenance(runs)
    config = {"folders": [str(f) for f in folders], "metric": metric, "reference": reference_order}
    write_json(
        out / "provenance.json", {"provenance": provenance(), "config": config, "runs": made}
    )
    summary.to_csv(out / "summary.csv", index=False)
    orders.to_csv(out / "orders.csv", index=False)
    figures = report_figures(runs, orders, out, metric_label=METRIC_LABELS[metric])
    text = [
        f"# placerl report: {len(runs)} runs x graphs from {', '.join(map(str, folders))}",
        "",
        f"Runtime: {METRIC_WORDS[metric]}. `steps_to_5pct`: the first evaluated step "
        "at which a run's curve is within 5% of its result (how fast it learned).",
        "",
        f"## Orders against {reference_order} (paired)",
        "",
        *(_verdicts(orders) if len(orders) else [_no_pairs(orders_run, reference_order)]),
        "",
        "## Per graph, order and agent",
        "",
        SUMMARY_LEGEND,
        "",
        summary.drop(columns=["speedup_ci95_low", "speedup_ci95_high"]).to_markdown(
            index=False, floatfmt=".4g"
        ),
        "",
        *[f"![{name}]({name}.png)" for name in figures],
        "",
    ]
    text += ["## Provenance", "", *provenance_bullets(made), ""]
    jobs = open_jobs(folders)
    sections = (
        ("Not compared: configs differ in more than the seed", not_compared(runs)),
        ("Failed jobs", [j.line() for j in jobs if j.status == "failed"]),
        ("Unfinished jobs", [j.line() for j in jobs if j.status != "failed"]),
        ("Skipped result files", runs.attrs.get("skipped", [])),
    )
    for title, entries in sections:
        if entries:
            text += [f"## {title}", "", *[f"- {entry}" for entry in entries], ""]
    path = out / "report.md"
    path.write_text("\n".join(text))
    return path


def run_provenance(runs: Any) -> list[dict[str, Any]]:
    """Where the runs came from: one entry per commit, machine and command, with its runs
    counted and its first and last dates (``not recorded`` for result files that predate
    provenance)."""
    groups = runs.drop_duplicates("run").groupby(["commit", "machine", "command"], sort=True)
    return [
        {
            "commit": commit,
            "machine": machine,
            "command": command,
            "runs": len(group),
            "first_date": min(group["date"]),
            "last_date": max(group["date"]),
        }
        for (commit, machine, command), group in groups
    ]


def provenance_bullets(made: list[dict[str, Any]]) -> list[str]:
    """One bullet per :func:`run_provenance` entry."""
    return [
        f"- {entry['runs']} run(s) at commit `{entry['commit']}` on {entry['machine']}, "
        f"{entry['first_date']} to {entry['last_date']}: `{entry['command']}`"
        for entry in made
    ]


METRIC_LABELS = {"final": "greedy runtime (ms)", "best": "best runtime found (ms)"}
METRIC_WORDS = {
    "final": "the greedy placement of the weights each run kept (`--metric final`)",
    "best": "the best placement each run found while training (`--metric best`)",
}
SUMMARY_LEGEND = (
    "`jobs`: result files pooled; `runtime_ci95_low/high`: Student-t 95% "
    "interval of the mean over seeds, cut at 0 (blank with one seed: no "
    "interval); "
    "`steps`: env steps trained; `variant`: a hash of the config besides the "
    "seed (runs of different variants are never pooled)."
)
ORDERS_LEGEND = (
    "`ratio`: geometric mean of runtime over the reference's on the same graph "
    "and seed (below 1: faster), with a bootstrap 95% interval over the pairs; a "
    "difference is stated when that interval excludes 1 and the Wilcoxon "
    "signed-rank test gives p < 0.05; `pairs_needed`: pairs that would detect a "
    "difference of the observed size (at least 1%) with 80% power; "
    "`steps_to_5pct`: mean first evaluated step within 5% of a run's result, for "
    "the order and the reference (how fast each learned)."
)


def _verdicts(orders: Any) -> list[str]:
    """One bullet per cell and order, then the table."""
    lines = []
    for _, row in orders.iterrows():
        cell = f"{row['group']} ({row['agent']}, {row['cluster']}, {row['objective']})"
        lines.append(f"- **{cell}**: {row['verdict']}")
    table = orders.drop(columns=["verdict"]).to_markdown(index=False, floatfmt=".4g")
    return [*lines, "", ORDERS_LEGEND, "", table]


def _no_pairs(orders_run: list[str], reference_order: str) -> str:
    """Why the paired table is empty."""
    if reference_order not in orders_run:
        return (
            f"(no pairs: no run used {reference_order}; the runs' orders: "
            f"{', '.join(orders_run) or 'none'}; pick one with --reference-order)"
        )
    return (
        f"(no pairs: no other order ran on the same graph, agent, seed and settings as "
        f"{reference_order})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``placerl-report DIR... [--out report] [--reference-order topo]``."""
    parser = argparse.ArgumentParser(prog="placerl-report", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="run or sweep folders holding result.json")
    parser.add_argument("--out", default="report", help="where the report goes")
    parser.add_argument(
        "--reference-order",
        default=None,
        help=f"order the others face (default {DEFAULT_REFERENCE_ORDER})",
    )
    parser.add_argument(
        "--metric",
        default="final",
        choices=list(METRICS),
        help="final: the kept weights' greedy placement; best: the best "
        "placement found while training",
    )
    args = parser.parse_args(argv)
    try:
        path = write_report(
            args.folders, args.out, reference_order=args.reference_order, metric=args.metric
        )
    except (FileNotFoundError, ConfigError) as error:
        parser.error(str(error))
    print(path.read_text())
    print(f"Report, CSV tables and plots in {path.parent}")
    return 0
