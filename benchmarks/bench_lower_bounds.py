"""How much room each graph leaves: the placers' runtimes over the objective's lower bound.

A ratio of 1.000 means the placer is proven optimal there: no placement, learned or not, can
beat it. Per graph and cluster: the lower bound (``placerl.sim.lower_bound``), single device,
HEFT, the best constructive placer, ``best_of`` and ``local_search`` from ``best_of`` at
``--evaluations`` simulator evaluations. Usage: ``python benchmarks/bench_lower_bounds.py``
(about 3 minutes; ``--quick``: two graphs).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from _common import markdown_table, write_results
from rich.progress import track

from placerl.baselines import solve
from placerl.sim import CostModel, lower_bound

GRAPHS = ["zoo:inception_v3?max_nodes=200", "zoo:resnet50?max_nodes=200",
          "zoo:gnmt?max_nodes=200", "zoo:transformer?max_nodes=200",
          "zoo:nasnet?max_nodes=200", "synthetic:layered?n=100&seed=0",
          "synthetic:cifar10?seed=0", "synthetic:ptb?seed=0", "synthetic:nmt?seed=0"]  # fmt: skip
CLUSTERS = ["gpu8_nvlink?n_devices=4", "placeto?n_devices=4"]
CONSTRUCTIVE = ["heft", "m_etf", "m_sct"]


def measure(graph: str, cluster: str, evaluations: int) -> dict:
    bound = lower_bound(CostModel(graph, cluster))
    runtime = {p: solve(p, graph, cluster).runtime for p in ["single_device", *CONSTRUCTIVE]}
    best_of = solve("best_of", graph, cluster)
    searched = solve("local_search", graph, cluster, init="best_of",
                     max_evaluations=evaluations)  # fmt: skip
    constructive = min(runtime[p] for p in CONSTRUCTIVE)
    return {"graph": graph, "cluster": cluster, "lower bound (ms)": f"{bound * 1e3:.4g}",
            "single device": f"{runtime['single_device'] / bound:.3f}",
            "HEFT": f"{runtime['heft'] / bound:.3f}",
            "best constructive": f"{constructive / bound:.3f}",
            "best_of": f"{best_of.runtime / bound:.3f} ({best_of.info['chosen'].split('?')[0]})",
            f"local_search(best_of) @{evaluations}": f"{searched.runtime / bound:.3f}"}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaluations", type=int, default=2000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    graphs = GRAPHS[:1] + GRAPHS[5:6] if args.quick else GRAPHS
    cases = [(g, c) for g in graphs for c in CLUSTERS]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the DP's pair budget inside best_of
        for graph, cluster in track(cases, description="placers against the bound"):
            rows.append(measure(graph, cluster, args.evaluations))
    table = markdown_table(rows)
    name = "lower_bounds_quick" if args.quick else "lower_bounds"
    write_results(name, rows, args.out)
    command = "python benchmarks/bench_lower_bounds.py" + (" --quick" if args.quick else "")
    (Path(args.out) / f"{name}.md").write_text(
        f"`{command}`: runtime over the objective's lower bound (`step_time`; 1.000: proven "
        f"optimal).\n\n{table}\n")
    print(table)


if __name__ == "__main__":
    main()
