"""Env speed: random actions, single process, on 100 / 1k / 5k-node graphs, both modes.

Construct mode simulates only when an episode ends, so it is timed over whole episodes (reset
and final simulation included). Refine mode simulates after every step, under ``step_time``
(a full re-simulation) and ``pipeline`` (an O(degree) update of the loads, also timed with a
full evaluation per step in the same run); it starts from a random placement and is timed
over its first pass of steps, capped by a budget. Reports steps per second of the raw env (no
Gymnasium wrappers) and the share of each step spent building the observation, next to the
targets. Usage: ``python benchmarks/bench_env.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_time, load_note, markdown_table, write_results

from placerl.envs import PlacementEnv, PlacementRefineEnv

TARGETS = {
    ("construct", "step_time", 100): 20_000,
    ("construct", "step_time", 1000): 2_000,
    ("refine", "step_time", 1000): 1_000,
    ("refine", "step_time", 5000): 1_200,
    ("refine", "pipeline", 5000): 15_000,
}
MODES = {"construct": PlacementEnv, "refine": PlacementRefineEnv}
CASES = [("construct", "step_time"), ("refine", "step_time"), ("refine", "pipeline")]


def timed_steps(env, steps: int, whole_episodes: bool, full_evaluation: bool = False) -> float:
    """Steps per second over ``steps`` random steps (whole episodes: resets timed too).

    ``full_evaluation`` switches off the refine env's incremental state, so that the same run
    measures what an O(degree) move saves over a full evaluation per step.
    """
    # Not seed 0: reset(seed=0) draws the uniform initial placement from that same stream, and
    # the actions would put every node back where it already is.
    actions = np.random.default_rng(12345).integers(env.action_space.n, size=steps)
    env.reset(seed=0)
    if full_evaluation:
        env._incremental = None
    start = time.perf_counter()
    if whole_episodes:
        env.reset(seed=0)
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def measure(mode: str, objective: str, n: int) -> dict:
    # Refine episodes start from a random placement (the default single-device start has no
    # transfers to price, which flatters every step).
    extra = {"init": "uniform"} if mode == "refine" else {}
    env = MODES[mode](
        graph=f"synthetic:layered?n={n}&seed=0", cluster="placeto", objective=objective, **extra
    )
    env.reset(seed=0)
    if mode == "construct":
        steps, whole = n * max(1, 20_000 // n), True  # whole episodes, at least 20k steps
    else:
        steps, whole = (
            min(n, max(200, 2_000_000 // n if objective == "pipeline" else 20_000 // n)),
            False,
        )
    rate = max(timed_steps(env, steps, whole) for _ in range(3))
    incremental = mode == "refine" and objective == "pipeline"
    full = max(timed_steps(env, steps, whole, True) for _ in range(3)) if incremental else None
    observation = best_time(env._observation, repeat=5, number=50)
    target = TARGETS.get((mode, objective, n))
    return {
        "mode": mode,
        "objective": objective,
        "nodes": n,
        "edges": env.case.graph.num_edges,
        "steps timed": steps,
        "steps/s": int(rate),
        "steps/s, full evaluation per step": "-" if full is None else int(full),
        "target": target or "-",
        "meets": "-" if target is None else ("yes" if rate >= target else "NO"),
        "observation share": f"{observation * rate:.0%}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1k nodes only")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    sizes = (100, 1000) if args.quick else (100, 1000, 5000)
    load, load_field = load_note()
    rows = [measure(mode, objective, n) for mode, objective in CASES for n in sizes]
    table = markdown_table(rows)
    print(table)
    note = (
        "Env speed: random actions on the raw env (no Gymnasium wrappers), one process; "
        "steps per second next to the targets." + load
    )
    write_results(
        "bench_env", rows, args.out, config=args, markdown=f"{note}\n\n{table}\n", extra=load_field
    )


if __name__ == "__main__":
    main()
