"""Parallelization strategies: expert strategies against PaSE's DP, vertex orders, folding.

Three tables, all on training graphs of the zoo (forward + backward, gradients all-reduced):

1. **Strategies**: the step time (strategy cost) of data parallelism, Megatron-LM's tensor
   parallelism, PaSE's DP with and without TAP-style folding and, on the transformers, a GNN
   policy trained by MaskablePPO on ``placerl/Parallelize-v1`` (folded, ``--rl-steps`` steps,
   its greedy strategy), for BERT-base, GPT-2 small, ResNet-50 and Inception-v3 on
   ``gpu8_nvlink`` and ``gpu4_pcie``; solve and training times, memory per device.
2. **Vertex orders**: the DP's largest dependent set, largest and total table and solve time
   under PaSE's order and every registered traversal order; an order whose largest table
   exceeds ``--max-table`` entries is reported as out of memory (PaSE reports breadth-first
   running out of memory on Inception-v3 and Transformer).
3. **Folding at growing depth**: solve time with and without folding for transformers of 6
   to 48 layers and ResNets of 50 to 152 layers.

Usage: ``python benchmarks/bench_strategy.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import markdown_table, write_results

from placerl.agents import make_agent
from placerl.baselines import solve
from placerl.baselines.pase import (
    MAX_TABLE,
    Tables,
    elimination_plan,
    solve_strategy,
    variable_order,
)
from placerl.envs import ParallelizeEnv
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import ORDERS
from placerl.graph.zoo import load_zoo
from placerl.sim import CostModel

MODELS = {
    "bert_base": "zoo:transformer?variant=bert_base&training=true",
    "gpt2_small": "zoo:transformer?variant=gpt2_small&batch=8&seq_len=512&training=true",
    "resnet50": "zoo:resnet50?training=true",
    "inception_v3": "zoo:inception_v3?training=true",
}
TRANSFORMERS = ("bert_base", "gpt2_small")
CLUSTERS = ("gpu8_nvlink", "gpu4_pcie")
PLACERS = [
    ("data parallel", "data_parallel", {}),
    ("Megatron", "megatron", {}),
    ("PaSE DP", "pase_dp", {}),
    ("PaSE DP + fold", "pase_dp", {"fold": True}),
]
DEPTHS = {
    "transformer": [
        (f"{n} layers", ("transformer", {"variant": "bert_base", "layers": n}))
        for n in (6, 12, 24, 48)
    ],
    "resnet": [
        (f"resnet{d}", ("resnet50", {"layers": layers}))
        for d, layers in ((50, (3, 4, 6, 3)), (101, (3, 4, 23, 3)), (152, (3, 8, 36, 3)))
    ],
}


def trained_policy(graph: CompGraph, cluster: str, steps: int) -> tuple[float, float]:
    """Step time of a GNN policy's greedy strategy after ``steps`` of MaskablePPO, and the
    seconds it took."""
    start = time.perf_counter()
    env = ParallelizeEnv(graph, cluster, fold=True)
    # 4 epochs at 1e-3, placerl's defaults when the README's figures were measured
    agent = make_agent(
        "maskable_ppo",
        env,
        "gnn",
        seed=0,
        n_steps=256,
        batch_size=64,
        learning_rate=1e-3,
        n_epochs=4,
    )
    agent.learn(steps)
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        action, _ = agent.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, info = env.step(action)
    return info["runtime"], time.perf_counter() - start


def strategies(model: str, cluster: str, rl_steps: int) -> dict:
    graph = load_graph(MODELS[model])
    row: dict = {"model": model, "cluster": cluster}
    for label, placer, options in PLACERS:
        if placer == "megatron" and model not in TRANSFORMERS:
            row[f"{label} (ms)"] = "-"  # an expert strategy for transformers only
            continue
        result = solve(placer, graph, cluster, "strategy", **options)
        row[f"{label} (ms)"] = round(result.runtime * 1e3, 2)
        if placer == "pase_dp":
            row[f"{label} solve (s)"] = round(result.solve_time, 2)
        if label in ("data parallel", "PaSE DP"):
            row[f"{label} memory (GB)"] = round(result.simulation.memory[0] / 1e9, 2)
    if rl_steps and model in TRANSFORMERS:
        runtime, seconds = trained_policy(graph, cluster, rl_steps)
        row["RL policy (ms)"], row["RL training (s)"] = round(runtime * 1e3, 2), round(seconds)
    else:
        row["RL policy (ms)"] = row["RL training (s)"] = "-"
    row["DP vs data parallel"] = f"{row['data parallel (ms)'] / row['PaSE DP (ms)']:.2f}x"
    return row


def orders(model: str, max_table: int) -> list[dict]:
    cost = CostModel(MODELS[model], "gpu8_nvlink", "strategy").prepared
    tables = Tables.of(cost)
    rows = []
    for order in ("pase", *ORDERS):
        variables = variable_order(cost, order)
        plan = elimination_plan(tables, variables)
        row = {
            "model": model,
            "order": order,
            "largest dependent set": plan.largest_dependent_set,
            "largest table": f"{plan.max_table:.3g}",
            "all tables": f"{plan.total_table:.3g}",
        }
        if plan.max_table > max_table:
            row["solve (s)"] = f"out of memory ({plan.max_table * 8 / 1e9:.3g} GB)"
            row["step (ms)"] = "-"
        else:
            start = time.perf_counter()
            _, value = solve_strategy(tables, variables, max_table=max_table)
            row["solve (s)"] = round(time.perf_counter() - start, 3)
            row["step (ms)"] = round(value * 1e3, 3)
        rows.append(row)
    return rows


def depth(family: str, label: str, model: tuple[str, dict]) -> dict:
    name, config = model
    graph = load_zoo(name, training=True, **config)
    row: dict = {"family": family, "model": label, "nodes": graph.num_nodes}
    for fold in (False, True):
        result = solve("pase_dp", graph, "gpu8_nvlink", "strategy", fold=fold)
        key = "folded" if fold else "unfolded"
        row[f"{key} variables"] = result.info["variables"]
        row[f"{key} solve (s)"] = round(result.solve_time, 3)
        row[f"{key} step (ms)"] = round(result.runtime * 1e3, 3)
    row["speedup"] = f"{row['unfolded solve (s)'] / row['folded solve (s)']:.1f}x"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one model per table")
    parser.add_argument("--max-table", type=int, default=MAX_TABLE)
    parser.add_argument(
        "--rl-steps",
        type=int,
        default=None,
        help="PPO steps per transformer (30000; 2048 in --quick)",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    models = ["bert_base"] if args.quick else list(MODELS)
    rl_steps = args.rl_steps if args.rl_steps is not None else (2048 if args.quick else 30_000)
    order_models = ["inception_v3"] if args.quick else ["inception_v3", "bert_base", "resnet50"]
    depths = [(f, label, spec) for f, cases in DEPTHS.items() for label, spec in cases]
    tables = {
        "strategies": [strategies(m, c, rl_steps) for m in models for c in CLUSTERS],
        "orders": [r for m in order_models for r in orders(m, args.max_table)],
        "folding": [depth(*case) for case in (depths[:2] if args.quick else depths)],
    }
    text = "\n\n".join(f"## {name}\n\n{markdown_table(rows)}" for name, rows in tables.items())
    print(text)
    name = "strategy_quick" if args.quick else "strategy"
    config = {**vars(args), "rl_steps": rl_steps}  # the resolved default
    write_results(
        name,
        [r for rows in tables.values() for r in rows],
        args.out,
        config=config,
        markdown=text + "\n",
    )


if __name__ == "__main__":
    main()
