"""Sampled episodes one after another against side by side (``sampled_rollouts``), one run.

``search=sample`` steps up to 32 episodes together in copies of the env, one batched forward
pass of the policy per step; this measures that against ``rollout`` called once per episode,
for an untrained GNN policy (the forward pass costs the same trained or not).

    python benchmarks/bench_sampling.py                 # 32 episodes, 80 and 300 nodes

Results: ``benchmarks/results/sampling.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.agents import make_agent, rollout
from placerl.agents.episodes import sampled_rollouts
from placerl.envs import PlacementEnv


def measure(nodes: int, episodes: int) -> dict[str, object]:
    """Seconds for ``episodes`` sampled episodes both ways on a ``nodes``-node graph."""
    env = PlacementEnv(f"synthetic:layered?n={nodes}&seed=24", "placeto?n_devices=4")
    model = make_agent("maskable_ppo", env, "gnn", seed=0)
    rollout(model, env, deterministic=False)  # warm up both paths (numba compiles once)
    sampled_rollouts(model, env, 2)
    start = time.perf_counter()
    for k in range(episodes):
        rollout(model, env, graph=0, deterministic=False, seed=k)
    one_by_one = time.perf_counter() - start
    start = time.perf_counter()
    sampled_rollouts(model, env, episodes)
    side_by_side = time.perf_counter() - start
    return {
        "nodes": nodes,
        "episodes": episodes,
        "one_after_another_s": round(one_by_one, 2),
        "side_by_side_s": round(side_by_side, 2),
        "speedup": round(one_by_one / side_by_side, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--sizes", default="80,300")
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    rows = [measure(int(n), args.episodes) for n in args.sizes.split(",")]
    command = "python benchmarks/bench_sampling.py " + " ".join(sys.argv[1:])
    text = f"Command: `{command.strip()}`.\n\n{markdown_table(rows)}\n"
    write_results("sampling", rows, args.out, config=args, markdown=text)
    print(text)


if __name__ == "__main__":
    main()
