"""The Hydra apps: thin ``main()`` functions around plain ones.

``placerl-train`` composes ``configs/train.yaml`` (shipped as ``placerl.configs``) on top of
:class:`~placerl.run_config.RunConfig`, trains with :func:`~placerl.train.train` in Hydra's run
directory (re-running the same directory resumes from its checkpoint), prints the policy
against the baseline placers and saves ``learning_curve.png`` and ``placement.png`` there.
``placerl-train --help`` lists the config groups.

``placerl-eval`` runs any placer, or a trained policy (``placer='policy?path=.../model.zip'``),
on the same graphs and clusters and writes the same ``result.json`` schema.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from placerl.evaluate import evaluate
from placerl.figures import plot_best_placement, plot_learning_curve
from placerl.run_config import EvalRunConfig, RunConfig, check_known_keys, to_train_config
from placerl.tracking import open_tracker
from placerl.train import (
    TrainConfig,
    TrainResult,
    changed_options,
    is_evaluation,
    train,
    vs_best_baseline,
)

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

#: Where Hydra finds the config tree: the ``configs/`` folder, mapped into the package by an
#: install (wheel or editable); a bare checkout on ``sys.path`` reads the folder itself.
CONFIG_MODULE = "placerl.configs"


def _config_path() -> str:
    if importlib.util.find_spec(CONFIG_MODULE) is not None:
        return f"pkg://{CONFIG_MODULE}"
    return str(Path(__file__).resolve().parent.parent / "configs")


CONFIG_PATH = _config_path()

ConfigStore.instance().store(name="run_schema", node=RunConfig)
ConfigStore.instance().store(name="eval_schema", node=EvalRunConfig)


def compose_run(*overrides: str, config_name: str = "train") -> RunConfig | EvalRunConfig:
    """The run that ``placerl-train`` (``config_name="eval"``: ``placerl-eval``) composes from
    these command-line overrides, without running it (for notebooks, benchmarks and tests).

    Example: ``to_train_config(compose_run("experiment=doppler"), out_dir=None)``.
    """
    from hydra import compose, initialize_config_dir, initialize_config_module

    if CONFIG_PATH.startswith("pkg://"):
        context = initialize_config_module(config_module=CONFIG_MODULE, version_base=None)
    else:
        context = initialize_config_dir(config_dir=CONFIG_PATH, version_base=None)
    with context:
        return _to_run(compose(config_name=config_name, overrides=list(overrides)))


def _to_run(cfg: DictConfig) -> RunConfig | EvalRunConfig:
    """The composed config as its dataclass, refusing keys the schema lacks (``+typo=1``)."""
    schema = RunConfig if OmegaConf.get_type(cfg) is RunConfig else EvalRunConfig
    check_known_keys(OmegaConf.to_container(cfg, resolve=False), schema)
    return OmegaConf.to_object(cfg)


def run_training(run: RunConfig, out_dir: str) -> TrainResult:
    """Train as ``run`` says, writing under ``out_dir`` and tracking with ``run.logger``;
    print and return the result."""
    config = OmegaConf.to_container(OmegaConf.structured(run), resolve=True)
    tracker = open_tracker(run.logger, config, out_dir)
    try:
        result = train(to_train_config(run, out_dir), callbacks=tracker.callbacks())
        print(summary_table(result))
        out = Path(out_dir)
        figures = {"learning_curve": plot_learning_curve(result, out / "learning_curve.png"),
                   "placement": plot_best_placement(result, out / "placement.png")}  # fmt: skip
        tracker.log_result(result, figures)
    finally:
        tracker.close()
    print(f"Results, learning_curve.png and placement.png in {out_dir}")
    return result


#: The table row of :attr:`GraphOutcome.lower_bound`.
LOWER_BOUND_ROW = "lower bound (no placement is faster)"


def summary_table(result: TrainResult) -> str:
    """The policy against each baseline placer, per graph, as text."""
    from rich.console import Console
    from rich.table import Table

    evaluation = is_evaluation(result.config)
    if evaluation:
        title = f"placerl-eval: {result.config['placer']}"
        mine, result_of = "placer", "the placer's"
    else:
        # a policy's result is the best placement its run found (best_placement.json), which
        # the search recipes report; the greedy pass of its weights is a row of its own
        title = f"placerl-train: {result.steps} steps, {result.timings['train']:.0f} s of training"
        if result.timings.get("warm_start"):
            title += f" after {result.timings['warm_start']:.0f} s of warm start"
        mine, result_of = "policy", "the best placement the policy found"
    table = Table(title=title, caption=f"{mine} speedup: each row's runtime over {result_of} "
                  f"(above 1x: the {mine} is faster)")  # fmt: skip
    for column in ("graph", "placer", "runtime (ms)", f"{mine} speedup"):
        table.add_column(column, justify="left" if column in ("graph", "placer") else "right",
                         overflow="fold")  # long placer specs wrap instead of hiding options
    for g, outcome in enumerate(result.graphs):
        if evaluation:
            rows = {**outcome.baselines, result.config["placer"]: outcome.final_runtime}
            result_runtime = outcome.final_runtime
        else:
            rows = {f"policy (greedy, weights of step {result.policy_step:,})":
                    outcome.final_runtime, **_last_weights(result, g),
                    "policy (best seen)": outcome.best_runtime, **outcome.baselines}  # fmt: skip
            result_runtime = outcome.best_runtime
        if outcome.lower_bound is not None:
            rows[LOWER_BOUND_ROW] = outcome.lower_bound
        for name, runtime in sorted(rows.items(), key=lambda item: item[1]):
            table.add_row(outcome.graph, name, f"{runtime * 1e3:.3f}",
                          f"{runtime / result_runtime:.3f}x")  # fmt: skip
    console = Console(width=100, record=True)
    with console.capture() as capture:
        console.print(table)
    return capture.get()


class SweepSummary(Callback):
    """Hydra callback: after a multirun, one table over every finished job of the sweep (the
    jobs each print their own as they end); failed jobs are counted apart."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from placerl.report import load_runs, summarize

        sweep = Path(config.hydra.sweep.dir)
        failed = sorted(p.parent.name for p in sweep.rglob("error.txt")
                        if not (p.parent / "result.json").is_file())  # fmt: skip
        try:
            summary = summarize(load_runs([sweep]))
        except FileNotFoundError:
            print(f"sweep {sweep}: no finished job" + (f"; failed: {', '.join(failed)}"
                                                       if failed else ""))  # fmt: skip
            return
        print(f"\nsweep {sweep}: mean over seeds, 95% CI ({len(failed)} failed job(s)"
              + (f": {', '.join(failed)})" if failed else ")"))
        print(sweep_table(summary).to_markdown(index=False, floatfmt=".4g"))


def sweep_table(summary: Any) -> Any:
    """The columns of a sweep's summary worth a glance (``placerl.report.summarize``'s
    frame); a sweep of placers (``placerl-eval``: no order, the placer in ``agent``) shows
    them as ``placer``."""
    from placerl.report_figures import NO_ORDER

    columns = ["graph", "order", "agent", "seeds", "runtime_ms", "runtime_ci95_low",
               "runtime_ci95_high", "speedup_vs_best"]  # fmt: skip
    if (summary["order"] == NO_ORDER).all():
        columns.remove("order")
        return summary[columns].rename(columns={"agent": "placer"})
    return summary[columns]


def _last_weights(result: TrainResult, graph: int) -> dict[str, float]:
    """The last weights' greedy runtime on ``graph`` when ``keep_best`` kept earlier ones (the
    final evaluation, on the curve's last point)."""
    last = result.curve[-1] if result.curve else None
    if last is None or result.policy_step == result.steps or last["step"] != result.steps:
        return {}
    return {f"policy (last weights, step {result.steps:,})": last["runtimes"][graph]}


def run_job(out_dir: Path, force: bool, job: Callable[[], TrainResult]) -> float | None:
    """Run one job of an app in ``out_dir``, as every app does; returns its objective.

    A run directory that holds a ``result.json`` is skipped unless ``force`` (its objective is
    read back); one whose ``result.json`` cannot be read runs again. A job that fails writes
    its traceback to ``error.txt`` there; in a multirun the other jobs go on (a single run
    fails with the error) and its objective is ``None``.

    The objective, :attr:`TrainResult.vs_best_baseline`, is what Hydra's Optuna sweeper
    minimizes (``configs/hparams_search/``).
    """
    path = out_dir / "result.json"
    if path.is_file() and not force:
        try:
            objective = _objective(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as error:  # half-written or hand-edited
            print(f"{path} is not a readable result ({type(error).__name__}); running the job "
                  "again")  # fmt: skip
        else:
            print(f"{out_dir} already holds result.json; skipped (force=true runs it again)")
            return objective
    try:
        return job().vs_best_baseline
    except Exception as error:
        (out_dir / "error.txt").write_text(traceback.format_exc())
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            raise
        print(f"FAILED: {type(error).__name__}: {error} (traceback in {out_dir / 'error.txt'})")
        return None


def _objective(result: dict) -> float:
    """:attr:`TrainResult.vs_best_baseline` of a ``result.json``."""
    return vs_best_baseline([(g["final_runtime"], g["baselines"]) for g in result["graphs"]])


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="train")
def train_app(cfg: DictConfig) -> float | None:
    """``placerl-train``: train a policy (see ``placerl-train --help``).

    Jobs are run by :func:`run_job`. An unfinished run directory resumes from its checkpoint
    (``resume=true``); ``force=true`` trains a finished one again from scratch.
    """
    run = _to_run(cfg)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    changed = _changed_keys(out_dir, to_train_config(run, str(out_dir)))
    if changed:  # e.g. an Optuna trial number that now stands for other parameters
        print(f"{out_dir} holds a result of another configuration ({', '.join(changed)} "
              "differ); training again")  # fmt: skip
        run.force = True
    if run.force:
        run.resume = False
    return run_job(out_dir, run.force, lambda: run_training(run, str(out_dir)))


def _changed_keys(out_dir: Path, config: TrainConfig) -> list[str]:
    """The options in which ``out_dir``'s finished result differs from ``config`` (only the
    schedule may change, as when resuming); empty when there is no result."""
    path = out_dir / "result.json"
    if not path.is_file():
        return []
    try:
        saved = json.loads(path.read_text())["config"]
    except (ValueError, KeyError, TypeError):
        return []  # unreadable: run_job's own reading reports it
    return changed_options(saved, config.to_dict())


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="eval")
def eval_app(cfg: DictConfig) -> None:
    """``placerl-eval``: a placer or a trained policy on graphs (``placerl-eval --help``).

    Writes ``result.json`` in the training schema; jobs are run by :func:`run_job`.
    """
    run = _to_run(cfg)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    run_job(out_dir, run.force, lambda: run_evaluation(run, str(out_dir)))


def run_evaluation(run: EvalRunConfig, out_dir: str) -> TrainResult:
    """Evaluate as ``run`` says, writing under ``out_dir`` and tracking with ``run.logger``."""
    config = OmegaConf.to_container(OmegaConf.structured(run), resolve=True)
    tracker = open_tracker(run.logger, config, out_dir, job_type="eval")
    try:
        result = evaluate(run.graph.spec, run.cluster.spec, run.placer, objective=run.objective,
                          baselines=run.baselines, out_dir=out_dir)  # fmt: skip
        print(summary_table(result))
        tracker.log_result(result, {})
    finally:
        tracker.close()
    print(f"Results in {out_dir}")
    return result
