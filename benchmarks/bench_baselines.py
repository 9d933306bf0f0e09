"""Every non-learned placer on msr, zoo and synthetic graphs, under both objectives.

For each (graph, cluster) case, objective and placer it records the simulated runtime (the step
time, or the max load under ``pipeline``), feasibility, the placer's optimality claim and lower
bound, and the solve time; and for the msr graphs, ``tarnawski_dp`` against the optima
published with the msr-fiddle benchmark. It prints the markdown tables (first a per-placer
summary: mean ratio to the best placer of each case, wins, solve times) and writes
``baselines.csv``, ``baselines.md`` and ``baselines.json`` under ``--out``.

    python benchmarks/bench_baselines.py --quick          # a few minutes on 2 cores
    python benchmarks/bench_baselines.py                  # adds the wide graphs and longer limits
    python benchmarks/bench_baselines.py --graphs gnmt_inference --placers tarnawski_dp,heft
    python benchmarks/bench_baselines.py --quick --suites zoo

Add a graph by appending a :class:`Case` to :data:`CASES`. The zoo cases import their models
once and cache them under ``$PLACERL_CACHE/zoo`` (default ``~/.cache/placerl/zoo``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import result_record, with_provenance

from placerl.baselines import PLACERS, SearchLimitWarning, solve
from placerl.cluster import Cluster, Device
from placerl.errors import PlaceRLError
from placerl.graph import CompGraph, load_graph

OBJECTIVES = ("step_time", "pipeline")
SUITES = ("msr", "zoo", "synthetic")

#: Optimal contiguous max-loads published with msr-fiddle/dnn-partitioning (see its README).
MSR_OPTIMA = {
    "bert24_inference": 17.78990625,
    "bert24_training": 41.7458125,
    "gnmt_inference": 32.910658203125,
    "resnet50_inference": 33.774666015625,
    "resnet50_training": 78.6318125,
    "bert_l-3_inference": 27.9185676799125,
    "bert_l-3_training": 65.30314912208605,
}


@dataclass(frozen=True)
class Case:
    """A graph on a cluster.

    Attributes:
        label: Row name (``--graphs`` selects by it).
        graph: A ``load_graph`` spec, or a function building the graph.
        cluster: Builds the cluster.
        quick: Included in ``--quick`` runs.
    """

    label: str
    graph: str | Callable[[], CompGraph]
    cluster: Callable[[], Cluster]
    quick: bool = True

    @property
    def suite(self) -> str:
        """``msr`` or ``zoo`` after the spec's scheme; anything else is ``synthetic``."""
        scheme = self.graph.split(":", 1)[0] if isinstance(self.graph, str) else ""
        return scheme if scheme in ("msr", "zoo") else "synthetic"

    def load(self) -> tuple[CompGraph, Cluster]:
        graph = load_graph(self.graph) if isinstance(self.graph, str) else self.graph()
        return graph, self.cluster()


def inception_v3_layers(seed: int = 0) -> CompGraph:
    """A stand-in for msr-fiddle's InceptionV3 layer graph: torchvision's InceptionV3 module
    layout with one node per conv, batch-norm and ReLU (313 nodes, 35,683 ideals; the original
    has about 36,600), msr-style seeded costs (accelerator; CPU 10x slower) and edge times."""
    rng = np.random.default_rng(seed)
    nodes: list[dict] = []
    edges: list[tuple[str, str, dict]] = []
    base = {"conv": (0.3, 1.5), "bn": (0.1, 0.4), "relu": (0.05, 0.3), "pool": (0.2, 0.6)}

    def op(name, kind, inputs, scale=1.0):
        low, high = base.get(kind, (0.0, 0.0))
        t = scale * rng.uniform(low, high) if kind in base else 0.0
        mem = rng.uniform(1e6, 6e7) if kind == "conv" else 1e6
        nodes.append(
            {
                "name": name,
                "op": kind,
                "cost": t,
                "mem_bytes": mem,
                "costs": {"accelerator": t, "cpu": 10 * t},
            }
        )
        edges.extend((src, name, {"time": 0.02}) for src in inputs)
        return name

    def conv(name, x, scale=1.0):
        return op(f"{name}.relu", "relu", [op(f"{name}.bn", "bn", [op(name, "conv", [x], scale)])])

    def convs(name, x, count):
        for i in range(count):
            x = conv(f"{name}.{i}", x)
        return x

    def pool_conv(name, x):
        return conv(f"{name}.conv", op(f"{name}.pool", "pool", [x]))

    def split(name, x):  # InceptionE: one input, a 1x3 and a 3x1 conv, concatenated
        return op(f"{name}.cat", "concat", [conv(f"{name}.a", x), conv(f"{name}.b", x)])

    x = op("input", "relu", [])
    for i, scale in enumerate((3, 2, 2)):
        x = conv(f"stem{i}", x, scale)
    x = convs("stem_b", op("stem_pool", "pool", [x]), 2)
    x = op("stem_pool2", "pool", [x])
    for m in range(3):  # InceptionA: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | pool-1x1
        b = [convs(f"A{m}.1", x, 1), convs(f"A{m}.5", x, 2), convs(f"A{m}.3", x, 3)]
        x = op(f"A{m}.cat", "concat", [*b, pool_conv(f"A{m}.p", x)])
    x = op("B.cat", "concat", [convs("B.3", x, 1), convs("B.3d", x, 3), op("B.p", "pool", [x])])
    for m in range(4):  # InceptionC: 1x1 | 1x1-1x7-7x1 | 5 convs | pool-1x1
        b = [convs(f"C{m}.1", x, 1), convs(f"C{m}.7", x, 3), convs(f"C{m}.7d", x, 5)]
        x = op(f"C{m}.cat", "concat", [*b, pool_conv(f"C{m}.p", x)])
    x = op("D.cat", "concat", [convs("D.3", x, 2), convs("D.7", x, 4), op("D.p", "pool", [x])])
    for m in range(2):  # InceptionE: 1x1 | 1x1-split | 1x1-3x3-split | pool-1x1
        b = [convs(f"E{m}.1", x, 1), split(f"E{m}.3", conv(f"E{m}.3", x))]
        b.append(split(f"E{m}.d", convs(f"E{m}.d", x, 2)))
        x = op(f"E{m}.cat", "concat", [*b, pool_conv(f"E{m}.p", x)])
    op("fc", "conv", [op("avgpool", "pool", [x])])
    return CompGraph(nodes, edges, name="inception_v3_layers")


def msr_like(accelerators: int, cpus: int, memory: float) -> Cluster:
    """k accelerators with ``memory`` bytes each and l CPUs, as ``Cluster.from_msr`` builds."""
    devices = [Device(f"acc:{i}", "accelerator", memory=memory) for i in range(accelerators)]
    devices += [Device(f"cpu:{i}", "cpu") for i in range(cpus)]
    return Cluster(tuple(devices), comm_model="ideal", name="msr_like")


def _msr_case(name: str) -> Case:
    return Case(name, f"msr:{name}", lambda: Cluster.from_msr(name))


def _gpus(preset: str, **kwargs) -> Callable[[], Cluster]:
    return lambda: Cluster.preset(preset, **kwargs)


#: Zoo models (V100 roofline costs, default batch) on the presets they are usually placed on:
#: InceptionV3 on Placeto's 4 K80s, the rest on 4 V100s over PCIe, GNMT on a host CPU + 2 GPUs.
#: ``max_nodes`` coarsens by module scope; the 20-node ResNet-50 is small enough for ``milp``.
ZOO_CASES: list[Case] = [
    Case("zoo_inception_v3_100", "zoo:inception_v3?max_nodes=100", _gpus("placeto", n_devices=4)),
    Case("zoo_resnet50", "zoo:resnet50", _gpus("gpu4_pcie")),
    Case("zoo_resnet50_20", "zoo:resnet50?max_nodes=20", _gpus("gpu4_pcie")),
    Case("zoo_bert", "zoo:transformer", _gpus("gpu4_pcie")),
    Case(
        "zoo_bert_training_100", "zoo:transformer?training=true&max_nodes=100", _gpus("gpu4_pcie")
    ),
    Case("zoo_gnmt", "zoo:gnmt", _gpus("cpu_gpu", n_gpus=2)),
    Case("zoo_inception_v3", "zoo:inception_v3", _gpus("placeto", n_devices=4), quick=False),
    Case("zoo_gnmt_training", "zoo:gnmt?training=true", _gpus("cpu_gpu", n_gpus=2), quick=False),
]

CASES: list[Case] = [
    *(_msr_case(name) for name in MSR_OPTIMA),
    *ZOO_CASES,
    Case(
        "fork_join_16",
        "synthetic:fork_join?n=16&seed=0",
        lambda: Cluster.preset("gpu4_pcie", n_devices=3),
    ),
    Case("cifar10", "synthetic:cifar10?seed=0", lambda: Cluster.preset("placeto", n_devices=4)),
    Case("layered_200", "synthetic:layered?n=200&seed=0", lambda: Cluster.preset("gpu4_pcie")),
    Case("nmt", "synthetic:nmt?seed=0", lambda: Cluster.preset("cpu_gpu", n_gpus=2)),
    Case("ptb", "synthetic:ptb?seed=0", lambda: Cluster.preset("gpu4_pcie"), quick=False),
    Case(
        "inception_v3_layers",
        inception_v3_layers,
        lambda: msr_like(6, 1, inception_v3_layers().arrays.mem_bytes.sum() / 3),
        quick=False,
    ),
]


def placer_options(name: str, quick: bool) -> dict:
    """Limits that keep a run short; the DP gets enough for the wide graph in full runs."""
    limits = {
        "tarnawski_dp": {"time_limit": 15.0 if quick else 120.0},
        "local_search": {"time_limit": 2.0 if quick else 10.0},
        "milp": {"time_limit": 10.0 if quick else 60.0, "max_nodes": 20},
    }
    return limits.get(name, {})


def run_one(case: Case, graph, cluster, objective: str, placer: str, quick: bool) -> dict:
    row = {
        "graph": case.label,
        "suite": case.suite,
        "cluster": cluster.name,
        "devices": describe_devices(cluster),
        "nodes": graph.num_nodes,
        "objective": objective,
        "placer": placer,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = solve(placer, graph, cluster, objective, **placer_options(placer, quick))
        except PlaceRLError as err:
            return {**row, "status": f"error: {err}"}
    gave_up = any(issubclass(w.category, SearchLimitWarning) for w in caught)
    return {
        **row,
        "runtime": result.runtime,
        "feasible": result.feasible,
        "optimal": result.optimal,
        "lower_bound": result.lower_bound,
        "solve_time": result.solve_time,
        "ideals": result.info.get("ideals"),
        "status": "gave up" if gave_up else ("ok" if result.feasible else "infeasible"),
    }


def describe_devices(cluster: Cluster) -> str:
    """The cluster in a few characters: ``placeto 4 gpu``, ``msr 6 acc + 1 cpu``."""
    kinds = dict.fromkeys(d.kind for d in cluster.devices)
    short = {"accelerator": "acc"}
    counts = [f"{sum(d.kind == k for d in cluster.devices)} {short.get(k, k)}" for k in kinds]
    return f"{cluster.name.split(':', 1)[0]} {' + '.join(counts)}"


def run(cases: list[Case], placers: list[str], objectives: list[str], quick: bool) -> list[dict]:
    rows = []
    for case in cases:
        graph, cluster = case.load()
        for objective in objectives:
            for placer in placers:
                row = run_one(case, graph, cluster, objective, placer, quick)
                print(_progress(row), file=sys.stderr, flush=True)
                rows.append(row)
    _add_ratios(rows)
    return rows


def _progress(row: dict) -> str:
    if "runtime" not in row:
        return f"{row['graph']:>20} {row['objective']:>9} {row['placer']:>14}  {row['status']}"
    return (
        f"{row['graph']:>20} {row['objective']:>9} {row['placer']:>14} "
        f"{row['runtime']:12.6g} {row['solve_time']:8.2f}s  {row['status']}"
    )


def _add_ratios(rows: list[dict]) -> None:
    """``ratio``: runtime over the best feasible runtime of the same graph and objective."""
    best: dict[tuple, float] = {}
    for r in rows:
        if r.get("feasible"):
            key = (r["graph"], r["objective"])
            best[key] = min(best.get(key, math.inf), r["runtime"])
    for r in rows:
        key = (r["graph"], r["objective"])
        if "runtime" in r and key in best and best[key] > 0:
            r["ratio"] = r["runtime"] / best[key]


# ------------------------------------------------------------------------------ output
LEGEND = (
    "`*` proven optimal, `~` stopped at its limit, `!` infeasible, "
    "`err` refused: too big, no placement"
)


def markdown(rows: list[dict], placers: list[str]) -> str:
    """Per objective: a per-placer summary, runtime relative to the best placer (``*`` proven
    optimal, ``~`` stopped at a limit, ``!`` infeasible, ``err`` refused, e.g. too big for
    ``milp``) and solve times; then the DP on the msr graphs."""
    out = []
    for objective in OBJECTIVES:
        mine = [r for r in rows if r["objective"] == objective]
        if mine:
            out.append(f"### {objective}: summary over {len(_cases(mine))} cases\n")
            out.append(summary_table(mine, placers))
    for objective in OBJECTIVES:
        mine = [r for r in rows if r["objective"] == objective]
        if not mine:
            continue
        out.append(f"### {objective}: runtime / best runtime ({LEGEND})\n")
        out.append(_grid(mine, placers, _ratio_cell, best_column=True))
        out.append(f"### {objective}: solve time (s)\n")
        out.append(
            _grid(mine, placers, lambda r: f"{r['solve_time']:.2f}" if "solve_time" in r else "-")
        )
    msr = [
        r
        for r in rows
        if r["placer"] == "tarnawski_dp"
        and r["graph"] in MSR_OPTIMA
        and r["objective"] == "pipeline"
        and "runtime" in r
    ]
    if msr:
        out.append("### tarnawski_dp on the msr graphs (pipeline max-load)\n")
        out.append(
            "| graph | published optimum | tarnawski_dp | relative difference | ideals "
            "| solve time (s) |\n|---|---|---|---|---|---|"
        )
        for r in msr:
            published = MSR_OPTIMA[r["graph"]]
            out.append(
                f"| {r['graph']} | {published:.10g} | {r['runtime']:.10g} | "
                f"{(r['runtime'] - published) / published:.1e} | {r['ideals']} | "
                f"{r['solve_time']:.2f} |"
            )
        out.append("")
    return "\n".join(out)


def _cases(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["graph"] for r in rows))


def summary(rows: list[dict], placers: list[str]) -> list[dict]:
    """Per placer, over the rows of one objective: ``ok`` (feasible placements) of ``cases``,
    ``best`` (within 1e-9 of the best runtime of the case), the mean and worst ``ratio`` over
    its feasible placements, overall and per suite, and the median and max solve time."""
    out = []
    suites = [s for s in SUITES if any(r.get("suite") == s for r in rows)]
    for p in placers:
        mine = [r for r in rows if r["placer"] == p]
        ok = [r for r in mine if r.get("feasible") and "ratio" in r]
        times = [r["solve_time"] for r in mine if "solve_time" in r]
        entry = {
            "placer": p,
            "optimizes": PLACERS[p].optimizes if p in PLACERS else None,
            "cases": len(mine),
            "ok": len(ok),
            "best": sum(r["ratio"] <= 1 + 1e-9 for r in ok),
            "mean_ratio": _mean([r["ratio"] for r in ok]),
            "worst_ratio": max((r["ratio"] for r in ok), default=math.nan),
            "median_solve_time": float(np.median(times)) if times else math.nan,
            "max_solve_time": max(times, default=math.nan),
        }
        for s in suites:
            entry[f"mean_ratio_{s}"] = _mean([r["ratio"] for r in ok if r.get("suite") == s])
        out.append(entry)
    return out


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def summary_table(rows: list[dict], placers: list[str]) -> str:
    """:func:`summary` as markdown, one row per placer."""
    suites = [s for s in SUITES if any(r.get("suite") == s for r in rows)]
    head = [
        "placer",
        "optimizes",
        "feasible",
        "best",
        "mean ratio",
        *(f"mean ratio {s}" for s in suites),
        "worst ratio",
        "median solve (s)",
        "max solve (s)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def num(x: float, fmt: str) -> str:
        return "-" if math.isnan(x) else format(x, fmt)

    for e in summary(rows, placers):
        cells = [
            e["placer"],
            e["optimizes"] or "-",
            f"{e['ok']}/{e['cases']}",
            str(e["best"]),
            num(e["mean_ratio"], ".3f"),
            *(num(e[f"mean_ratio_{s}"], ".3f") for s in suites),
            num(e["worst_ratio"], ".3f"),
            num(e["median_solve_time"], ".3f"),
            num(e["max_solve_time"], ".2f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        "\n`feasible`: feasible placements of all cases (errors and infeasible ones count "
        "against it); `best`: cases where the placer matched the best runtime; ratios are "
        "over its feasible placements.\n"
    )
    return "\n".join(lines) + "\n" + note


def _ratio_cell(r: dict) -> str:
    if "runtime" not in r:
        return "err" if r["status"].startswith("error") else "-"
    if "ratio" not in r:
        return "!"
    marks = ("*" if r["optimal"] else "") + ("~" if r["status"] == "gave up" else "")
    return f"{r['ratio']:.3f}" + marks + ("" if r["feasible"] else "!")


def _grid(rows: list[dict], placers: list[str], cell, best_column: bool = False) -> str:
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    by_key = {(r["graph"], r["placer"]): r for r in rows}
    head = ["graph", "nodes", "cluster"] + (["best runtime"] if best_column else []) + placers
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in graphs:
        some = next(r for r in rows if r["graph"] == g)
        cells = [g, str(some["nodes"]), some.get("devices", some["cluster"])]
        if best_column:
            ok = [r["runtime"] for r in rows if r["graph"] == g and r.get("feasible")]
            cells.append(f"{min(ok):.4g}" if ok else "-")
        cells += [cell(by_key[g, p]) if (g, p) in by_key else "-" for p in placers]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(rows: list[dict], text: str, out: Path, config: argparse.Namespace) -> str:
    """CSV, markdown and JSON, each written atomically, the JSON and the markdown with their
    provenance and ``config``; returns the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    columns = [
        "graph",
        "suite",
        "cluster",
        "devices",
        "nodes",
        "objective",
        "placer",
        "runtime",
        "ratio",
        "feasible",
        "optimal",
        "lower_bound",
        "solve_time",
        "ideals",
        "status",
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    record = result_record(rows, config)
    text = with_provenance(text, record["provenance"])
    contents = {
        "baselines.csv": buffer.getvalue(),
        "baselines.md": text,
        "baselines.json": json.dumps(record, indent=1, default=str),
    }
    for name, content in contents.items():
        tmp = out / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(content)
        os.replace(tmp, out / name)
    return text


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick subset, short limits")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--graphs", help="comma-separated case labels (default: all)")
    parser.add_argument("--suites", help=f"comma-separated, of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--placers", help="comma-separated placers (default: all)")
    parser.add_argument("--objectives", default=",".join(OBJECTIVES))
    args = parser.parse_args(argv)
    cases = [c for c in CASES if c.quick or not args.quick]
    if args.graphs:
        wanted = args.graphs.split(",")
        cases = [c for c in CASES if c.label in wanted]
    if args.suites:
        cases = [c for c in cases if c.suite in args.suites.split(",")]
    placers = (
        args.placers.split(",")
        if args.placers
        else [
            name
            for name, placer in PLACERS.items()
            if placer.standalone and placer.decides == "device"
        ]
    )
    rows = run(cases, placers, args.objectives.split(","), args.quick)
    print(write(rows, markdown(rows, placers), args.out, args))
    return rows


if __name__ == "__main__":
    main()
