"""The table an app prints at the end of a job: the policy or placer beside each baseline.

Rows are labelled in words (``local search [2]``); a placer spec with options goes to a
numbered footnote, where ``{steps}`` stays as written (the caption says what it stood for).
A placement that does not fit is marked ``infeasible (memory)`` instead of a penalty runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

from placerl.baselines.references import CALLS, STEPS
from placerl.results import EvalResult, GraphOutcome, Result, TrainResult

#: The row of :attr:`GraphOutcome.lower_bound`.
LOWER_BOUND_ROW = "lower bound (no placement is faster)"


@dataclass(frozen=True)
class Row:
    """One table row: a label, a runtime (seconds) and why it does not fit, if it does not."""

    label: str
    runtime: float
    infeasible: str = ""


class Footnotes:
    """Numbered placer specs: each spec with options gets one number, in order of first use."""

    def __init__(self) -> None:
        self.specs: list[str] = []

    def label(self, spec: str) -> str:
        """``spec`` in words: its placer's name, with a footnote number if it has options."""
        name, _, options = spec.partition("?")
        words = name.replace("_", " ")
        if STEPS in options or CALLS in options:
            words += ", equal budget"
        if not options:
            return words
        if spec not in self.specs:
            self.specs.append(spec)
        return f"{words} [{self.specs.index(spec) + 1}]"

    def caption(self, steps: int | None, calls: int | None = None) -> str:
        """The footnotes as lines, and what ``{steps}`` and ``{calls}`` stood for."""
        lines = [f"[{i}] {spec}" for i, spec in enumerate(self.specs, start=1)]
        used = "".join(self.specs)
        if steps is not None and STEPS in used:
            lines.append(f"{STEPS}: the {steps:,} env steps the run trained")
        if calls is not None and CALLS in used:
            lines.append(f"{CALLS}: the {calls:,} simulations the run made")
        return "\n".join(lines)


def summary_table(result: Result) -> str:
    """The policy (or the evaluated placer) against each baseline placer, per graph, as
    text, fastest first."""
    from rich.console import Console
    from rich.table import Table

    notes = Footnotes()
    if isinstance(result, EvalResult):
        mine = notes.label(result.config["placer"])
        title, whose, subject = f"placerl-eval: {mine}", "the placer's", "placer"
    else:
        title, subject = _train_title(result), "policy"
        whose = "the best placement the policy found"
    table = Table(title=title)
    for column in ("graph", "placer", "runtime (ms)", f"{subject} speedup"):
        table.add_column(
            column, justify="left" if column in ("graph", "placer") else "right", overflow="fold"
        )  # long names wrap instead of losing their end
    for g, outcome in enumerate(result.graphs):
        rows, mine_runtime = _rows(result, g, outcome, notes)
        for row in sorted(rows, key=lambda r: (bool(r.infeasible), r.runtime)):
            runtime = (
                f"infeasible ({row.infeasible})" if row.infeasible else f"{row.runtime * 1e3:.3f}"
            )
            speedup = (
                "-"
                if row.infeasible or mine_runtime is None
                else f"{row.runtime / mine_runtime:.3f}x"
            )
            table.add_row(outcome.graph, row.label, runtime, speedup)
    table.caption = (
        f"{subject} speedup: each row's runtime over {whose} (above 1x: the {subject} is faster)"
    )
    console = Console(width=100, record=True)
    with console.capture() as capture:
        console.print(table)
    steps, calls = None, None
    if isinstance(result, TrainResult):
        steps, calls = result.steps, result.simulator_calls.get("total")
    return capture.get() + notes.caption(steps, calls) + ("\n" if notes.specs else "")


def _train_title(result: TrainResult) -> str:
    title = f"placerl-train: {result.steps:,} steps, {result.timings['train']:.0f} s of training"
    if result.timings.get("warm_start"):
        title += f" after {result.timings['warm_start']:.0f} s of warm start"
    return title


def _rows(
    result: Result, g: int, outcome: GraphOutcome, notes: Footnotes
) -> tuple[list[Row], float | None]:
    """A graph's rows, and the runtime the speedups divide (the placer's, or the best
    placement the policy found: what the search recipes report; ``None`` where that does not
    fit, whose runtime is a penalty)."""
    if isinstance(result, EvalResult):
        mine = Row(
            f"{notes.label(result.config['placer'])} (evaluated)",
            outcome.final_runtime,
            outcome.final_infeasible,
        )
        rows, mine_runtime = [mine], outcome.final_runtime
    else:
        rows = [
            Row(
                f"policy (greedy, weights of step {result.policy_step:,})",
                outcome.final_runtime,
                outcome.final_infeasible,
            ),
            *_last_weights(result, g),
            Row("policy (best seen)", outcome.best_runtime, outcome.best_infeasible),
        ]
        mine_runtime = outcome.best_runtime
    rows += [
        Row(notes.label(spec), runtime, outcome.infeasible.get(spec, ""))
        for spec, runtime in outcome.baselines.items()
    ]
    if outcome.lower_bound is not None:
        rows.append(Row(LOWER_BOUND_ROW, outcome.lower_bound))
    return rows, None if _mine_infeasible(outcome, result) else mine_runtime


def _mine_infeasible(outcome: GraphOutcome, result: Result) -> bool:
    """Whether the placement the speedups divide by does not fit."""
    mine = outcome.final_infeasible if isinstance(result, EvalResult) else outcome.best_infeasible
    return bool(mine)


def _last_weights(result: TrainResult, graph: int) -> list[Row]:
    """The last weights' greedy runtime on ``graph`` when ``keep_best`` kept earlier ones (the
    final evaluation, on the curve's last point)."""
    last = result.curve[-1] if result.curve else None
    if last is None or result.policy_step == result.steps or last["step"] != result.steps:
        return []
    return [Row(f"policy (last weights, step {result.steps:,})", last["runtimes"][graph])]
