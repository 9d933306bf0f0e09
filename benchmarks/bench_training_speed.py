"""Training throughput: env steps per second of MaskablePPO, updates included, per extractor.

For each extractor (GNN, LSTM, MLP) on ``synthetic:layered`` graphs of 100 and 300 nodes
(``placeto?n_devices=4``, construct env, placerl's PPO defaults, 4 envs) it trains a fixed
number of steps with the envs in process (``dummy``) and in subprocesses (``subproc``) and
reports steps per second of training (no evaluations), side by side in one run.

    python benchmarks/bench_training_speed.py            # about 5 minutes on 2 cores
    python benchmarks/bench_training_speed.py --devices cpu,cuda   # policy on CPU and GPU

Results go to ``benchmarks/results/training_speed.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.train import train

EXTRACTORS = ("gnn", "lstm", "mlp")
SIZES = (100, 300)
VEC_ENVS = ("dummy", "subproc")


def throughput(extractor: str, nodes: int, vec_env: str, steps: int, device: str) -> float:
    """Env steps per second of ``steps`` training steps (PPO updates included), the policy on
    torch ``device``."""
    result = train({"graph": f"synthetic:layered?n={nodes}&seed=0",
                    "cluster": "placeto?n_devices=4", "extractor": extractor,
                    "vec_env": vec_env, "total_steps": steps, "eval_every": 0,
                    "checkpoint_every": 0, "baselines": [], "device": device})  # fmt: skip
    return result.timings["steps_per_s"]


def resolve_device(name: str) -> str:
    """SB3's ``auto``, spelled out for the table: ``cuda`` where there is one, else ``cpu``."""
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4_096, help="training steps per run")
    parser.add_argument(
        "--devices", default="auto", help="comma-separated torch devices of the policy: cpu, cuda"
    )
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    devices = [resolve_device(d) for d in args.devices.split(",")]
    for device in devices:  # untimed: compiles the numba kernels (cached after) and starts CUDA
        throughput(EXTRACTORS[0], SIZES[0], VEC_ENVS[0], 256, device)
    rows, start = [], time.perf_counter()
    for nodes in SIZES:
        for extractor in EXTRACTORS:
            for device in devices:
                speeds = {v: throughput(extractor, nodes, v, args.steps, device) for v in VEC_ENVS}
                row = {"extractor": extractor, "nodes": nodes, "device": device,
                       **{f"{v} steps/s": round(s) for v, s in speeds.items()}}  # fmt: skip
                rows.append(row)
                print(row, flush=True)
    threads = f" --threads {args.threads}" if args.threads else ""
    if args.devices != "auto":
        threads += f" --devices {args.devices}"
    note = (f"Command: `python benchmarks/bench_training_speed.py{threads}` ({args.steps} steps "
            f"per run, 4 envs; {time.perf_counter() - start:.0f} s in all). MaskablePPO with "
            "placerl's defaults (n_steps 256, batch 256, 4 epochs), updates included.")
    write_results("training_speed", rows, args.out)
    text = f"{note}\n\n{markdown_table(rows)}\n"
    (Path(args.out) / "training_speed.md").write_text(text)
    print(f"\n{text}")


if __name__ == "__main__":
    main()
