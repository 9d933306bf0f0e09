"""The study's analyses beyond ``placerl-report``: the learned order against the fixed ones, and
one graph-feature explanation of which order wins, tested on a family it was not fitted on.

    python experiments/traversal_order_study/analyze.py    # after run.py; writes results/

- **Learned order.** Each fixed order of the ``construct`` arm against the ``learned`` arm
  (DOPPLER's dual env, same graphs, seeds and 50 episodes), paired on graph and seed, with the
  report's statistics (:func:`placerl.comparison.compare_pairs`).
- **Which order wins, by graph features.** Per graph: depth (nodes on the longest path), width
  (nodes over depth), depth over width, mean fan-out and the share of skip edges (edges that
  jump more than one level). The rule "order A when feature f is above t, else order B" is
  fitted on two families' graphs (least mean regret over the per-graph best order) and scored
  on the third family's (leave one family out), against always using topo and always using the
  order that won most often on the fitting graphs. With the zoo arm's runs, the rule fitted on
  all three families is also scored on the zoo models: real networks of another kind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from placerl.comparison import compare_pairs
from placerl.graph import load_graph
from placerl.report import load_runs, select_metric

HERE = Path(__file__).resolve().parent
FEATURES = ("depth", "width", "depth_over_width", "fan_out", "skip_share")


def graph_features(spec: str) -> dict[str, float]:
    """The structural features of the graph ``spec`` names."""
    g = load_graph(spec).to_networkx()
    level: dict[Any, int] = {}
    for node in nx.topological_sort(g):
        level[node] = 1 + max((level[p] for p in g.predecessors(node)), default=0)
    depth = max(level.values())
    width = g.number_of_nodes() / depth
    skips = sum(level[v] - level[u] > 1 for u, v in g.edges)
    return {
        "depth": float(depth),
        "width": width,
        "depth_over_width": depth / width,
        "fan_out": g.number_of_edges() / g.number_of_nodes(),
        "skip_share": skips / max(1, g.number_of_edges()),
    }


def learned_against_fixed(construct: Any, learned: Any) -> list[dict[str, Any]]:
    """Per graph group: the learned order's runtime over each fixed order's, paired."""
    rows = []
    mine = learned.set_index(["graph", "seed"])["runtime_ms"]
    for (group, order), runs in construct.groupby(["group", "order"], sort=True):
        theirs = runs.set_index(["graph", "seed"])["runtime_ms"]
        both = theirs.to_frame("fixed").join(mine.rename("learned"), how="inner")
        result = compare_pairs(both["learned"].to_numpy(), both["fixed"].to_numpy())
        rows.append(
            {
                "group": group,
                "fixed order": order,
                "pairs": result.pairs,
                "learned / fixed": round(result.ratio, 3),
                "ci95": f"[{result.ci_low:.3f}, {result.ci_high:.3f}]",
                "learned faster": f"{result.wins}/{result.pairs}",
                "verdict": result.verdict("learned", order),
            }
        )
    return rows


#: Simulator evaluations iterated local search gets in ``learned_against_search`` (half a
#: second at 100 nodes; counted, not timed, so that the table regenerates exactly).
SEARCH_EVALUATIONS = 10_000


def learned_against_search(learned: Any) -> list[dict[str, Any]]:
    """Per graph: the learned order's best placement (geometric mean over seeds) against the
    classic searches from ``best_of``'s placement, all over ``best_of``: ``local_search`` given
    as many evaluations as the run had episodes (it also spent greedy checks, so this favours
    the policy), ``local_search`` to its optimum, and iterated local search given
    :data:`SEARCH_EVALUATIONS`."""
    from placerl.baselines import solve

    specs, rows = _graph_specs(learned), []
    for graph, runs in learned.groupby("graph", sort=True):
        spec, cluster, objective = specs[graph], runs["cluster"].iloc[0], runs["objective"].iloc[0]
        best_of = solve("best_of", spec, cluster, objective)
        episodes = int(runs["steps"].iloc[0] // (2 * load_graph(spec).num_nodes))  # 2 steps a node
        case = (spec, cluster, objective, best_of.placement)
        budgeted = np.mean(
            [np.log(_climb(*case, max_evaluations=episodes, seed=k).runtime) for k in range(5)]
        )
        optimum = _climb(*case)
        iterated = _climb(*case, max_evaluations=SEARCH_EVALUATIONS, restarts=10**6)
        learned_s = np.exp(np.log(runs["runtime_ms"] / 1e3).mean())
        rows.append(
            {
                "graph": graph,
                "episodes": episodes,
                "learned": round(learned_s / best_of.runtime, 3),
                "local_search, as many evaluations": round(np.exp(budgeted) / best_of.runtime, 3),
                "local_search to its optimum": round(optimum.runtime / best_of.runtime, 3),
                "its evaluations": optimum.info["evaluations"],
                f"iterated local search, {SEARCH_EVALUATIONS:,} evaluations": round(
                    iterated.runtime / best_of.runtime, 3
                ),
            }
        )
    return rows


def _climb(spec: str, cluster: str, objective: str, start: Any, **options: Any) -> Any:
    """``local_search`` from ``start`` with no limit on rounds or seconds (``options``: its
    evaluations, seed, restarts)."""
    from placerl.baselines import solve

    return solve(
        "local_search",
        spec,
        cluster,
        objective,
        init=start,
        max_rounds=10**6,
        time_limit=1e6,
        **options,
    )


def against_best_placer(runs: Any) -> Any:
    """Per order (rows) and graph group x agent (columns): the geometric mean over graphs and
    seeds of the runtime over the best classic placer's (``best_of``: below 1 beats it)."""
    logs = runs.assign(
        log=np.log(runs["runtime_ms"] / runs["best_baseline_ms"]),
        cell=runs["group"] + ", " + runs["agent"].str.replace("maskable_ppo_", ""),
    )
    return np.exp(logs.pivot_table(index="order", columns="cell", values="log", aggfunc="mean"))


def order_runtimes(runs: Any) -> Any:
    """Geometric-mean runtime over seeds per graph (rows) and order (columns), one agent.

    Raises:
        ValueError: A graph lacks runs of an order (a failed job): the rules compare every
            order on every graph.
    """
    logs = runs.assign(log=np.log(runs["runtime_ms"]))
    table = logs.pivot_table(index="graph", columns="order", values="log", aggfunc="mean")
    missing = [
        f"{graph} ({', '.join(table.columns[row.isna()])})"
        for graph, row in table.iterrows()
        if row.isna().any()
    ]
    if missing:
        raise ValueError(
            f"no runs of some orders on {'; '.join(missing)}: re-run the arm "
            "(run.py skips the finished jobs) before the analyses"
        )
    return np.exp(table)


def most_wins(table: Any) -> str:
    """The order best on most graphs of ``table``, each order tied for a graph's best winning
    it (among orders with as many wins, the first by name)."""
    wins = table.eq(table.min(axis=1), axis=0).sum()
    return str(wins[wins == wins.max()].index.sort_values()[0])


def fit_rule(table: Any, features: Any) -> tuple[str, float, str, str]:
    """The (feature, threshold, order above, order at or below) of least mean regret."""
    regret = table.div(table.min(axis=1), axis=0)  # each order's runtime over the graph's best
    best, best_cost = None, np.inf
    for feature in FEATURES:
        values = features.loc[table.index, feature]
        for threshold in sorted(set(values))[:-1]:
            above = values > threshold
            high = regret[above].mean().idxmin()
            low = regret[~above].mean().idxmin()
            cost = (regret.loc[above, high].sum() + regret.loc[~above, low].sum()) / len(table)
            if cost < best_cost - 1e-12:
                best, best_cost = (feature, float(threshold), high, low), cost
    if best is None:  # every feature constant on the fitting graphs: one order for all
        order = regret.mean().idxmin()
        return FEATURES[0], float("inf"), order, order
    return best


def rule_on_held_out(runs: Any, features: Any) -> list[dict[str, Any]]:
    """Leave one family out: fit on the others' graphs, score on the held-out family's."""
    rows = []
    for agent, agent_runs in runs.groupby("agent", sort=True):
        table = order_runtimes(agent_runs)
        family = agent_runs.drop_duplicates("graph").set_index("graph")["group"]
        for held_out in sorted(set(family)):
            fit = table[family.loc[table.index] != held_out]
            test = table[family.loc[table.index] == held_out]
            rows.append(
                {
                    "agent": agent,
                    "held-out family": held_out,
                    "graphs": len(test),
                    **scored_rule(fit, test, features),
                }
            )
    return rows


def rule_on_zoo(families: Any, zoo: Any, features: Any) -> list[dict[str, Any]]:
    """Fit on every graph of the families (the refine arm), score on the zoo models (the zoo
    arm: real networks, which the rule never saw), per agent both arms ran."""
    rows = []
    for agent in sorted(set(families["agent"]) & set(zoo["agent"])):
        fit = order_runtimes(families[families["agent"] == agent])
        test = order_runtimes(zoo[zoo["agent"] == agent])
        rows.append({"agent": agent, "graphs": len(test), **scored_rule(fit, test, features)})
    return rows


def scored_rule(fit: Any, test: Any, features: Any) -> dict[str, Any]:
    """The rule fitted on the graphs of ``fit`` (graphs x orders, runtimes) and its mean
    runtime over each ``test`` graph's best order, beside always topo and always the order
    that won most often on ``fit``."""
    feature, threshold, high, low = fit_rule(fit, features)
    chosen = np.where(features.loc[test.index, feature] > threshold, high, low)
    best = test.min(axis=1)
    majority = most_wins(fit)
    mean = lambda ratios: round(float(np.mean(ratios)), 3)  # noqa: E731
    return {
        "rule": f"{high} if {feature} > {threshold:.3g} else {low}",
        "rule / best order": mean(
            [test.loc[g, o] / best[g] for g, o in zip(test.index, chosen, strict=True)]
        ),
        "topo / best order": mean(test["topo"] / best),
        "most wins on fit": majority,
        "it / best order": mean(test[majority] / best),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    import pandas as pd

    return pd.DataFrame(rows).to_markdown(index=False) if rows else "(no runs)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=HERE / "runs")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    import pandas as pd

    refine = arm_runs(args.runs, args.out, "refine")
    features = _feature_table(_graph_specs(refine))
    text = [
        "# The order study's analyses (analyze.py)",
        "",
        "## Runtime over the best classic placer, per order (refine arm)",
        "",
        "Geometric mean over the family's graphs and the seeds of the best placement "
        "found over `best_of`'s (the best of single device, HEFT, m-ETF, m-SCT, m-TOPO "
        "and Tarnawski's DP split; below 1 beats it).",
        "",
        against_best_placer(refine).round(3).to_markdown(),
        "",
        "## Graph features",
        "",
        features.round(3).to_markdown(),
        "",
        "## Which order wins, by a graph feature (leave one family out)",
        "",
        "Fitted on two families' graphs, scored on the third's; ratios are the mean over "
        "the held-out graphs of runtime (geometric mean over seeds) over the graph's best "
        "order's (1: the best order on every graph).",
        "",
        markdown(rule_on_held_out(refine, features)),
        "",
    ]
    zoo = arm_runs(args.runs, args.out, "zoo", required=False)
    if zoo is not None:
        zoo_features = _feature_table(_graph_specs(zoo))
        text += [
            "## The rule on the zoo models (fitted on the three families)",
            "",
            "Fitted on every graph of the three families, scored on the zoo arm's models "
            f"({', '.join(sorted(set(zoo['graph'])))}; the refine setting, "
            f"{zoo['seed'].nunique()} seeds): networks of another kind, with their own "
            "depths and widths.",
            "",
            zoo_features.round(3).to_markdown(),
            "",
            markdown(rule_on_zoo(refine, zoo, pd.concat([features, zoo_features]))),
            "",
        ]
    construct = arm_runs(args.runs, args.out, "construct", required=False)
    learned = arm_runs(args.runs, args.out, "learned", required=False)
    if construct is not None and learned is not None:
        both = pd.concat([construct, learned.assign(order="learned")])
        text += [
            "## The learned order (dual env) against the fixed orders (construct)",
            "",
            markdown(learned_against_fixed(construct, learned)),
            "",
            "Runtime over `best_of`, construct arm and the learned order:",
            "",
            against_best_placer(both).round(3).to_markdown(),
            "",
            "## The learned order against search from `best_of`",
            "",
            "Over `best_of`'s runtime (below 1: faster); the learned order's best placement "
            "in its 50 episodes, geometric mean over seeds; `local_search` from `best_of`'s "
            "placement given as many evaluations as the run had episodes (the geometric "
            "mean of 5 visiting orders), run to its optimum, and iterated local search.",
            "",
            markdown(learned_against_search(learned)),
            "",
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "analysis.md"
    path.write_text("\n".join(text))
    print(path.read_text())
    return 0


def arm_runs(runs: Path, results: Path, arm: str, *, required: bool = True) -> Any:
    """One arm's runs at the ``best`` metric: from its run folder (``runs/<arm>``) where it is
    there, else from the table ``placerl-report`` committed (``results/<arm>/runs.csv``), so
    that the analyses regenerate from the committed results after re-running one arm alone.

    Args:
        runs: The study's run folders (``run.py``'s ``runs/``).
        results: The study's results (``run.py``'s ``results/``).
        arm: An arm of ``run.py`` (``refine``, ``construct``, ``learned``, ...).
        required: Raise when the arm has neither; else return ``None``.

    Returns:
        One row per run, as ``placerl.report.select_metric`` gives them.

    Raises:
        FileNotFoundError: A ``required`` arm has neither.
    """
    import pandas as pd

    if (runs / arm).is_dir():
        return select_metric(load_runs([runs / arm]), "best")
    if (results / arm / "runs.csv").is_file():
        return pd.read_csv(results / arm / "runs.csv")
    if required:
        table = results / arm / "runs.csv"
        raise FileNotFoundError(
            f"the {arm} arm has neither {runs / arm} nor {table}: run run.py --arms {arm}"
        )
    return None


def _graph_specs(runs: Any) -> dict[str, str]:
    """Graph name -> spec: ``graph.spec`` of each job's config, or of its Hydra job folder's
    name where the run folder is gone (runs read from ``runs.csv``)."""
    import json
    import re

    specs = {}
    for run, graph in runs.drop_duplicates("graph")[["run", "graph"]].itertuples(index=False):
        result = Path(run) / "result.json"
        if result.is_file():
            specs[graph] = json.loads(result.read_text())["config"]["graph"]["spec"]
        elif found := re.search(r"graph\.spec='([^']+)'", str(run)):
            specs[graph] = found.group(1)
        else:
            raise ValueError(
                f"run {run} of graph {graph}: no result.json there and no "
                "graph.spec='...' in its Hydra job folder's name"
            )
    return specs


def _feature_table(specs: dict[str, str]) -> Any:
    import pandas as pd

    return pd.DataFrame({name: graph_features(spec) for name, spec in specs.items()}).T


if __name__ == "__main__":
    sys.exit(main())
