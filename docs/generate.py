"""The documentation's results pages, generated from the committed result files.

``make docs`` runs :func:`generate_pages` before Sphinx reads the sources (``conf.py``): it
writes ``docs/_generated/*.md`` from PlaceBench's leaderboard and records and from the
benchmarks' result JSON files, each page with the provenance of what it read (commits, dates,
machines, commands). No figure on those pages is typed by hand; a missing or unreadable result
file fails the build, naming the file.

The README's leaderboard excerpt comes from the same file: ``python docs/generate.py
--readme`` rewrites it between its markers, and a test fails when it is not what the
leaderboard gives.

    python docs/generate.py             # writes the pages without building the site
    python docs/generate.py --readme    # and the README's leaderboard excerpt
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from placerl._provenance import machine_label

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STUDY = ROOT / "experiments" / "traversal_order_study"
PLACEBENCH = RESULTS / "placebench-v1"
#: The leaderboard's columns a page shows, with their headings.
BOARD_COLUMNS = {
    "placer": "placer",
    "cases": "cases",
    "score": "score [95% CI]",
    "infeasible": "infeasible",
    "failed": "failed",
    "calls_per_case": "calls per case",
    "wall_s": "seconds (total)",
    "vs_reference": "vs the strongest classic placer at its budget",
}
#: The README's excerpt of the leaderboard: its columns, and the markers around it.
EXCERPT_COLUMNS = {
    "tier": "tier",
    "placer": "placer",
    "cases": "cases",
    "score": "score [95% CI]",
    "calls_per_case": "calls per case",
    "vs_reference": "vs the strongest classic placer at its budget",
}
EXCERPT_MARKERS = (
    "<!-- leaderboard excerpt: python docs/generate.py --readme -->",
    "<!-- end of the leaderboard excerpt -->",
)
#: Commands a provenance list shows one by one; beyond, it counts them.
MAX_COMMANDS = 4


def generate_pages(docs: Path) -> list[Path]:
    """Write every generated page into ``docs/_generated``; returns their paths.

    Raises:
        FileNotFoundError: A result file a page reads is missing (naming it).
        ValueError: A result file that does not read as JSON (naming it).
    """
    out = docs / "_generated"
    out.mkdir(exist_ok=True)
    return [_write(out / f"{name}.md", page(out)) for name, page in PAGES.items()]


def _write(path: Path, text: str) -> Path:
    """Write ``text`` unless the file already holds it (Sphinx rereads changed files only)."""
    if not path.is_file() or path.read_text() != text:
        partial = path.with_suffix(".partial")
        partial.write_text(text)
        os.replace(partial, path)
    return path


def read_json(path: Path) -> dict[str, Any]:
    """A result file's JSON.

    Raises:
        FileNotFoundError: No such file.
        ValueError: Not JSON.
    """
    shown = _relative(path, ROOT)
    if not path.is_file():
        raise FileNotFoundError(
            f"the docs read {shown}, which is missing: run the benchmark that writes it"
        )
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{shown} does not read as JSON: {error}") from None


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    """A pipe table of ``rows``: one column per key of ``columns``, headed by its value."""
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(key)) for key in columns) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def provenance_lines(provenances: Iterable[Mapping[str, Any]]) -> str:
    """Where figures come from: the distinct commits, dates, machines and commands of some
    result files' provenance (:func:`placerl._provenance.provenance`)."""
    seen: dict[str, set[str]] = {"commit": set(), "date": set(), "machine": set(), "command": set()}
    for item in provenances:
        seen["commit"].add(_short_revision(item.get("git_revision")))
        seen["date"].add(str(item["date"])[:10] if item.get("date") else "not recorded")
        machine = item.get("machine")
        seen["machine"].add(machine if isinstance(machine, str) else machine_label(machine))
        if item.get("command"):
            seen["command"].add(str(item["command"]))
    lines = [
        f"- {what}s: {', '.join(f'`{v}`' for v in sorted(values))}"
        for what, values in seen.items()
        if values and what != "command"
    ]
    commands = sorted(seen["command"])
    if len(commands) <= MAX_COMMANDS:
        lines += [f"- command: `{command}`" for command in commands]
    else:
        lines.append(f"- commands: {len(commands)} distinct (each record names its own)")
    return "\n".join(lines)


def _short_revision(revision: str | None) -> str:
    """A git revision's first 12 characters, keeping its ``+dirty`` mark."""
    if not revision:
        return "not recorded"
    commit, dirty, _ = str(revision).partition("+dirty")
    return commit[:12] + dirty


def record_provenances(folder: Path) -> list[dict[str, Any]]:
    """The provenance of every PlaceBench record under ``folder``."""
    from placerl.bench.leaderboard import load_records

    return [
        record["provenance"]
        for _, record in load_records([folder])
        if isinstance(record.get("provenance"), Mapping)
    ]


def leaderboard_page(out: Path) -> str:
    """The PlaceBench leaderboard, one table per tier, with its anytime plots."""
    board = read_json(PLACEBENCH / "LEADERBOARD.json")
    parts = [
        "# Leaderboard",
        "",
        "Every placer's row on PlaceBench v1's test split: the geometric-mean score over "
        "its cases (1 is the best constructive placer's runtime; above 1 runs faster), "
        "its simulator calls per case and its seconds, each training counted once, and "
        "its runtimes against the strongest classic placer within its budget, paired by "
        "case. Generated from `benchmarks/results/placebench-v1/LEADERBOARD.json` "
        "(`python benchmarks/bench_placebench.py` writes it).",
        "",
        "## Provenance",
        "",
        provenance_lines(record_provenances(PLACEBENCH)),
        "",
    ]
    tiers = sorted({row["tier"] for row in board["rows"]})
    for tier in tiers:
        rows = sorted(
            (r for r in board["rows"] if r["tier"] == tier and r["split"] == "test"),
            key=lambda r: -(r.get("score_value") or 0),
        )
        parts += [f"## {tier}", "", markdown_table(rows, BOARD_COLUMNS), ""]
        plot = PLACEBENCH / f"LEADERBOARD-anytime-{tier}-test.png"
        if plot.is_file():
            parts += [f"![anytime curves of the {tier} tier]({_relative(plot, out)})", ""]
    return "\n".join(parts)


def paired_page(
    title: str,
    intro: str,
    path: Path,
    columns: Mapping[str, str],
    named_by: tuple[str, ...],
    summary: Callable[[list[dict[str, Any]]], str] | None = None,
) -> str:
    """A page of paired rows (a benchmark's ``{"provenance", "rows"}`` file at ``path``): the
    intro, the ``summary`` of the rows if given, the provenance of every row's run, the
    table and each row's verdict, named by the fields ``named_by`` (one left out where a row
    lacks it)."""
    result = read_json(path)
    return "\n".join(
        [
            f"# {title}",
            "",
            intro,
            "",
            *([summary(result["rows"]), ""] if summary else []),
            "## Provenance",
            "",
            provenance_lines(_runs(result)),
            "",
            "## Rows",
            "",
            markdown_table([_shown(row) for row in result["rows"]], columns),
            "",
            *[f"- {_named(row, named_by)}: {row['verdict']}." for row in result["rows"]],
            "",
        ]
    )


def _named(row: Mapping[str, Any], fields: Sequence[str]) -> str:
    """A paired row's name: its ``fields`` that it has (and that are not ``all``)."""
    return ", ".join(str(row[f]) for f in fields if row.get(f) not in (None, "all"))


#: The columns every paired table shows after its own.
PAIRED_COLUMNS = {
    "pairs": "pairs",
    "ratio": "runtime ratio",
    "interval": "95% CI",
    "wins": "wins",
    "losses": "losses",
}


def learned_page(out: Path) -> str:
    """The learned rows against iterated local search at their own budget."""
    columns = {
        "placer": "placer",
        "tier": "tier",
        "family": "family",
        "regime": "regime",
        **PAIRED_COLUMNS,
        "unplaced": "unplaced",
        "placements": "placements",
        "floor": "floor",
        "best_known": "best known",
        "calls_per_case": "calls per case",
        "search_calls_per_case": "search's calls per case",
        "seconds_per_case": "seconds per case",
        "search_seconds_per_case": "search's seconds per case",
        "commit": "run's commit",
    }
    intro = (
        "Each learned row's runtimes over those of iterated local search given the same "
        "simulator calls per case, or the same seconds, every training call and second counted "
        "once (below 1: the learned placements run faster), paired by case (each case's "
        "seeds as their geometric mean). A case whose learned placement did not fit or failed "
        "in some seed is no pair but a loss, where the search's fit; unplaced counts those "
        "placements, of all the row's placements over its cases and seeds. The search's "
        "budget starts after best_of's "
        "construction, so it can spend more than the row it is matched to: both columns show "
        "what each side spent. The floor is the lower bound over the search's runtime "
        "(geometric mean over the paired cases): no placer's ratio goes below it. The best "
        "known is the same mean of the fastest runtime any record of the case reached (any "
        "placer, budget or seed): a ratio below it needs a placement nobody has found yet. "
        "Generated from `benchmarks/results/placebench-v1/learned/versus.json` (`python "
        "benchmarks/bench_learned.py` writes it)."
    )
    path = PLACEBENCH / "learned" / "versus.json"
    named_by = ("tier", "family", "regime")
    return paired_page(
        "Learned placers against search", intro, path, columns, named_by, learned_at_a_glance
    )


def learned_at_a_glance(rows: Sequence[Mapping[str, Any]]) -> str:
    """Each learned placer's ratio to the search per tier, one table per regime
    (:func:`placerl.bench.versus.coverage`): where it ran, and where it did not yet."""
    from placerl.bench.suite import load_suite
    from placerl.bench.versus import coverage_sections

    families = load_suite(PLACEBENCH.name).families("test")
    columns = {"placer": "placer", **{tier: tier for tier in families}}
    lines = [
        "## At a glance",
        "",
        "Each placer's runtime ratio to the search per tier of the test split: over the "
        "tier's cases with its 95% interval, or family by family where it has no row over "
        "the whole tier; a cell names the placements that did not fit or failed, which its "
        "ratio leaves out of the pairs.",
    ]
    shorts = [short_spec(placer) for placer in {row["placer"] for row in rows}]

    def render(table: list[dict[str, str]]) -> str:
        named = [row | {"placer": f"`{_distinct_short(row['placer'], shorts)}`"} for row in table]
        return markdown_table(named, columns)

    return "\n".join([*lines, "", coverage_sections(rows, families, render)])


def ablation_page(out: Path) -> str:
    """The faithful presets' ablation ladders."""
    columns = {
        "preset": "preset",
        "step": "step",
        "versus": "versus",
        **PAIRED_COLUMNS,
        "p_value": "p",
        "kept": "kept weights",
        "commit": "run's commit",
    }
    intro = (
        "Each faithful preset (the paper's recipe as published) climbs to placerl's tuned "
        "recipe one choice at a time; each step's runtimes over the step below it, paired by "
        "case and seed (below 1: the step's placements run faster). Kept weights: the env "
        "step of the weights each of the step's trainings kept, of its steps (0: those before "
        "the first update, the warm start's clone where the step clones). Generated from "
        "`benchmarks/results/ablation/ablation.json` (`python benchmarks/bench_ablation.py` "
        "writes it)."
    )
    path = RESULTS / "ablation" / "ablation.json"
    return paired_page(
        "Faithful presets and what each choice buys", intro, path, columns, ("preset", "step")
    )


#: The scale page's per-placement columns (``hierarchical_scale.json``), with their headings.
SCALE_COLUMNS = {
    "seed": "seed",
    "case": "case",
    "nodes": "nodes",
    "devices": "devices",
    "place_s": "seconds to place",
    "heft_place_s": "HEFT's seconds",
    "vs_heft": "runtime over HEFT's",
    "score": "score",
    "gap": "gap to the lower bound",
    "heft_gap": "HEFT's gap",
    "feasible": "fits",
    "mem_share": "memory share",
    "train_calls": "training calls",
    "train_s": "training seconds",
}


def scale_page(out: Path) -> str:
    """The hierarchical recipe on the scale tier: time to place, runtime against HEFT and the
    lower bound, per case and seed, and the tier's leaderboard (``hierarchical_scale.json``)."""
    result = read_json(RESULTS / "hierarchical_scale.json")
    rows = result["rows"]
    fits = sum(bool(row["feasible"]) for row in rows)
    return "\n".join(
        [
            "# The hierarchical recipe at scale",
            "",
            "Mirhoseini et al.'s grouper-placer, the recipe meant for large graphs, trained on "
            "the layered family's 80-node graphs on each case's cluster and placing the scale "
            "tier's 10k to 100k-node graphs zero-shot (greedy). Per placement: the seconds to "
            "place (HEFT's timed in the same run), the runtime over HEFT's, PlaceBench's score "
            "(the best constructive placer's runtime over this one), the gap to the lower "
            "bound (HEFT's beside it), and the graph's resident bytes over the cluster's "
            f"memory. {fits} of {len(rows)} placements fit the devices' memory. Generated "
            "from `benchmarks/results/hierarchical_scale.json` (`python "
            "benchmarks/bench_hierarchical_scale.py` writes it).",
            "",
            "## Provenance",
            "",
            # the summary's run, and the run that placed the records it reads back
            provenance_lines(
                [result["provenance"], *record_provenances(PLACEBENCH / "recipe_hierarchical")]
            ),
            "",
            "## Placements",
            "",
            markdown_table(rows, SCALE_COLUMNS),
            "",
            "## The tier's leaderboard",
            "",
            "The recipe's row (its seconds include its trainings) beside the tier's "
            "committed classic rows, as the summary's run read them.",
            "",
            markdown_table(result["leaderboard"], BOARD_COLUMNS),
            "",
        ]
    )


#: The performance page's sections: the result file, its heading and what it measures.
PERFORMANCE = (
    (
        "bench_sim.json",
        "Simulator",
        "Simulator speed: `evaluate` (a prepared cost model), `simulate` (one-shot) and the "
        "pure-Python reference on the same random placements of layered graphs, best of repeated "
        "rounds (`python benchmarks/bench_sim.py`).",
    ),
    (
        "bench_env.json",
        "Environments",
        "Env steps per second of each env mode and objective, with a random policy "
        "(`python benchmarks/bench_env.py`).",
    ),
    (
        "training_speed.json",
        "Training",
        "Env steps per second of MaskablePPO training, updates included, per extractor and "
        "graph size, with the envs in process and in subprocesses, the share of time in PPO "
        "updates, and the raw env's steps per second in the same run "
        "(`python benchmarks/bench_training_speed.py`).",
    ),
    (
        "sampling.json",
        "Sampled episodes",
        "`search=sample`'s episodes side by side in copies of the env (one batched forward pass "
        "per step) against one after another, for a GNN policy "
        "(`python benchmarks/bench_sampling.py`).",
    ),
    (
        "bench_scale.json",
        "Large graphs",
        "Seconds to draw, load and place graphs of 10k to 100k nodes, and the placements' "
        "runtimes (`python benchmarks/bench_scale.py`).",
    ),
)


def performance_page(out: Path) -> str:
    """The simulator's, the envs' and the placers' speed, one table per benchmark."""
    parts = [
        "# Performance",
        "",
        "Speed figures of placerl's hot paths. Each table is a benchmark's result file, "
        "with the commit, date and machine that made it; machines are shared and differ "
        "by up to 3x between runs, so compare rows of one table, not tables.",
        "",
    ]
    for name, heading, what in PERFORMANCE:
        result = read_json(RESULTS / name)
        rows = result["rows"]
        columns = {key: key for key in rows[0]} if rows else {}
        parts += [
            f"## {heading}",
            "",
            what,
            "",
            provenance_lines([result["provenance"]]),
            "",
            markdown_table(rows, columns),
            "",
        ]
    return "\n".join(parts)


#: The columns of the shipped policies' table, read from each card, with their headings.
CARD_COLUMNS = {
    "name": "policy",
    "family": "family",
    "label": "recipe",
    "nodes": "largest test graph (nodes)",
    "cases": "test cases",
    "vs_constructive": "runtime over the best constructive [95% CI]",
    "place_s": "seconds to place (median)",
    "training_calls": "training calls",
    "training_s": "training seconds",
}
#: The columns of ``pretrained_sizes.json`` the page shows.
SIZES_COLUMNS = {
    "policy": "policy",
    "trained_nodes": "trained on (nodes)",
    "nodes": "placed (nodes)",
    "graphs": "graphs",
    "unpaired": "unpaired",
    "vs_constructive": "runtime over the best constructive",
    "interval": "95% CI",
    "wins": "wins",
    "losses": "losses",
    "calls_median": "simulations per placement (median)",
    "place_s_median": "seconds to place (median)",
    "place_s_max": "(max)",
}


def pretrained_page(out: Path) -> str:
    """The policies that ship with the package: each card's row, and the policies on graphs
    of other sizes than they trained on (``benchmarks/bench_pretrained_sizes.py``)."""
    from placerl.agents.pretrained import load_card, shipped

    cards = [load_card(name) for name in shipped()]
    sizes = read_json(RESULTS / "pretrained_sizes.json")
    return "\n".join(
        [
            "# Shipped policies",
            "",
            "The trained policies in `placerl/data/pretrained`, placed zero-shot with "
            '`place("policy", graph, cluster, pretrained=name)`, greedy. Each runtime is '
            "paired with the best constructive placer's (HEFT, m-ETF, m-SCT) on the same "
            "graph: the ratio is their geometric mean (below 1: the policy's placements run "
            "faster). Each policy refines `best_of`'s placement (for the cell families, the "
            "best constructive placement itself) and keeps only the moves that make it faster, "
            "each move it tries one simulation: it never ends slower than its start, so the "
            "ratio is what its passes gained. The policies were cloned from a one-step oracle "
            "(`total_steps=0`), not trained by RL. Generated from the cards beside the "
            "policies (`python benchmarks/train_pretrained.py` writes them) and from "
            "`benchmarks/results/pretrained_sizes.json`.",
            "",
            "## Provenance",
            "",
            provenance_lines([card["provenance"] for card in cards] + [sizes["provenance"]]),
            "",
            "## On their family's test graphs",
            "",
            markdown_table([_card_row(card) for card in cards], CARD_COLUMNS),
            "",
            "## On graphs of other sizes",
            "",
            "Each family's test seeds drawn at other node counts than the policy trained on "
            "(`unpaired`: graphs where a placement does not fit), seconds per placement once "
            "the file is loaded "
            f"(`{sizes['provenance'].get('command', 'bench_pretrained_sizes.py')}`).",
            "",
            markdown_table([_shown(row) for row in sizes["rows"]], SIZES_COLUMNS),
            "",
        ]
    )


def _card_row(card: Mapping[str, Any]) -> dict[str, Any]:
    """A shipped policy's row: its card's leaderboard figures on its family's test cases."""
    board, training = card["leaderboard"], card["training"]
    low, high = 1 / board["ci_high"], 1 / board["ci_low"]  # the card's score is its inverse
    return {
        "name": card["name"],
        "family": card["family"],
        "label": f"`{card['label']}`",
        "nodes": card["place_s"]["max_nodes"],
        "cases": board["cases"],
        "vs_constructive": f"{board['vs_constructive']:.3f} [{low:.3f}, {high:.3f}]",
        "place_s": card["place_s"]["median"],
        "training_calls": training["simulator_calls"],
        "training_s": round(training["wall_s"]),
    }


#: The order study's arms a page shows (``results/<arm>/`` of ``placerl-report``), each with
#: what it asks.
STUDY_ARMS = {
    "refine": "The study's setting: Placeto's refine env, each episode from the best placement "
    "so far, the GNN and the LSTM; each order's best placement found over topo's.",
    "construct": "The nodes placed one by one in the order from an empty placement (GNN); each "
    "order's best placement found over topo's.",
    "learned": "DOPPLER's dual env: the policy picks the next node among the ready ones, so the "
    "order is learned (GNN); the analyses below face it with the fixed orders.",
}
#: The columns of an arm's paired table (``orders.csv``).
STUDY_COLUMNS = {
    "group": "family",
    "agent": "agent",
    "order": "order",
    "pairs": "pairs",
    "ratio": "runtime over topo's",
    "interval": "95% CI",
    "wins": "wins",
    "losses": "losses",
    "p_value": "p",
}


def order_study_page(out: Path) -> str:
    """The traversal-order study: per arm, its runs' provenance, the orders against topo and
    the plots; then ``analyze.py``'s analyses. An arm whose report records no provenance is
    named with the command that regenerates it, not shown."""
    results = STUDY / "results"
    parts = [
        "# The traversal-order study",
        "",
        "Which graph traversal order should an RL device placer use, and by how much does it "
        "matter? Wang et al. 2022 asked it with Placeto's code; placerl asks it again with "
        "intervals and paired tests. The protocol (graphs, seeds, budgets, and where placerl "
        "differs from the paper) is `experiments/traversal_order_study/README.md`; "
        "`python experiments/traversal_order_study/run.py` regenerates every table and plot "
        "below (one Hydra multirun per arm, `placerl-report --metric best`, then `analyze.py`). "
        "Ratios: the geometric mean over graphs and seeds of an order's runtime over topo's on "
        "the same graph and seed (below 1: faster), with a bootstrap 95% interval; the report "
        "states a difference when the interval excludes 1 and the Wilcoxon signed-rank test "
        "gives p < 0.05.",
        "",
    ]
    missing = []
    for arm, what in STUDY_ARMS.items():
        folder = results / arm
        if not (folder / "provenance.json").is_file():
            missing.append(arm)
            continue
        parts += _study_arm(arm, what, folder, out)
    analysis = results / "analysis.md"
    if not missing and analysis.is_file():
        parts += [_demoted(analysis.read_text()), ""]
    parts += [
        "The zoo and msr arms (`run.py --arms zoo,msr`) and the `improve` recipe per order "
        "(`improve_orders.py`) are not on this page: their committed results predate "
        "provenance (archived in `benchmarks/results/archive/order_study/`).",
        "",
    ]
    if missing:
        parts += [
            "## Not shown",
            "",
            f"The committed results of the {', '.join(missing)} arm(s) predate provenance, "
            "and so do the analyses that read them: `python experiments/traversal_order_study/"
            f"run.py --arms {','.join(missing)}` regenerates them.",
            "",
        ]
    return "\n".join(parts)


def _study_arm(arm: str, what: str, folder: Path, out: Path) -> list[str]:
    """One arm's section: what it asks, its provenance, its paired table and its plots."""
    made = read_json(folder / "provenance.json")["runs"]
    orders = _paired_rows(folder / "orders.csv")
    runs = sum(entry["runs"] for entry in made)
    first, last = min(e["first_date"] for e in made), max(e["last_date"] for e in made)
    lines = [
        f"## The {arm} arm",
        "",
        what,
        "",
        provenance_lines(_report_runs(made)),
        f"- runs: {runs}, the first finished at `{first}`, the last at `{last}`",
        "",
    ]
    if orders:
        lines += [markdown_table(orders, STUDY_COLUMNS), "", *_stated(orders), ""]
    for plot in ("order_ratios", "runtime_per_order", "learning_curves"):
        path = folder / f"{plot}.png"
        if path.is_file():
            lines += [f"![{plot.replace('_', ' ')}, {arm} arm]({_relative(path, out)})", ""]
    return lines


def _stated(orders: Sequence[Mapping[str, Any]]) -> list[str]:
    """The differences a report states (its verdicts that are not "no difference"), one
    bullet each."""
    stated = [
        f"- {row['group']}, {row['agent']}: {row['verdict']}."
        for row in orders
        if row.get("verdict") and not row["verdict"].startswith("no difference")
    ]
    return ["Differences the report states:", "", *stated] if stated else ["No difference stated."]


def _paired_rows(path: Path) -> list[dict[str, Any]]:
    """A report's ``orders.csv``: its ratios and p-values as numbers, its interval as text."""
    import csv

    with path.open(newline="") as rows:
        orders = list(csv.DictReader(rows))
    for row in orders:
        low, high, ratio, p = (
            float(row[key]) if row[key] else None
            for key in ("ratio_ci95_low", "ratio_ci95_high", "ratio", "p_value")
        )
        row.update(ratio=ratio, p_value=p)
        row["interval"] = f"[{low:.3f}, {high:.3f}]" if low is not None else ""
    return orders


def _report_runs(made: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A ``placerl-report`` provenance file's run groups as :func:`provenance_lines` reads
    them: one item per group's first and last date."""
    return [
        {
            "git_revision": e["commit"],
            "date": date,
            "machine": e["machine"],
            "command": e["command"],
        }
        for e in made
        for date in (e["first_date"], e["last_date"])
    ]


def _demoted(markdown: str) -> str:
    """``markdown`` with each heading one level deeper (a page has one title)."""
    return "\n".join(f"#{line}" if line.startswith("#") else line for line in markdown.splitlines())


def datasets_page(out: Path) -> str:
    """The bundled msr graphs (read from the shipped files) and the zoo's models at a glance
    (``benchmarks/zoo_table.py``'s result files)."""
    parts = [
        "# Datasets at a glance",
        "",
        "## The msr graphs",
        "",
        "The seven graphs of Tarnawski et al.'s benchmark that ship with placerl, read from "
        "`placerl/data/msr/` when the docs are built (times in the benchmark's own unit, so "
        "its published optima carry over).",
        "",
        markdown_table(msr := _msr_rows(), {key: key for key in msr[0]}),
        "",
    ]
    for name, what in (("zoo_table", "forward"), ("zoo_table_training", "training")):
        path = RESULTS / f"{name}.json"
        if what == "training" and not path.is_file():
            continue
        result = read_json(path)
        rows = result["rows"]
        parts += [
            f"## The zoo's {what} graphs",
            "",
            f"Each model's {what} op graph at its default batch: nodes, edges, the sum of its "
            "ops' roofline costs on the reference V100, parameters against the published "
            "count, and the seconds of its first import and of a load from the cache "
            f"(`python benchmarks/zoo_table.py{' --training' if what == 'training' else ''}`).",
            "",
            provenance_lines([result["provenance"]]),
            "",
            markdown_table(rows, {key: key for key in rows[0]}),
            "",
        ]
    return "\n".join(parts)


def _msr_rows() -> list[dict[str, Any]]:
    """One row per bundled msr graph: its size, its machine and its total accelerator time."""
    from placerl.errors import GraphError
    from placerl.msr_format import msr_names, read_msr

    rows = []
    for name in msr_names():
        _, data = read_msr(name, GraphError)
        rows.append(
            {
                "name": f"`{name}`",
                "nodes": len(data["nodes"]),
                "edges": len(data["edges"]),
                "accelerators": data["maxFPGAs"],
                "CPUs": data["maxCPUs"],
                "sum of accelerator latencies": round(
                    sum(node.get("fpgaLatency", 0.0) for node in data["nodes"]), 2
                ),
            }
        )
    return rows


def readme_excerpt() -> str:
    """The README's leaderboard excerpt: per tier of the test split, the best classic row
    (no training) and the best learned one, by score, among the rows over the most cases of
    the tier (a row over one family's cases never stands for the tier), with where the
    figures come from."""
    board = read_json(PLACEBENCH / "LEADERBOARD.json")
    rows = []
    for tier in sorted({row["tier"] for row in board["rows"]}):
        tested = [r for r in board["rows"] if r["tier"] == tier and r["split"] == "test"]
        whole = max((_distinct_cases(r) for r in tested), default=0)
        tested = [r for r in tested if _distinct_cases(r) == whole]
        for learned in (False, True):
            kind = [r for r in tested if _is_learned(r["placer"]) == learned]
            if kind:
                rows.append(max(kind, key=lambda r: r.get("score_value") or 0))
    rows = [row | {"placer": f"`{short_spec(row['placer'])}`"} | _versus(row) for row in rows]
    return "\n".join(
        [
            markdown_table(rows, EXCERPT_COLUMNS),
            "",
            "Generated from `benchmarks/results/placebench-v1/LEADERBOARD.json`; "
            "score: the geometric mean over the cases of the best constructive "
            "placer's runtime over the row's (above 1: faster). A recipe's long overrides are "
            "shortened to `[…]`, limits meant as none to `∞`: the [leaderboard]"
            "(benchmarks/results/placebench-v1/LEADERBOARD.md) has them whole.",
        ]
    )


def _distinct_short(spec: str, shorts: Sequence[str]) -> str:
    """``spec`` shortened (:func:`short_spec`), or whole where another of ``shorts`` reads
    the same."""
    short = short_spec(spec)
    return short if shorts.count(short) == 1 else spec


def _distinct_cases(row: Mapping[str, Any]) -> int:
    """The cases a leaderboard row scores, each once (its ``cases`` count every seed)."""
    return row["cases"] // max(1, row.get("seeds") or 1)


#: A recipe's bracketed overrides longer than this are shortened in the README's excerpt.
SHORT_OVERRIDES = 64


def short_spec(spec: str) -> str:
    """``spec`` as the README's excerpt shows it: a recipe's bracketed overrides longer than
    :data:`SHORT_OVERRIDES` characters as ``[…]``, and limits of a million or more (set to
    mean "no limit") as ``∞``."""

    def overrides(match: re.Match[str]) -> str:
        return match[0] if len(match[0]) - 2 <= SHORT_OVERRIDES else "[…]"

    return re.sub(r"=\d{7,}\b", "=∞", re.sub(r"\[[^\]]*\]", overrides, spec))


def _versus(row: Mapping[str, Any]) -> dict[str, str]:
    """A row's comparison with the strongest classic placer, its reference spec shortened."""
    if not row.get("reference") or row.get("ratio") is None:
        return {"vs_reference": row.get("vs_reference") or ""}
    interval = (
        f" [{row['ratio_low']:.3f}, {row['ratio_high']:.3f}]"
        if row.get("ratio_low") is not None
        else ""
    )
    return {"vs_reference": f"{row['ratio']:.3f}x{interval} vs `{short_spec(row['reference'])}`"}


def _is_learned(placer: str) -> bool:
    return placer.startswith(("recipe:", "policy"))


def write_readme_excerpt(readme: Path) -> bool:
    """Rewrite ``readme``'s leaderboard excerpt between :data:`EXCERPT_MARKERS`; whether it
    changed.

    Raises:
        ValueError: The README lacks the markers.
    """
    text = readme.read_text()
    start, end = EXCERPT_MARKERS
    if start not in text or end not in text:
        raise ValueError(f"{readme} lacks the markers {start} ... {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    updated = f"{head}{start}\n{readme_excerpt()}\n{end}{tail}"
    _write(readme, updated)
    return updated != text


def _shown(row: Mapping[str, Any]) -> dict[str, Any]:
    """A paired row as a page shows it: its interval, and the commit of the run that made it."""
    run = row.get("run") or {}
    return {
        **row,
        "interval": f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]",
        "commit": f"`{str(run.get('commit') or 'not recorded')[:12]}`",
    }


def _runs(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The provenance of a pooled result file's rows: each row's run (pooled files keep the
    run of every row, :func:`benchmarks._common.merged_rows`), with the file's machine; the
    file's own provenance for a row without one."""
    own = result["provenance"]
    return [
        {
            "git_revision": run.get("commit"),
            "date": run.get("date"),
            "command": run.get("command"),
            "machine": own.get("machine"),
        }
        if (run := row.get("run"))
        else own
        for row in result["rows"]
    ]


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


#: Every generated page: its file name under ``docs/_generated`` and what writes it.
PAGES: dict[str, Callable[[Path], str]] = {
    "leaderboard": leaderboard_page,
    "learned": learned_page,
    "scale": scale_page,
    "ablation": ablation_page,
    "performance": performance_page,
    "order_study": order_study_page,
    "datasets": datasets_page,
    "pretrained": pretrained_page,
}


if __name__ == "__main__":
    import sys

    for written in generate_pages(Path(__file__).resolve().parent):
        print(written)
    if "--readme" in sys.argv[1:] and write_readme_excerpt(ROOT / "README.md"):
        print(ROOT / "README.md")
