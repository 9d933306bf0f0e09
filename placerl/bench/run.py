"""Run a placer on PlaceBench cases: one record JSON per case, resumable.

:func:`run_case` places one case with a placer spec (``heft``,
``local_search?init=best_of&max_evaluations=2000``), scores it with the one scoring rule
(:func:`placerl.bench.scores.score_placement`) and returns its record; with ``out_dir`` it
writes it as ``<out_dir>/<case name, "/" as "__">.json`` (a recipe's: ``...@seed<seed>.json``).
:func:`run_cases` runs every case of a tier and split, skipping those whose record is there.
:mod:`placerl.bench.leaderboard` reads the records back.

A record (:data:`RECORD_FIELDS`, plus ``error``)::

    {"suite": "placebench-v1", "case": "tiny/chain-n12-s8", "tier": "tiny", "split": "test",
     "graph": "synthetic:chain?n=12&seed=8", "cluster": "homogeneous?n_devices=3",
     "objective": "pipeline", "placer": "heft", "runtime": 0.0123, "score": 1.0,
     "gap": 0.04, "optimum_gap": 0.0, "feasible": true, "why": "",
     "reference": {"placer": "heft", "runtime": 0.0123, "feasible": true},
     "lower_bound": 0.0118, "simulator_calls": 0, "wall_s": 0.002,
     "trace": [[0, 0.002, 0.0123]], "seed": null, "training": null,
     "provenance": {"git_revision": ..., "date": ..., ...}, "error": null}

``trace`` is the anytime curve (:class:`EvaluationCounter`); a trained policy's record
(:mod:`placerl.bench.recipe`) names its ``seed`` and its ``training``: the recipe, the cases it
trained and selected on, and the simulator calls and seconds that cost.

A case whose graph does not load (a dataset file that is not a graph) or that no placement
fits is recorded as failed: ``error`` holds the message, the scores are ``None``.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from placerl._provenance import provenance
from placerl.baselines import solve
from placerl.baselines.references import parse_placer
from placerl.bench.case import Case
from placerl.bench.scores import score_placement
from placerl.bench.suite import Suite, load_suite
from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import load_graph
from placerl.results import write_json
from placerl.sim import CostModel
from placerl.sim.incremental import PipelineState

#: The fields every record holds (:mod:`placerl.bench.leaderboard` refuses one without them).
RECORD_FIELDS = (
    "suite",
    "case",
    "tier",
    "split",
    "graph",
    "cluster",
    "objective",
    "placer",
    "runtime",
    "score",
    "gap",
    "optimum_gap",
    "feasible",
    "why",
    "reference",
    "lower_bound",
    "simulator_calls",
    "wall_s",
    "provenance",
)
#: Fields a record of an earlier run of this suite version may lack (read as ``None``).
OPTIONAL_FIELDS = ("trace", "seed", "training")
#: The folder beside the records where a recipe trains (its files are no records).
TRAINING_DIR = "training"
#: Errors that fail one case (recorded, the others go on): a graph that does not load, a
#: placement that cannot be made, a placer option one case refuses (its size limits); any
#: other error stops the run.
CASE_ERRORS = (GraphError, PlacementError, ConfigError)


def record_path(out_dir: str | Path, case: Case, seed: int | None = None) -> Path:
    """Where the record of ``case`` (by a recipe trained with ``seed``) goes in ``out_dir``."""
    suffix = "" if seed is None else f"@seed{seed}"
    return Path(out_dir) / f"{case.name.replace('/', '__')}{suffix}.json"


class EvaluationCounter:
    """The simulations counted inside :func:`count_evaluations` and the anytime trace.

    Attributes:
        calls: Simulations so far.
        trace: ``[calls, seconds, best runtime]`` each time a placement that fits beat every
            one before it: the placer's anytime curve, best runtime against simulator calls
            and against seconds, whatever the placer reports of itself.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.trace: list[list[float]] = []
        self._start = time.perf_counter()
        self._best = math.inf

    def add(self, runtime: float, feasible: bool) -> None:
        """Count one simulation; a best one that fits extends the trace. Scalar: it runs
        on every evaluation a search makes."""
        self.calls += 1
        if feasible and runtime < self._best:
            self._best = float(runtime)
            self.trace.append([self.calls, time.perf_counter() - self._start, self._best])

    def add_batch(self, runtimes: np.ndarray, feasible: np.ndarray) -> None:
        """Count one simulation per runtime of a batch (best of those that fit, last)."""
        fitting = runtimes[feasible.astype(bool)]
        self.calls += len(runtimes) - 1
        self.add(float(fitting.min()) if len(fitting) else math.inf, bool(len(fitting)))


@contextlib.contextmanager
def count_evaluations() -> Iterator[EvaluationCounter]:
    """Count the simulations made inside, at their source: ``with count_evaluations() as
    counter:``, then ``counter.calls`` and ``counter.trace``. :meth:`CostModel.evaluate`
    counts one, :meth:`CostModel.evaluate_batch` one per placement, and
    :meth:`~placerl.sim.incremental.PipelineState.try_move` (``pipeline``'s one-group move,
    which bypasses the cost model) one: whatever the placer reports, and whatever the
    reference cache already holds, every simulation made here is counted once."""
    counter = EvaluationCounter()
    evaluate, evaluate_batch = CostModel.evaluate, CostModel.evaluate_batch
    try_move = PipelineState.try_move

    def counted(self: CostModel, *args: Any, **kwargs: Any) -> Any:
        result = evaluate(self, *args, **kwargs)
        counter.add(result.runtime, result.feasible)
        return result

    def counted_batch(self: CostModel, placements: Any, *args: Any, **kwargs: Any) -> Any:
        out = evaluate_batch(self, placements, *args, **kwargs)
        if len(out[0]):
            counter.add_batch(*out)
        return out

    def counted_move(self: PipelineState, *args: Any, **kwargs: Any) -> Any:
        feasible, runtime = try_move(self, *args, **kwargs)
        counter.add(runtime, feasible)
        return feasible, runtime

    CostModel.evaluate, CostModel.evaluate_batch = counted, counted_batch  # type: ignore[method-assign]
    PipelineState.try_move = counted_move  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        CostModel.evaluate, CostModel.evaluate_batch = evaluate, evaluate_batch  # type: ignore[method-assign]
        PipelineState.try_move = try_move  # type: ignore[method-assign]


def run_case(
    case: Case,
    placer: str,
    out_dir: str | Path | None = None,
    *,
    suite: str = "placebench-v1",
    label: str | None = None,
    training: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Place ``case`` with ``placer``, score it and return its record (see the module).

    Args:
        case: The case.
        placer: A placer spec (:func:`placerl.baselines.references.parse_placer`).
        out_dir: Where to write the record (atomically); ``None``: nowhere.
        suite: The id of the case's suite, as the record names it.
        label: The name the record gives the placer (a recipe's, for its trained policy);
            ``None``: ``placer``.
        training: What training the placer cost (:mod:`placerl.bench.recipe`): its
            ``simulator_calls`` and ``wall_s`` start the anytime trace; ``None``: none.
        options: Placer options beside the spec's (a policy's file path, which may hold
            characters a spec may not).

    ``simulator_calls`` is what the placer spent on this case, counted at the source
    (:func:`count_evaluations`), the one check :func:`~placerl.baselines.solve` scores its
    placement with left out; a trained policy's training is in ``training``, counted once
    for all the cases it places. Constructive placers a placer starts from count when they
    run, not when their placement comes from the reference cache. ``wall_s`` is the placer's
    wall-clock time, the graph loaded. ``trace`` is the anytime curve: ``[calls, seconds,
    best runtime]`` at each improvement, training included, until the placement scored.

    Raises:
        ConfigError: An unknown placer or option (before any work).
    """
    name, options = parse_placer(placer, options)
    record: dict[str, Any] = {
        "suite": suite,
        "case": case.name,
        "tier": case.tier,
        "split": case.split,
        "graph": case.graph,
        "cluster": case.cluster,
        "objective": case.objective,
        "placer": label or placer,
        "seed": (training or {}).get("seed"),
        "training": training,
    }
    try:
        graph = load_graph(case.graph)
        start = time.perf_counter()
        with count_evaluations() as counted:
            result = solve(name, graph, case.cluster, case.objective, **options)
        wall = time.perf_counter() - start
        score = score_placement(case, result.placement).to_dict()
    except CASE_ERRORS as error:
        record.update(_failed(f"{type(error).__name__}: {error}"))
    else:
        calls = counted.calls - 1  # solve's check of the placement it returns is not the placer's
        record.update(
            {
                key: score[key]
                for key in (
                    "runtime",
                    "score",
                    "gap",
                    "optimum_gap",
                    "feasible",
                    "why",
                    "reference",
                    "lower_bound",
                )
            }
        )
        record.update(
            {
                "simulator_calls": calls,
                "wall_s": wall,
                "error": None,
                "trace": _trace(counted, calls, wall, score, training),
            }
        )
    record["provenance"] = provenance()
    if out_dir is not None:
        write_json(record_path(out_dir, case, record["seed"]), record)
    return record


def _trace(
    counted: EvaluationCounter,
    calls: int,
    wall: float,
    score: dict[str, Any],
    training: dict[str, Any] | None,
) -> list[list[float]]:
    """The anytime trace: each point that beats every earlier one, up to the placer's last
    call, with the training's calls and seconds before the first point; a training that
    searched the case itself (``learn_on="case"``) adds its own ``trace`` first, where the
    placement scored (the best it found) is already reached."""
    trace = [point for point in counted.trace if point[0] <= calls]
    if score["feasible"] and (not trace or score["runtime"] < trace[-1][2]):
        trace.append([calls, wall, score["runtime"]])
    if training:
        offset = (training["simulator_calls"], training["wall_s"])
        trace = [[c + offset[0], s + offset[1], runtime] for c, s, runtime in trace]
        trace = _improving([*training.get("trace", []), *trace])
    return trace


def _improving(points: list[list[float]]) -> list[list[float]]:
    """The ``[calls, seconds, runtime]`` points that beat every one before them."""
    kept: list[list[float]] = []
    for point in points:
        if not kept or point[2] < kept[-1][2]:
            kept.append(list(point))
    return kept


def _failed(error: str) -> dict[str, Any]:
    return {
        "runtime": None,
        "score": None,
        "gap": None,
        "optimum_gap": None,
        "feasible": False,
        "why": "failed",
        "reference": None,
        "lower_bound": None,
        "simulator_calls": 0,
        "wall_s": 0.0,
        "trace": [],
        "error": error,
    }


def select_cases(
    suite: str | Suite, tier: str | None, split: str | None, family: str | None = None
) -> tuple[Suite, list[Case]]:
    """The suite and its cases of ``tier``, ``split`` and ``family`` (``None``: all).

    Raises:
        ConfigError: An unknown suite, tier, split or family (listing the known ones), or a
            selection without a case.
    """
    suite = load_suite(suite) if isinstance(suite, str) else suite
    cases = suite.select(tier, split, family)
    if not cases:
        raise ConfigError(
            f"suite {suite.id} has no case of tier {tier!r} in split {split!r}; "
            f"tiers: {', '.join(suite.tiers)}"
        )
    return suite, cases


def run_cases(
    suite: str | Suite,
    tier: str | None,
    split: str | None,
    placer: str,
    out_dir: str | Path,
    *,
    force: bool = False,
    progress: bool = True,
    family: str | None = None,
) -> list[dict[str, Any]]:
    """Run ``placer`` on every case of ``tier``, ``split`` and ``family`` (``None``: all),
    writing one record per case into ``out_dir``; returns the records, in the suite's order.

    A case whose record is already there is read back, not run again (unless ``force``); a
    record of a failed case, or one that does not read, runs again; one of another placer or
    suite is refused. A case that fails
    (:data:`CASE_ERRORS`) is recorded with its error and the others go on.

    Raises:
        ConfigError: An unknown suite, tier, split, placer or option (before any work); a
            record of another placer or suite in ``out_dir``.
    """
    suite, cases = select_cases(suite, tier, split, family)
    parse_placer(placer)
    records = []
    for case in _progress(cases, progress, f"{suite.id} {placer}"):
        path = record_path(out_dir, case)
        done = None if force else _finished(path)
        if done and (done.get("placer"), done.get("suite")) != (placer, suite.id):
            raise ConfigError(
                f"{path} is a record of placer {done.get('placer')!r} on "
                f"{done.get('suite')!r}, not of {placer!r} on {suite.id}: give "
                "each placer its own folder (or force=true)"
            )
        records.append(done or run_case(case, placer, out_dir, suite=suite.id))
    return records


def _finished(path: Path) -> dict[str, Any] | None:
    """The record at ``path`` when it is there, reads and did not fail."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and not record.get("error") else None


def _progress(cases: list[Case], show: bool, desc: str) -> Any:
    if not show:
        return cases
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm comes with the rl extra
        return cases
    return tqdm(cases, desc=desc, unit="case", leave=False)
