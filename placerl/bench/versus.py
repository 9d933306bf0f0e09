"""A learned recipe against iterated local search given the recipe's own budget.

RL's budget is every simulator call and second it spent: each training once (its env steps,
evaluations, validation, rollback checks, warm start) and the placing of every case. Spread
over the cases it placed, that is what iterated local search gets per case, once in calls
(:func:`search_at_calls`) and once in seconds (:func:`search_at_seconds`); :func:`versus_rows`
pairs the recipe's runtimes with the search's case by case (the recipe's seeds of a case as
their geometric mean against the search's one run), with the ratio's bootstrap interval
(:func:`placerl.comparison.compare_pairs`); a row names the ``family`` whose cases it
pairs, or ``all``, and its ``floor``: the geometric mean over the paired cases of the lower
bound over the search's runtime, below which no placer's ratio goes (:func:`floor`), and its
``best_known``: the same mean of the best runtime any record of the case reached, over the
search's (:func:`best_known`): a ratio below it needs a placement nobody has found. The
search's budget is what it may spend after best_of's construction (about ten calls per case
on the tiny tier, which the learned recipes that start from best_of spend too; seconds more
where best_of runs its DP): each row shows what both sides really spent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: The folder (under a benchmark's output) of the searches matched to one family's budget:
#: each scores part of a tier, so the leaderboard reads none of them as a row.
FAMILY_SEARCHES = "family_searches"
#: Iterated local search from best_of, kicked until its budget is spent.
SEARCH = "local_search?init=best_of&restarts=1000000"
#: A bound no matched budget reaches: the other limit is the one that stops the search.
_NO_LIMIT = {"calls": 1_000_000_000, "seconds": 86_400}
#: The two budgets a recipe meets the search at, as its rows name them.
REGIMES = ("equal calls", "equal seconds")
#: A :func:`coverage` cell of a tier the placer has no row on.
NOT_RUN = "not run"
#: What stands for a :func:`coverage` table of a regime without a row.
NO_ROW = "No row yet."


def budget_per_case(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The mean simulator calls and seconds per case placed of a recipe's records, each
    training counted once (records of several seeds: each seed's training once); a case the
    policy failed to place spreads none of the training's cost.

    Raises:
        ValueError: No record of a placed case.
    """
    placed = [r for r in records if not r.get("error")]
    if not placed:
        raise ValueError("no record of a placed case to take a budget from")
    trainings = {r["training"]["id"]: r["training"] for r in records if r.get("training")}
    calls = sum(t["simulator_calls"] for t in trainings.values())
    seconds = sum(t["wall_s"] for t in trainings.values())
    calls += sum(r["simulator_calls"] for r in placed)
    seconds += sum(r["wall_s"] for r in placed)
    return {"calls": calls / len(placed), "seconds": seconds / len(placed)}


def search_at_calls(calls: float) -> str:
    """Iterated local search stopped at ``calls`` evaluations per case (rounded up)."""
    return f"{SEARCH}&max_evaluations={max(1, math.ceil(calls))}&time_limit={_NO_LIMIT['seconds']}"


def search_at_seconds(seconds: float) -> str:
    """Iterated local search stopped after ``seconds`` of search per case (best_of's
    construction, which both start from, comes on top)."""
    return f"{SEARCH}&max_evaluations={_NO_LIMIT['calls']}&time_limit={max(seconds, 1e-3):.4g}"


def versus_rows(
    learned: Sequence[Mapping[str, Any]],
    searches: Mapping[str, Sequence[Mapping[str, Any]]],
    family: str = "all",
    known: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One row per regime of ``searches`` (``{"calls": records, "seconds": records}``): the
    learned runtimes over the search's, paired by case (below 1: the learned placer is
    faster; each case's seeds as their geometric mean, :func:`case_runtimes`), with the
    interval, wins and losses over the cases and the budget each side spent per case. A
    case the recipe failed to place in some seed (did not fit, or an error) is no pair: it
    is a loss where the search placed it, and ``unplaced`` counts the recipe's placements
    that did not fit or failed, of ``placements``.
    ``family`` names the cases ``learned`` holds: one family's, or ``all`` of its tier;
    ``known`` is each case's best known runtime (:func:`best_runtimes`; ``None``: the row's
    ``best_known`` is ``nan``)."""
    from placerl.comparison import compare_pairs

    mine = budget_per_case(learned)
    per_case = case_runtimes(learned)
    missed = failed_cases(learned)
    unplaced = sum(not _placed(r) for r in learned)
    rows = []
    for regime, records in searches.items():
        placed = {r["case"]: r for r in records if _placed(r)}
        theirs = {case: float(r["runtime"]) for case, r in placed.items()}
        pairs = [(runtime, theirs[case]) for case, runtime in per_case.items() if case in theirs]
        result = compare_pairs(*zip(*pairs, strict=True)) if pairs else compare_pairs([], [])
        spent = budget_per_case(records) if records else {"calls": math.nan, "seconds": math.nan}
        lost = sum(case in theirs for case in missed)  # the search placed what the recipe missed
        verdict = result.verdict(learned[0]["placer"], "iterated local search")
        if lost:
            verdict += (
                f"; {lost} {'more ' if pairs else ''}case(s) lost: the recipe's placement did "
                f"not fit or failed in some seed ({unplaced} of {len(learned)} placements), "
                "where the search's fit"
            )
        rows.append(
            {
                "placer": learned[0]["placer"],
                "tier": learned[0]["tier"],
                "family": family,
                "regime": f"equal {regime}",
                "search": records[0]["placer"] if records else "",
                "pairs": result.pairs,
                "ratio": result.ratio,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "wins": result.wins,
                "losses": result.losses + lost,
                "unplaced": unplaced,
                "placements": len(learned),
                "floor": floor([placed[case] for case in per_case if case in placed]),
                "best_known": best_known(
                    [placed[case] for case in per_case if case in placed], known or {}
                ),
                "calls_per_case": mine["calls"],
                "search_calls_per_case": spent["calls"],
                "seconds_per_case": mine["seconds"],
                "search_seconds_per_case": spent["seconds"],
                "verdict": verdict,
            }
        )
    return rows


def coverage(
    rows: Iterable[Mapping[str, Any]], regime: str, families: Mapping[str, Sequence[str]]
) -> list[dict[str, str]]:
    """Where each placer of ``rows`` (pooled :func:`versus_rows`) met the search, at a glance:
    one row per placer with a row on a tier of ``families`` (each tier's test families, in
    order), one cell per tier with its ratio in ``regime`` (one of :data:`REGIMES`). A row
    over the tier's cases gives the cell its ratio and interval (or its count of pairs,
    where they are too few for one); otherwise the cell lists the ratio on each family the
    placer ran on and how many of the tier's families those are; :data:`NOT_RUN` where it
    has no row there. A cell names the placements that did not fit or failed: its ratio
    pairs the others only."""
    found: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for row in rows:
        known = families.get(row["tier"])
        if row["regime"] == regime and known is not None and row["family"] in ("all", *known):
            found.setdefault(row["placer"], {}).setdefault(row["tier"], {})[row["family"]] = row
    return [
        {"placer": placer}
        | {tier: _coverage_cell(tiers.get(tier, {}), known) for tier, known in families.items()}
        for placer, tiers in sorted(found.items())
    ]


def coverage_sections(
    rows: Iterable[Mapping[str, Any]],
    families: Mapping[str, Sequence[str]],
    render: Callable[[list[dict[str, str]]], str],
) -> str:
    """The :func:`coverage` table of each of :data:`REGIMES` under its ``###`` heading,
    drawn by ``render`` (a markdown table of the cells), or :data:`NO_ROW` where the regime
    has no row."""
    rows = list(rows)
    sections = []
    for regime in REGIMES:
        table = coverage(rows, regime, families)
        sections.append(f"### {regime.capitalize()}\n\n{render(table) if table else NO_ROW}")
    return "\n\n".join(sections)


def _coverage_cell(by_family: Mapping[str, Mapping[str, Any]], known: Sequence[str]) -> str:
    """One tier's :func:`coverage` cell from the placer's rows on it, by family."""
    if not by_family:
        return NOT_RUN
    if pooled := by_family.get("all"):
        return _ratio(pooled, interval=True)
    ran = [family for family in known if family in by_family]
    shown = "; ".join(f"{f.rpartition('/')[2]} {_ratio(by_family[f])}" for f in ran)
    return f"{shown} ({len(ran)} of {len(known)} families)"


def _ratio(row: Mapping[str, Any], interval: bool = False) -> str:
    """A row's ratio (with its interval, where asked and there are pairs enough for one)
    and its placements that did not fit or failed."""
    if not row["pairs"]:
        text = "no pair"
    elif interval and math.isnan(row["ci_low"]):
        text = f"{row['ratio']:.3f} ({row['pairs']} pair(s))"
    elif interval:
        text = f"{row['ratio']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    else:
        text = f"{row['ratio']:.3f}"
    if row.get("unplaced"):
        text += f", {row['unplaced']} of {row['placements']} unplaced"
    return text


def floor(records: Sequence[Mapping[str, Any]]) -> float:
    """The geometric mean over ``records`` of their lower bound over their runtime (``nan``
    where a record has no bound, or there are none). No placer's runtime ratio to these
    records goes below it, so a ratio target under the floor is out of reach. (A case's
    proven optimum is tighter, but the one proven among contiguous splits bounds those only.)
    """
    from placerl.comparison import geometric_mean

    if not records or any(record.get("lower_bound") is None for record in records):
        return math.nan
    return geometric_mean([float(r["lower_bound"]) / float(r["runtime"]) for r in records])


def best_known(records: Sequence[Mapping[str, Any]], known: Mapping[str, float]) -> float:
    """The geometric mean over ``records`` of their case's best known runtime (``known``)
    over their runtime (``nan`` where a case has none, or there are no records): how far
    below 1 any placement found so far goes. It is at most 1 when ``known`` holds these
    records, and at least :func:`floor`.
    """
    from placerl.comparison import geometric_mean

    if not records or any(record["case"] not in known for record in records):
        return math.nan
    return geometric_mean([known[r["case"]] / float(r["runtime"]) for r in records])


def best_runtimes(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Each case's fastest feasible runtime over ``records`` (any placer, seed or budget):
    the best known placement of the case, as far as these records know."""
    best: dict[str, float] = {}
    for record in records:
        if _placed(record):
            case, runtime = record["case"], float(record["runtime"])
            best[case] = min(best.get(case, math.inf), runtime)
    return best


def case_runtimes(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each case's runtime over its seeds: their geometric mean, for the cases every seed
    placed (:func:`failed_cases` are the others: a mean over the seeds that fit would hide
    those that did not). The seeds of one case share its graph, so they are one pair, not
    several (counted apart they would narrow the interval and the test as if each seed were
    another graph)."""
    from placerl.comparison import geometric_mean

    missed = failed_cases(records)
    runtimes: dict[str, list[float]] = {}
    for record in records:
        if record["case"] not in missed:
            runtimes.setdefault(record["case"], []).append(float(record["runtime"]))
    return {case: geometric_mean(values) for case, values in runtimes.items()}


def failed_cases(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """The cases of ``records`` whose placement, in some seed, does not fit or failed: a row
    counts each as a loss where the search placed it, not as a pair."""
    return {record["case"] for record in records if not _placed(record)}


def _placed(record: Mapping[str, Any]) -> bool:
    return bool(record.get("feasible")) and not record.get("error")
