"""The PlaceBench leaderboard: one row per (tier, split, placer), generated from record files.

A placer's row pools its cases and, for a recipe, its seeds.

:func:`leaderboard` reads every record JSON (:mod:`placerl.bench.run`) under some folders;
:func:`write_leaderboard` writes the table as markdown, with the suite, the commit(s) and
date(s) of the records, and as JSON beside it. ``placerl-leaderboard DIR... [--out FILE]``
prints it. A table is never typed: it comes from the files.

Columns: ``suite``, ``tier``, ``split``, ``placer``, ``cases``, ``score`` (the geometric mean of the
scores with its bootstrap 95% interval and the infeasible count,
:meth:`~placerl.bench.scores.MeanScore.label`), ``score_value``, ``ci_low``, ``ci_high``,
``infeasible``, ``failed`` (cases whose graph did not load or that no placement fits),
``mean_gap`` (to the lower bound, over placements that fit), ``simulator_calls`` and
``wall_s`` (totals, each training counted once), ``calls_per_case`` (``simulator_calls`` over
the records: the budget a classic placer is held to), ``seeds``, and ``vs_reference``: the
paired comparison (:func:`placerl.comparison.compare_pairs`) of the row's runtimes with those
of the strongest classic placer at equal budget: the best-scoring row of the same tier and
split without training that covers the row's cases, with ``calls_per_case`` at most the
row's (``reference`` names it; ``ratio``, ``ratio_low`` and ``ratio_high`` hold the
geometric-mean runtime ratio and its 95% interval: below 1, the row's placements run faster).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placerl.bench.run import RECORD_FIELDS, TRAINING_DIR
from placerl.bench.scores import CaseScore, geometric_mean_score
from placerl.bench.versus import FAMILY_SEARCHES
from placerl.errors import ConfigError
from placerl.results import write_json

#: Marks the JSON :func:`write_leaderboard` writes, so that a later reading skips it.
KIND = "placebench-leaderboard"
COLUMNS = (
    "suite",
    "tier",
    "split",
    "placer",
    "cases",
    "seeds",
    "score",
    "score_value",
    "ci_low",
    "ci_high",
    "infeasible",
    "failed",
    "mean_gap",
    "simulator_calls",
    "calls_per_case",
    "wall_s",
    "vs_reference",
    "reference",
    "ratio",
    "ratio_low",
    "ratio_high",
)
#: The columns the markdown table shows.
SHOWN = (
    "tier",
    "split",
    "placer",
    "cases",
    "score",
    "infeasible",
    "failed",
    "mean_gap",
    "calls_per_case",
    "wall_s",
    "vs_reference",
)


def load_records(folders: Sequence[str | Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every record under ``folders`` with its file: each ``*.json`` but placerl's
    ``result.json``, the files of a recipe's training, the searches matched to one family's
    budget (:data:`~placerl.bench.versus.FAMILY_SEARCHES`: part of a tier each) and any
    JSON with a ``kind`` (a leaderboard's own, a benchmark's results beside the records: a
    record has none).

    Raises:
        FileNotFoundError: A folder does not exist, or none holds a record.
        ConfigError: A file that does not read as JSON, or a record without a field of
            :data:`~placerl.bench.run.RECORD_FIELDS` (naming the file and the field).
    """
    records, seen = [], set()
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            raise FileNotFoundError(f"{root} is not a folder")
        for path in sorted(root.rglob("*.json")):
            inside = path.relative_to(root).parts[:-1]
            skipped = TRAINING_DIR in inside or FAMILY_SEARCHES in inside
            if path.name == "result.json" or skipped or path.resolve() in seen:
                continue  # a file under two of the folders is read once
            seen.add(path.resolve())
            try:
                record = json.loads(path.read_text())
            except ValueError as error:
                raise ConfigError(f"{path} is not a readable record: {error}") from None
            if isinstance(record, dict) and "kind" in record:
                continue  # a leaderboard's or a benchmark's own file: records carry no kind
            if not isinstance(record, dict):
                raise ConfigError(f"{path} is not a record (a JSON object)")
            missing = [name for name in RECORD_FIELDS if name not in record]
            if missing:
                raise ConfigError(
                    f"{path} is not a complete record: field {missing[0]!r} is missing"
                )
            records.append((path, record))
    if not records:
        raise FileNotFoundError(f"no record JSON under {', '.join(map(str, folders))}")
    return records


def leaderboard(folders: Sequence[str | Path]) -> Any:
    """One row per (tier, split, placer) of the records under ``folders`` (see the module).

    Raises:
        FileNotFoundError, ConfigError: As :func:`load_records`; records of two suites (or
            suite versions) for one tier and placer (naming a file of each), which never pool;
            two records of one case and placer that differ (naming both: which is the run?).
    """
    import pandas as pd

    groups: dict[tuple[str, str, str], dict[str, tuple[Path, dict[str, Any]]]] = {}
    for path, record in load_records(folders):
        group = groups.setdefault((record["tier"], record["split"], record["placer"]), {})
        first = next(iter(group.values()), None)
        if first and first[1]["suite"] != record["suite"]:
            raise ConfigError(
                f"{first[0]} ({first[1]['suite']}) and {path} "
                f"({record['suite']}) are records of two suites for tier "
                f"{record['tier']!r} and placer {record['placer']!r}: results "
                "of two suites never pool"
            )
        _check_budget(group, path, record)
        key = (record["case"], record.get("seed"))
        twin = group.get(key)
        if twin and _scored(twin[1]) != _scored(record):
            raise ConfigError(
                f"{twin[0]} and {path} are two different records of case "
                f"{record['case']!r} by {record['placer']!r} (seed "
                f"{record.get('seed')}): keep one"
            )
        group.setdefault(key, (path, record))  # a copy of a record counts once
    pooled = {name: [record for _, record in group.values()] for name, group in groups.items()}
    rows = [{**_row(records), **_versus(records, pooled)} for records in pooled.values()]
    return pd.DataFrame(rows, columns=list(COLUMNS)).sort_values(
        ["suite", "tier", "split", "placer"], ignore_index=True
    )


def _check_budget(
    group: dict[Any, tuple[Path, dict[str, Any]]], path: Path, record: dict[str, Any]
) -> None:
    """Refuse pooling a recipe's record with one of another training budget (a recipe whose
    defaults changed between two runs keeps its name)."""
    budget = (record.get("training") or {}).get("budget")
    for other_path, other in group.values():
        theirs = (other.get("training") or {}).get("budget")
        if theirs != budget:
            raise ConfigError(
                f"{other_path} and {path} are records of {record['placer']!r} "
                f"with different budgets (training.budget {theirs} and "
                f"{budget}): they never pool"
            )
        return


def _scored(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a record says of its placement (two runs of one placer may differ in time)."""
    return record["runtime"], record["score"], record["feasible"], record.get("error")


def _row(records: list[dict[str, Any]]) -> dict[str, Any]:
    first = records[0]
    scored = [r for r in records if not r.get("error")]
    row = {
        "suite": first["suite"],
        "tier": first["tier"],
        "split": first["split"],
        "placer": first["placer"],
        "cases": len(records),
        "failed": len(records) - len(scored),
    }
    if scored:
        mean = geometric_mean_score([_case_score(r) for r in scored])
        label, value, low, high = mean.label(), mean.value, mean.ci_low, mean.ci_high
        infeasible = mean.infeasible
    else:
        label, value, low, high, infeasible = "all failed", None, None, None, 0
    gaps = [r["gap"] for r in scored if r["gap"] is not None]
    calls, wall = _budget(records)
    row.update(
        {
            "seeds": len({r.get("seed") for r in records}),
            "score": label,
            "score_value": value,
            "ci_low": low,
            "ci_high": high,
            "infeasible": infeasible,
            "mean_gap": sum(gaps) / len(gaps) if gaps else None,
            "simulator_calls": calls,
            "calls_per_case": calls / len(records),
            "wall_s": wall,
        }
    )
    return row


def _budget(records: list[dict[str, Any]]) -> tuple[int, float]:
    """Simulator calls and seconds of ``records``, each training counted once."""
    trainings = {r["training"]["id"]: r["training"] for r in records if r.get("training")}
    calls = sum(int(r["simulator_calls"]) for r in records)
    wall = sum(float(r["wall_s"]) for r in records)
    return (
        calls + sum(int(t["simulator_calls"]) for t in trainings.values()),
        wall + sum(float(t["wall_s"]) for t in trainings.values()),
    )


Pooled = dict[tuple[str, str, str], list[dict[str, Any]]]


def _versus(records: list[dict[str, Any]], pooled: Pooled) -> dict[str, Any]:
    """The paired comparison of ``records`` with the strongest classic placer at equal
    budget (see the module); empty columns when there is none to pair with."""
    from placerl.comparison import compare_pairs

    first = records[0]
    budget = _budget(records)[0] / len(records)
    cases = {r["case"] for r in records}
    candidates = [
        (name, rows)
        for name, rows in pooled.items()
        if name[:2] == (first["tier"], first["split"])
        and rows is not records
        and not any(r.get("training") for r in rows)
        and cases <= {r["case"] for r in rows}  # a mean over the same cases
        and _budget(rows)[0] / len(rows) <= budget
    ]
    means = [(_mean(rows), name[2], rows) for name, rows in candidates]
    scored = [item for item in means if item[0]]
    if not scored:
        return {"vs_reference": "", "reference": None}
    _, reference, rows = max(scored, key=lambda item: item[0])
    theirs = {r["case"]: r["runtime"] for r in rows if r["feasible"] and not r.get("error")}
    pairs = [
        (r["runtime"], theirs[r["case"]])
        for r in records
        if r["feasible"] and not r.get("error") and r["case"] in theirs
    ]
    if not pairs:
        return {"vs_reference": "", "reference": reference}
    comparison = compare_pairs(*map(list, zip(*pairs, strict=True)))
    interval = "" if comparison.ci_note else f" [{comparison.ci_low:.3f}, {comparison.ci_high:.3f}]"
    return {
        "vs_reference": f"{comparison.ratio:.3f}x{interval} vs {reference}",
        "reference": reference,
        "ratio": comparison.ratio,
        "ratio_low": comparison.ci_low,
        "ratio_high": comparison.ci_high,
    }


def _mean(records: list[dict[str, Any]]) -> float | None:
    """The geometric-mean score of the records that did not fail."""
    scored = [r for r in records if not r.get("error")]
    return geometric_mean_score([_case_score(r) for r in scored]).value if scored else None


def _case_score(record: dict[str, Any]) -> CaseScore:
    return CaseScore.from_dict({**record, "optimum": None})


def provenance_line(records: Sequence[dict[str, Any]]) -> str:
    """``Suite placebench-v1; commit abc123; date 2025-01-01`` from the records' provenance
    (every distinct value, in order)."""

    def distinct(values: Any) -> str:
        found = list(dict.fromkeys(str(v) for v in values if v))
        return ", ".join(found) or "unknown"

    provenances = [r.get("provenance") or {} for r in records]
    dates = (str(p.get("date", ""))[:10] for p in provenances)
    return (
        f"Suite {distinct(r['suite'] for r in records)}; "
        f"commit(s) {distinct(p.get('git_revision') for p in provenances)}; "
        f"date(s) {distinct(dates)}"
    )


def table_markdown(table: Any) -> str:
    """The shown columns of a leaderboard as a markdown table."""
    return table[list(SHOWN)].to_markdown(index=False, floatfmt=".4g")


def write_leaderboard(folders: Sequence[str | Path], out: str | Path) -> Path:
    """Write the leaderboard of ``folders`` to ``out`` (markdown: a title, the provenance line,
    the table and its anytime curves), its rows as JSON beside it (``out`` with ``.json``) and
    one anytime plot per tier and split whose records have traces
    (``<out stem>-anytime-<tier>-<split>.png``, :func:`placerl.bench.anytime.plot_anytime`);
    returns ``out``.

    Raises:
        FileNotFoundError, ConfigError: As :func:`leaderboard`.
    """
    table = leaderboard(folders)
    records = [record for _, record in load_records(folders)]
    line = provenance_line(records)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    plots = "".join(
        f"\n![anytime curves, {name}]({path.name})\n"
        for name, path in write_anytime_plots(records, out).items()
    )
    text = f"# PlaceBench leaderboard\n\n{line}\n\n{table_markdown(table)}\n{plots}"
    out.write_text(text)
    rows = json.loads(table.to_json(orient="records"))
    write_json(out.with_suffix(".json"), {"kind": KIND, "provenance": line, "rows": rows})
    return out


def write_anytime_plots(records: Sequence[dict[str, Any]], out: Path) -> dict[str, Path]:
    """One anytime plot per tier and split of ``records`` whose records have traces, beside
    ``out``; returns them by ``<tier> <split>``."""
    from placerl.bench.anytime import plot_anytime

    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for record in records:
        if record.get("trace"):
            rows = groups.setdefault((record["tier"], record["split"]), {})
            rows.setdefault(record["placer"], []).append(record)
    return {
        f"{tier} {split}": plot_anytime(
            rows,
            out.with_name(f"{out.stem}-anytime-{tier}-{split}.png"),
            f"{records[0]['suite']} {tier} ({split}): best score within a budget",
        )
        for (tier, split), rows in sorted(groups.items())
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``placerl-leaderboard DIR... [--out FILE]``."""
    parser = argparse.ArgumentParser(
        prog="placerl-leaderboard", description=__doc__.splitlines()[0]
    )
    parser.add_argument("folders", nargs="+", help="folders holding PlaceBench record JSON")
    parser.add_argument(
        "--out", default=None, help="also write the table there as markdown (and JSON beside it)"
    )
    args = parser.parse_args(argv)
    try:
        if args.out:
            path = write_leaderboard(args.folders, args.out)
            print(path.read_text())
            print(f"Leaderboard in {path} and {path.with_suffix('.json')}")
        else:
            records = [record for _, record in load_records(args.folders)]
            print(provenance_line(records))
            print(table_markdown(leaderboard(args.folders)))
    except (FileNotFoundError, ConfigError) as error:
        parser.error(str(error))
    return 0
