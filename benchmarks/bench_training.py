"""What the training choices buy: reward, warm start, features and head, generalization.

Four studies, each a set of :func:`placerl.train.train` runs on one graph and cluster (seeds
side by side), reported against the best constructive placer:

* ``reward``: the sparse ``log_speedup`` and the dense ``normalized_delta`` rewards, each
  against a single-device reference and against the best constructive placer.
* ``warm_start``: with and without behaviour cloning of the best constructive placer; steps to
  reach its runtime and the final quality.
* ``ablation``: the HEFT device features and the device-equivariant head, each switched off.
* ``generalization``: one policy trained on 24 graphs of a synthetic family, run zero-shot on
  8 held-out ones, against a policy trained on each held-out graph alone and the best placer.

    python benchmarks/bench_training.py                 # all four, about 25 minutes on 2 cores
    python benchmarks/bench_training.py --study reward  # one

Results go to ``benchmarks/results/training_<study>.{json,md}`` with the command that made
them. ``greedy`` is the final policy's greedy runtime (the best evaluation's weights),
``seen`` the best placement seen in training; ``steps_to_1x`` / ``steps_to_1.05x`` the first
evaluation at most 1x / 1.05x the best constructive placer (``-``: never).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.baselines import solve
from placerl.graph import load_graph
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

CONSTRUCTIVE = ("single_device", "round_robin", "m_topo", "heft", "m_etf", "m_sct")
GRAPH, CLUSTER = "synthetic:layered?n=100&seed=0", "placeto?n_devices=4"
FAMILY = "synthetic:layered?n=80&seed={seed}"  # generalization: seeds 0-23 train, 24-31 test


def best_constructive(graph: str, cluster: str) -> tuple[str, float]:
    """The best constructive placer on the pair and its runtime."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runtimes = {}
        for name in CONSTRUCTIVE:
            result = solve(name, graph, cluster, "step_time")
            runtimes[name] = result.runtime if result.feasible else math.inf
    name = min(runtimes, key=runtimes.get)
    return name, runtimes[name]


def first_step(curve: list[dict[str, Any]], target: float) -> int | str:
    """The first evaluated step whose (mean) runtime is at most ``target``."""
    for point in curve:
        if float(np.mean(point["runtimes"])) <= target * (1 + 1e-9):
            return point["step"]
    return "-"


def config(
    env: dict[str, Any] | None = None, agent: dict[str, Any] | None = None, **options: Any
) -> dict[str, Any]:
    """A :func:`train` config on the groups' bare defaults (the construct env, no warm start,
    no sampled rollouts), not the main job's recipe: the settings the README's figures were
    measured with, ``env`` and ``agent`` fields over them, then ``options``. No rollback: as
    measured for the README, before rollback existed."""
    return {
        "order": OrderGroup(),
        "env": EnvGroup(**(env or {})),
        "agent": AgentGroup(**{"warm_start": None, "rollback": False, **(agent or {})}),
        "eval_samples": 0,
        "progress_bar": False,
        "resume": False,
        **options,
    }


def run(label: str, settings: dict[str, Any], best: float, seed: int) -> dict[str, Any]:
    """One training run of :func:`config`'s ``settings`` as a table row (ratios to the best
    constructive runtime ``best``)."""
    result = train(config(**settings, seed=seed, checkpoint_every=0, baselines=[]))
    (outcome,) = result.graphs
    row = {
        "variant": label,
        "seed": seed,
        "greedy": round(outcome.final_runtime / best, 3),
        "seen": round(outcome.best_runtime / best, 3),
        "steps_to_1x": first_step(result.curve, best),
        "steps_to_1.05x": first_step(result.curve, 1.05 * best),
        "cloned": "",
        "train_s": round(result.timings["train"] + result.timings["warm_start"], 1),
    }
    if result.warm_start is not None:  # the cloned policy before RL
        row["cloned"] = round(result.warm_start["policy_runtime"] / best, 3)
    print(row, flush=True)
    return row


Variants = Callable[[str], dict[str, dict[str, Any]]]


def variants_study(variants: Variants, steps: int, seeds: int) -> list[dict[str, Any]]:
    """Each variant (built from the best constructive placer's name) for every seed."""
    start, best = best_constructive(GRAPH, CLUSTER)
    base = {
        "graph": {"spec": GRAPH},
        "cluster": {"spec": CLUSTER},
        "total_steps": steps,
        "eval_every": 1_000,
    }
    return [
        run(label, {**base, **change}, best, seed)
        for label, change in variants(start).items()
        for seed in range(seeds)
    ]


def reward_study(steps: int, seeds: int) -> list[dict[str, Any]]:
    """Sparse and dense rewards, against single device and against the best placer."""
    return variants_study(
        lambda start: {
            f"{reward} vs {ref}": {"env": {"reward": reward, "reference": ref}}
            for reward in ("log_speedup", "normalized_delta")
            for ref in ("single_device", start)
        },
        steps,
        seeds,
    )


def warm_start_study(steps: int, seeds: int) -> list[dict[str, Any]]:
    """Construct and refine envs, each with and without cloning the best placer first."""

    def variants(start: str) -> dict[str, dict[str, Any]]:
        refine = {"kind": "refine", "init": start, "reference": start, "reward": "normalized_delta"}
        return {
            "construct": {},
            "construct + clone": {"agent": {"warm_start": start}},
            "refine from best": {"env": refine},
            "refine from best + clone": {"env": refine, "agent": {"warm_start": start}},
        }

    return variants_study(variants, steps, seeds)


def ablation_study(steps: int, seeds: int) -> list[dict[str, Any]]:
    """The HEFT device features and the device-equivariant head, each switched off."""
    return variants_study(
        lambda start: {
            "gnn, device features, device head": {},
            "no device features": {"agent": {"extractor_kwargs": {"device_features": False}}},
            "mlp head": {"agent": {"head": "mlp"}},
            "neither": {"agent": {"head": "mlp", "extractor_kwargs": {"device_features": False}}},
        },
        steps,
        seeds,
    )


def generalization_study(steps: int, seeds: int) -> list[dict[str, Any]]:
    """Train on 24 graphs of the family; zero-shot on 8 held out vs per-graph training."""
    train_specs = [FAMILY.format(seed=s) for s in range(24)]
    test_specs = [FAMILY.format(seed=s) for s in range(24, 32)]
    graphs = [load_graph(spec) for spec in train_specs + test_specs]
    padding = {
        "max_nodes": max(g.num_nodes for g in graphs),
        "max_edges": max(g.num_edges for g in graphs),
    }
    base = {"cluster": {"spec": CLUSTER}, "env": padding, "eval_every": 0, "baselines": []}
    rows = []
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as out:
            shared = train(
                config(
                    **base,
                    graph={"spec": train_specs},
                    total_steps=4 * steps,
                    seed=seed,
                    checkpoint_every=0,
                ),
                out_dir=out,
            )
            model = str(Path(out) / "model.zip")
            for spec in test_specs:
                placer, best = best_constructive(spec, CLUSTER)
                zero_shot = solve("policy", spec, CLUSTER, "step_time", path=model).runtime
                alone = train(
                    config(
                        **{**base, "eval_every": 1_000},
                        graph={"spec": spec},
                        total_steps=steps,
                        seed=seed,
                        checkpoint_every=0,
                    )
                )
                row = {
                    "graph": spec.split(":")[1],
                    "seed": seed,
                    "best_placer": placer,
                    "zero_shot_vs_best": round(zero_shot / best, 3),
                    "per_graph_vs_best": round(alone.final_runtime / best, 3),
                    "zero_shot_vs_per_graph": round(zero_shot / alone.final_runtime, 3),
                    "shared_train_s": round(shared.timings["train"], 1),
                    "per_graph_train_s": round(alone.timings["train"], 1),
                }
                print(row, flush=True)
                rows.append(row)
    return rows


STUDIES: dict[str, Callable[[int, int], list[dict[str, Any]]]] = {
    "reward": reward_study,
    "warm_start": warm_start_study,
    "ablation": ablation_study,
    "generalization": generalization_study,
}


def summary(rows: list[dict[str, Any]], key: str, columns: tuple[str, ...]) -> list[dict]:
    """Per ``key`` value: the mean of each numeric column over seeds (and graphs)."""
    out = []
    for value in dict.fromkeys(r[key] for r in rows):
        group = [r for r in rows if r[key] == value]
        out.append(
            {
                key: value,
                "runs": len(group),
                **{c: round(float(np.mean([r[c] for r in group])), 3) for c in columns},
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=[*STUDIES, "all"], default="all")
    parser.add_argument("--steps", type=int, default=8_000, help="training steps per run")
    parser.add_argument("--seeds", type=int, default=2)
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    for name in STUDIES if args.study == "all" else [args.study]:
        start = time.perf_counter()
        rows = STUDIES[name](args.steps, args.seeds)
        if name == "generalization":
            means = summary(
                rows, "seed", ("zero_shot_vs_best", "per_graph_vs_best", "zero_shot_vs_per_graph")
            )
        else:
            means = summary(rows, "variant", ("greedy", "seen", "train_s"))
        command = (
            f"python benchmarks/bench_training.py --study {name} --steps {args.steps} "
            f"--seeds {args.seeds}"
        )
        graph = FAMILY if name == "generalization" else GRAPH
        note = (
            f"Command: `{command}` ({time.perf_counter() - start:.0f} s). Runtimes over "
            f"the best constructive placer's on {graph}, {CLUSTER} (below 1: better)."
        )
        text = f"{note}\n\nMeans:\n\n{markdown_table(means)}\n\nRuns:\n\n{markdown_table(rows)}\n"
        write_results(
            f"training_{name}", rows, args.out, config={**vars(args), "study": name}, markdown=text
        )
        print(f"\n{text}", flush=True)


if __name__ == "__main__":
    main()
