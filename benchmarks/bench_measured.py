"""Simulator against measured runtimes, before and after calibration.

For each model: calibrate the simulator on this machine (:func:`placerl.measure.calibrate`),
then run 50 random placements and 10 heuristic ones (placers run on the uncalibrated model)
for real on the cluster's devices (CPU worker processes, or threads for the host CPU and
GPUs), and compare the measured runtimes with the simulated ones before and
after calibration: mean absolute percentage error and Spearman rank correlation.

A shared machine drifts in speed by tens of percent within minutes, so every placement is
measured in ``--rounds`` interleaved rounds (all placements once per round) and keeps its
median: drift then moves all placements alike instead of whichever ran during a slow phase.

    python benchmarks/bench_measured.py            # two zoo models, 2 CPU workers
    python benchmarks/bench_measured.py --quick    # 10 random placements each
    python benchmarks/bench_measured.py --cluster 'cpu_gpu?n_gpus=1' --name measured_cpu_gpu
                                                    # the host CPU and a GPU (threads executor)

Writes ``results/measured.{json,md}`` and a scatter plot ``results/measured.png`` (``--name``
names them otherwise).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
from _common import markdown_table, write_results
from scipy.stats import spearmanr

from placerl.baselines import place
from placerl.baselines.references import parse_placer
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from placerl.measure import Measurer, calibrate
from placerl.sim import CostModel

MODELS = {
    "inception_v3": "zoo:inception_v3?variant=small&batch=8&max_nodes=40",
    "transformer": "zoo:transformer?variant=bert_tiny&batch=8&seq_len=64&hidden=128&heads=4"
    "&ffn=512&layers=4&max_positions=64&max_nodes=80",
}
#: The heuristic placements: (label, placer spec, objective the placer runs with).
HEURISTICS = (
    ("single_device", "single_device", "step_time"),  # the fastest device (simulated)
    ("heft", "heft", "step_time"),
    ("m_etf", "m_etf", "step_time"),
    ("m_sct", "m_sct", "step_time"),
    ("local_search", "local_search?time_limit=5", "step_time"),
    ("min_cut", "min_cut", "step_time"),
    ("round_robin", "round_robin", "step_time"),
    ("m_topo", "m_topo", "step_time"),
    ("tarnawski_dp", "tarnawski_dp?time_limit=30", "pipeline"),
    ("milp", "milp?time_limit=30&max_nodes=100", "pipeline"),
)


def placements(graph, cluster: str, count: int, seed: int) -> list[tuple[str, np.ndarray]]:
    """``count`` uniform random placements and the heuristic ones."""
    rng = np.random.default_rng(seed)
    devices = load_cluster(cluster).num_devices
    out = [(f"random:{i}", rng.integers(0, devices, graph.num_nodes)) for i in range(count)]
    for label, spec, objective in HEURISTICS:
        placer, options = parse_placer(spec)
        out.append((label, np.asarray(place(placer, graph, cluster, objective, **options))))
    return out


def agreement(measured: np.ndarray, simulated: np.ndarray) -> tuple[float, float]:
    """(mean absolute percentage error, Spearman rank correlation)."""
    mape = float(np.mean(np.abs(simulated - measured) / measured))
    return mape, float(spearmanr(simulated, measured).statistic)


def run_model(
    name: str, spec: str, cluster: str, count: int, repeats: int, rounds: int, together: bool
) -> tuple[dict, list]:
    graph = load_graph(spec)
    before = CostModel(graph, cluster)
    chosen = placements(graph, cluster, count, seed=0)
    with Measurer(graph, cluster, repeats=repeats) as measurer:
        began = time.perf_counter()
        calibrated_graph, calibrated_cluster = calibrate(
            graph, measurer=measurer, repeats=repeats, together=together
        )
        calibration_s = time.perf_counter() - began
        after = CostModel(calibrated_graph, calibrated_cluster)
        began = time.perf_counter()
        runs = np.array([[measurer.measure(p).runtime for _, p in chosen] for _ in range(rounds)])
        measure_s = time.perf_counter() - began
    points = [
        {
            "model": name,
            "placement": label,
            "measured_ms": float(np.median(runs[:, i])) * 1e3,
            "before_ms": before.runtime(p) * 1e3,
            "after_ms": after.runtime(p) * 1e3,
        }
        for i, (label, p) in enumerate(chosen)
    ]
    measured = np.array([p["measured_ms"] for p in points])
    mape_b, rho_b = agreement(measured, np.array([p["before_ms"] for p in points]))
    mape_a, rho_a = agreement(measured, np.array([p["after_ms"] for p in points]))
    info = calibrated_graph.meta["calibrated"]
    links, extra = info["links"], info["in_run_latency"]
    row = {
        "model": name,
        "nodes": graph.num_nodes,
        "placements": len(points),
        "single device (ms)": f"{points[count]['measured_ms']:.1f}",
        "measured range (ms)": f"{measured.min():.1f}-{measured.max():.1f}",
        "MAPE before": f"{mape_b:.0%}",
        "MAPE after": f"{mape_a:.1%}",
        "Spearman before": f"{rho_b:.2f}",
        "Spearman after": f"{rho_a:.2f}",
        "link 0->1: pinged": f"{links[0]['latency'] * 1e6:.0f} us, "
        f"{links[0]['bandwidth'] / 1e9:.1f} GB/s",
        "+ in-run latency": f"{extra * 1e6:.0f} us",
        "run scales": ", ".join(f"{kind} {scale:.2f}" for kind, scale in info["run_scales"].items())
        or "-",
        "calibrate (s)": f"{calibration_s:.0f}",
        "measure (s)": f"{measure_s:.0f}",
    }
    return row, points


def plot(points: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({p["model"] for p in points})
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.5), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        mine = [p for p in points if p["model"] == model]
        measured = [p["measured_ms"] for p in mine]
        for key, label in (("before_ms", "before calibration"), ("after_ms", "after")):
            ax.scatter(measured, [p[key] for p in mine], s=14, label=label)
        top = max(max(measured), max(p["after_ms"] for p in mine))
        ax.plot([0, top], [0, top], "k--", lw=0.8, label="simulated = measured")
        ax.set(title=model, xlabel="measured (ms)", ylabel="simulated (ms)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 random placements per model")
    parser.add_argument("--cluster", default="local?workers=2")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians)")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="calibrate op costs on one idle device, not all devices at once",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument(
        "--name", help="results' file name (default: measured, or measured_quick with --quick)"
    )
    args = parser.parse_args()
    count = 10 if args.quick else 50
    rows, points = [], []
    for name, spec in MODELS.items():
        row, mine = run_model(
            name, spec, args.cluster, count, args.repeats, args.rounds, not args.alone
        )
        rows.append(row)
        points += mine
        print(markdown_table([row]), flush=True)
    name = args.name or ("measured_quick" if args.quick else "measured")
    out = Path(args.out)
    table = markdown_table(rows)
    title = f"# Simulated against measured runtimes ({args.cluster}, {platform.machine()})"
    text = f"{title}\n\n{table}\n"
    # the machine is in the provenance; the points (one per placement) draw the plot
    write_results(name, rows, out, config=args, markdown=text, extra={"points": points})
    plot(points, out / f"{name}.png")
    print(table)


if __name__ == "__main__":
    main()
