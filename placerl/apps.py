"""The Hydra apps: thin ``main()`` functions around plain ones.

``placerl-train`` composes ``configs/train.yaml`` (shipped as ``placerl.configs``) on top of
:class:`~placerl.run_config.RunConfig`, trains with :func:`~placerl.train.train` in Hydra's run
directory (re-running the same directory resumes from its checkpoint), prints the policy
against the baseline placers and saves ``learning_curve.png`` and ``placement.png`` there.
``placerl-train --help`` lists the config groups and every field with its meaning.

``placerl-eval`` runs any placer, or a trained policy (``placer='policy?path=.../model.zip'``),
on the same graphs and clusters and writes the same ``result.json`` schema.

``placerl-bench`` runs a classic placer on PlaceBench's cases (``tier=tiny split=test``) or on
a folder of graphs (``dataset=...``): one record per case in Hydra's run directory (a re-run
there skips the finished cases), and the leaderboard of that folder
(:mod:`placerl.bench.leaderboard`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from placerl._provenance import record_command
from placerl.bench.guard import check_reads
from placerl.compose import (
    check_arguments,
    config_path,
    register_help,
    register_schemas,
    to_run,
)
from placerl.errors import ConfigError
from placerl.evaluate import evaluate
from placerl.figures import plot_best_placement, plot_learning_curve
from placerl.results import EvalResult, Result, TrainResult, result_kind, vs_best_baseline
from placerl.run_config import BenchRunConfig, EvalRunConfig, RunConfig
from placerl.summary import summary_table
from placerl.tracking import open_tracker
from placerl.train import changed_options, train

#: A sweep job's folder name at most, in bytes: file systems refuse names over 255, and a
#: search over seven parameters already writes a longer ``override_dirname``.
MAX_JOB_DIRNAME = 200


def job_dirname(overrides: str) -> str:
    """A sweep job's folder name: Hydra's ``override_dirname``, or where that is longer than
    :data:`MAX_JOB_DIRNAME` bytes, its start and a hash of the whole (stable, so re-running a
    sweep finds its finished jobs)."""
    raw = overrides.encode()
    if len(raw) <= MAX_JOB_DIRNAME:
        return overrides
    digest = hashlib.sha1(raw).hexdigest()[:12]
    head = raw[: MAX_JOB_DIRNAME - len(digest) - 1].decode(errors="ignore")
    return f"{head}-{digest}"


OmegaConf.register_new_resolver("placerl_job_dirname", job_dirname, replace=True)

CONFIG_PATH = config_path()
register_schemas()


def run_training(run: RunConfig, out_dir: str) -> TrainResult:
    """Train as ``run`` says, writing under ``out_dir`` and tracking with ``run.logger``;
    print and return the result."""
    tracker = open_tracker(run.logger, run.to_dict(), out_dir)
    try:
        result = train(run, out_dir=out_dir, callbacks=tracker.callbacks())
        print(summary_table(result))
        out = Path(out_dir)
        figures = {
            "learning_curve": plot_learning_curve(result, out / "learning_curve.png"),
            "placement": plot_best_placement(result, out / "placement.png"),
        }
        tracker.log_result(result, figures)
    finally:
        tracker.close()
    print(f"Results, learning_curve.png and placement.png in {out_dir}")
    return result


class SweepSummary(Callback):
    """Hydra callback: after a multirun, one table over every finished job of the sweep (the
    jobs each print their own as they end); failed jobs are counted apart."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from placerl.report import load_runs, summarize

        sweep = Path(config.hydra.sweep.dir)
        failed = sorted(
            p.parent.name
            for p in sweep.rglob("error.txt")
            if not (p.parent / "result.json").is_file()
        )
        try:
            summary = summarize(load_runs([sweep]))
        except FileNotFoundError:
            print(
                f"sweep {sweep}: no finished job"
                + (f"; failed: {', '.join(failed)}" if failed else "")
            )
            return
        print(
            f"\nsweep {sweep}: mean over seeds, 95% CI ({len(failed)} failed job(s)"
            + (f": {', '.join(failed)})" if failed else ")")
        )
        print(sweep_table(summary).to_markdown(index=False, floatfmt=".4g"))


def sweep_table(summary: Any) -> Any:
    """The columns of a sweep's summary worth a glance (``placerl.report.summarize``'s
    frame); a sweep of placers (``placerl-eval``: no order, the placer in ``agent``) shows
    them as ``placer``."""
    from placerl.report_figures import NO_ORDER

    columns = [
        "graph",
        "order",
        "agent",
        "seeds",
        "runtime_ms",
        "runtime_ci95_low",
        "runtime_ci95_high",
        "speedup_vs_best",
    ]
    if "infeasible" in summary and summary["infeasible"].any():
        columns.append("infeasible")  # runs whose runtime is a penalty: they do not fit
    if (summary["order"] == NO_ORDER).all():
        columns.remove("order")
        return summary[columns].rename(columns={"agent": "placer"})
    return summary[columns]


def run_job(out_dir: Path, force: bool, job: Callable[[], Result]) -> float | None:
    """Run one job of an app in ``out_dir``, as every app does; returns its objective.

    A run directory that holds a ``result.json`` is skipped unless ``force`` (its objective is
    read back); one whose ``result.json`` cannot be read runs again. The objective,
    :attr:`TrainResult.vs_best_baseline`, is what Hydra's Optuna sweeper minimizes
    (``configs/hparams_search/``).
    """
    path = out_dir / "result.json"
    if path.is_file() and not force:
        try:
            objective = _objective(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as error:  # half-written or hand-edited
            print(
                f"{path} is not a readable result ({type(error).__name__}); running the job again"
            )
        else:
            print(f"{out_dir} already holds result.json; skipped (force=true runs it again)")
            return objective
    return job().vs_best_baseline


@contextlib.contextmanager
def recorded_failure(out_dir: Path) -> Iterator[None]:
    """A job that fails, a bad config included, writes its traceback to ``error.txt`` in its
    folder (``placerl-report`` lists it as failed); in a multirun the other jobs go on (a
    single run fails with the error)."""
    try:
        yield
    except Exception as error:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "error.txt").write_text(traceback.format_exc())
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            raise
        print(f"FAILED: {type(error).__name__}: {error} (traceback in {out_dir / 'error.txt'})")


def _objective(result: dict) -> float:
    """:attr:`TrainResult.vs_best_baseline` of a ``result.json``."""
    return vs_best_baseline([(g["final_runtime"], g["baselines"]) for g in result["graphs"]])


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="train")
def _train_main(cfg: DictConfig) -> float | None:
    """``placerl-train``'s job: an unfinished run directory resumes from its checkpoint
    (``resume=true``); ``force=true`` trains a finished one again from scratch."""
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with recorded_failure(out_dir):
        run = to_run(cfg).check()
        if _tuning():  # an Optuna trial's graphs and validation graphs tune the recipe
            check_reads([*run.training_graphs(), *run.validation_graphs], "tuning")
        stale = _stale_result(out_dir, run)
        if stale:  # e.g. an Optuna trial number that now stands for other parameters
            print(f"{out_dir} holds a result {stale}; training again")
            run.force = True
        if run.force:
            run.resume = False
        return run_job(out_dir, run.force, lambda: run_training(run, str(out_dir)))
    return None


def _tuning() -> bool:
    """Whether this job is a trial of a hyperparameter search (Hydra's Optuna sweeper)."""
    sweeper = HydraConfig.get().sweeper
    return "optuna" in str(sweeper.get("_target_", "")).lower()


def _stale_result(out_dir: Path, run: RunConfig) -> str:
    """Why ``out_dir``'s finished result is not ``run``'s, in words: written by an older
    placerl, or of another configuration (only the schedule may change, as when resuming);
    empty when it is ``run``'s or there is none."""
    path = out_dir / "result.json"
    if not path.is_file():
        return ""
    try:
        saved = json.loads(path.read_text())
        result_kind(saved, path)
        changed = changed_options(saved["config"], run.to_dict())
    except ConfigError:
        return f"of an older placerl (result schema {saved.get('schema', 1)})"
    except (ValueError, KeyError, TypeError, AttributeError):
        return ""  # unreadable: run_job's own reading reports it
    return f"of another configuration ({', '.join(changed)} differ)" if changed else ""


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="eval")
def _eval_main(cfg: DictConfig) -> None:
    """``placerl-eval``'s job: writes ``result.json`` in the result schema."""
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with recorded_failure(out_dir):
        run = to_run(cfg)
        run_job(out_dir, run.force, lambda: run_evaluation(run, str(out_dir)))


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="bench")
def _bench_main(cfg: DictConfig) -> None:
    """``placerl-bench``'s job: one record per case in the run directory, then its
    leaderboard."""
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with recorded_failure(out_dir):
        run_bench(to_run(cfg).check(), out_dir)


def run_bench(run: BenchRunConfig, out_dir: str | Path) -> list[dict[str, Any]]:
    """Run ``run``'s placer or recipe on its cases, writing the records and ``leaderboard.md``
    (with its JSON) into ``out_dir``; print the leaderboard and the failed cases; return the
    records."""
    from placerl.bench.leaderboard import write_leaderboard
    from placerl.bench.recipe import run_recipe
    from placerl.bench.run import run_cases, select_cases

    if run.recipe is None:
        records = run_cases(
            run.cases_suite(),
            run.tier,
            run.split,
            run.placer,
            out_dir,
            force=run.force,
            family=run.family,
        )
    else:
        suite, cases = select_cases(run.cases_suite(), run.tier, run.split, run.family)
        records = run_recipe(
            suite,
            cases,
            run.recipe,
            run.recipe_overrides,
            run.seed,
            out_dir,
            force=run.force,
            learn_on=run.learn_on,
        )
    path = write_leaderboard([out_dir], Path(out_dir) / "leaderboard.md")
    print(path.read_text())
    for record in records:
        if record.get("error"):
            print(f"FAILED {record['case']}: {record['error']}")
    print(f"Records and leaderboard.md in {out_dir}")
    return records


class BenchSweepSummary(Callback):
    """Hydra callback of ``placerl-bench``: after a multirun, the leaderboard of every record
    of the sweep (one row per tier and placer)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from placerl.bench.leaderboard import leaderboard, table_markdown

        sweep = Path(config.hydra.sweep.dir)
        try:
            print(f"\nsweep {sweep}:\n{table_markdown(leaderboard([sweep]))}")
        except (FileNotFoundError, ConfigError) as error:
            print(f"sweep {sweep}: no leaderboard ({error})")


def train_app() -> float | None:
    """``placerl-train``: train a policy (``placerl-train --help`` lists every option)."""
    _check_arguments("train")
    return _train_main()


def eval_app() -> None:
    """``placerl-eval``: a placer or a trained policy on graphs (``placerl-eval --help``)."""
    _check_arguments("eval")
    _eval_main()


def bench_app() -> None:
    """``placerl-bench``: a classic placer on PlaceBench's cases (``placerl-bench --help``)."""
    _check_arguments("bench")
    _bench_main()


def _check_arguments(config_name: str) -> None:
    """Refuse an override Hydra would fail on without saying how to fix it; store the help;
    record the command for the results of the jobs, wherever a launcher runs them."""
    register_help()
    record_command()
    try:
        check_arguments(sys.argv[1:], config_name)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)  # the exit status of a command-line usage error, as argparse's


def run_evaluation(run: EvalRunConfig, out_dir: str) -> EvalResult:
    """Evaluate as ``run`` says, writing under ``out_dir`` and tracking with ``run.logger``."""
    config = json.loads(json.dumps(dataclasses.asdict(run)))
    tracker = open_tracker(run.logger, config, out_dir, job_type="eval")
    try:
        result = evaluate(
            run.graph.spec,
            run.cluster.spec,
            run.placer,
            objective=run.objective,
            baselines=run.baselines,
            out_dir=out_dir,
        )
        print(summary_table(result))
        tracker.log_result(result, {})
    finally:
        tracker.close()
    print(f"Results in {out_dir}")
    return result
