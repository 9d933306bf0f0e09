"""Env speed: random actions, single process, on 100 / 1k / 5k-node graphs, both modes.

Reports steps per second of the raw env (no gymnasium wrappers) and the share of each step
spent building the observation, next to the issue's targets. Usage:
``python benchmarks/bench_env.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import best_time, markdown_table, write_results

from placerl.envs import PlacementEnv, PlacementRefineEnv

TARGETS = {("construct", 100): 20_000, ("construct", 1000): 2_000, ("refine", 1000): 1_000}
MODES = {"construct": PlacementEnv, "refine": PlacementRefineEnv}


def steps_per_second(env, steps: int) -> float:
    rng = np.random.default_rng(0)
    actions = rng.integers(env.action_space.n, size=steps)
    env.reset(seed=0)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def measure(mode: str, n: int, steps: int) -> dict:
    env = MODES[mode](graph=f"synthetic:layered?n={n}&seed=0", cluster="placeto")
    env.reset(seed=0)
    rate = max(steps_per_second(env, steps) for _ in range(3))
    observation = best_time(env._observation, repeat=5, number=50)
    target = TARGETS.get((mode, n))
    return {
        "mode": mode,
        "nodes": n,
        "edges": env.case.graph.num_edges,
        "steps/s": int(rate),
        "target": target or "-",
        "meets": "-" if target is None else ("yes" if rate >= target else "NO"),
        "observation share": f"{observation * rate:.0%}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1k nodes only")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    sizes = (100, 1000) if args.quick else (100, 1000, 5000)
    budget = {"construct": 200_000, "refine": 20_000}  # steps x nodes per measurement
    rows = [measure(mode, n, steps=max(200, budget[mode] // n)) for mode in MODES for n in sizes]
    print(markdown_table(rows))
    write_results("bench_env", rows, args.out)


if __name__ == "__main__":
    main()
