"""Training throughput: env steps per second of MaskablePPO, updates included, per extractor,
beside the raw env's steps per second in the same run.

For each extractor (GNN, LSTM, MLP) on ``synthetic:layered`` graphs of 100 and 300 nodes
(``placeto?n_devices=4``, construct env, placerl's defaults: ``n_envs`` envs, 1,024 steps
per rollout, 2 epochs of minibatches of 256 at a learning rate of 2e-3, and 4 epochs at half
that rate, the defaults before 2026-11-27) it
trains a fixed number of steps with the envs in process (``dummy``) and in subprocesses
(``subproc``) and reports steps per second of
training (no evaluations), the share of that time spent in PPO updates (the rest collects
rollouts), and the raw env's steps per second (random valid actions, no policy).

    python benchmarks/bench_training_speed.py                 # about 4 minutes on 2 cores
    python benchmarks/bench_training_speed.py --devices cpu,cuda   # policy on CPU and GPU
    python benchmarks/bench_training_speed.py --n-envs 4,32   # compare env counts
    python benchmarks/bench_training_speed.py --busy 1        # thread settings, one core busy

Results go to ``benchmarks/results/training_speed.{json,md}`` (``training_speed_busy`` with
``--busy``, ``..._n_envs`` with ``--n-envs``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.agents.factory import PPO_DEFAULTS
from placerl.agents.threads import available_cores
from placerl.envs import PlacementEnv
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup, RunConfig
from placerl.train import train

EXTRACTORS = ("gnn", "lstm", "mlp")
SIZES = (100, 300)
VEC_ENVS = ("dummy", "subproc")
CLUSTER = "placeto?n_devices=4"


def graph(nodes: int) -> str:
    return f"synthetic:layered?n={nodes}&seed=0"


class PhaseClock(BaseCallback):
    """Seconds spent collecting rollouts; the rest of ``learn`` is PPO updates."""

    def __init__(self) -> None:
        super().__init__()
        self.rollout_s, self._start = 0.0, 0.0

    def _on_rollout_start(self) -> None:
        self._start = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.rollout_s += time.perf_counter() - self._start

    def _on_step(self) -> bool:
        return True


def epoch_switch(epochs: int) -> dict[str, Any]:
    """PPO's hyperparameters at ``epochs`` epochs: the learning rate scaled so that the epochs
    together step as far as placerl's defaults do (4 epochs: half the rate)."""
    if epochs == PPO_DEFAULTS["n_epochs"]:
        return {}
    scale = PPO_DEFAULTS["n_epochs"] / epochs
    return {"n_epochs": epochs, "learning_rate": PPO_DEFAULTS["learning_rate"] * scale}


def throughput(
    extractor: str,
    nodes: int,
    vec_env: str,
    steps: int,
    device: str,
    n_envs: int,
    rollout_threads: int = 1,
    threads: int = 0,
    epochs: int = PPO_DEFAULTS["n_epochs"],
) -> tuple[float, float, int]:
    """Env steps per second of ``steps`` training steps (PPO updates included), the share of
    the time in updates, and torch's thread count in the updates."""
    clock = PhaseClock()
    # The groups' bare defaults (the construct env, no warm start), not the main job's recipe;
    # no rollback: PPO's own speed (rollback's checks are extra work).
    agent = AgentGroup(
        extractor=extractor, warm_start=None, rollback=False, hyperparams=epoch_switch(epochs)
    )
    result = train(
        {
            "graph": {"spec": graph(nodes)},
            "cluster": {"spec": CLUSTER},
            "order": OrderGroup(),
            "env": EnvGroup(),
            "agent": agent,
            "vec_env": vec_env,
            "total_steps": steps,
            "eval_every": 0,
            "n_envs": n_envs,
            "eval_samples": 0,
            "checkpoint_every": 0,
            "baselines": [],
            "device": device,
            "rollout_threads": rollout_threads,
            "threads": threads,
            "progress_bar": False,
            "resume": False,
        },
        callbacks=[clock],
    )
    train_s = result.timings["train"]
    return (
        result.timings["steps_per_s"],
        1 - clock.rollout_s / train_s,
        int(result.timings["torch_threads"]),
    )


def raw_env_speed(nodes: int, steps: int = 5_000) -> float:
    """Steps per second of the construct env alone, random valid actions."""
    env = PlacementEnv(graph=graph(nodes), cluster=CLUSTER)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        valid = np.flatnonzero(env.action_masks())
        if env.step(int(valid[rng.integers(len(valid))]))[2]:
            env.reset()
    return steps / (time.perf_counter() - start)


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` processes that each keep a core busy (a shared machine), stopped after."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for process in spinners:
        process.start()
    try:
        yield
    finally:
        for process in spinners:
            process.terminate()


#: Thread settings compared on a busy machine: (label, rollout_threads, threads), where ``all``
#: is every core of the process and 0 placerl's automatic count (less the cores others keep busy).
THREAD_SETTINGS = (
    ("all cores in both phases (torch's default)", 0, "all"),
    ("all in updates, one in rollouts", 1, "all"),
    ("automatic (placerl's default)", 1, 0),
)


def busy_rows(
    nodes: int, extractor: str, device: str, n_envs: int, steps: int
) -> list[dict[str, Any]]:
    """Rows of the busy-machine comparison: each thread setting, envs in process."""
    rows = []
    for label, rollout_threads, threads in THREAD_SETTINGS:
        count = available_cores() if threads == "all" else threads
        speed, update_share, used = throughput(
            extractor, nodes, "dummy", steps, device, n_envs, rollout_threads, count
        )
        rows.append(
            {
                "extractor": extractor,
                "nodes": nodes,
                "torch threads": label,
                "update threads": used,
                "steps/s": round(speed),
                "updates": f"{update_share:.0%}",
            }
        )
    return rows


def resolve_device(name: str) -> str:
    """SB3's ``auto``, spelled out for the table: ``cuda`` where there is one, else ``cpu``."""
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def rows_for(
    nodes: int,
    extractor: str,
    device: str,
    n_envs: int,
    steps: int,
    env_speed: float,
    rollout_threads: int,
    vec_envs: tuple[str, ...] = VEC_ENVS,
    epochs: int = PPO_DEFAULTS["n_epochs"],
) -> dict[str, Any]:
    """One table row: both vector envs on one configuration."""
    row: dict[str, Any] = {
        "extractor": extractor,
        "nodes": nodes,
        "device": device,
        "n_envs": n_envs,
        "epochs": epochs,
    }
    for vec_env in vec_envs:
        speed, update_share, threads = throughput(
            extractor, nodes, vec_env, steps, device, n_envs, rollout_threads, epochs=epochs
        )
        row[f"{vec_env} steps/s"] = round(speed)
        row[f"{vec_env} updates"] = f"{update_share:.0%}"
    row["raw env steps/s"] = round(env_speed)
    row["torch threads"] = threads
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8_192, help="training steps per run")
    parser.add_argument(
        "--devices", default="auto", help="comma-separated torch devices of the policy: cpu, cuda"
    )
    parser.add_argument(
        "--n-envs",
        default=str(RunConfig.n_envs),
        help="comma-separated env counts (default: placerl's)",
    )
    parser.add_argument("--extractors", default=",".join(EXTRACTORS))
    parser.add_argument(
        "--epochs",
        default="2,4",
        help="comma-separated PPO epoch counts; at other than placerl's 2 the "
        "learning rate is scaled to match (4 epochs: 1e-3)",
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="graph sizes (nodes)")
    parser.add_argument(
        "--vec-envs",
        default=",".join(VEC_ENVS),
        help="comma-separated vector envs: dummy (in process), subproc",
    )
    parser.add_argument(
        "--rollout-threads",
        type=int,
        default=1,
        help="torch threads while collecting rollouts (0: as in updates)",
    )
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="processes kept busy beside the runs (a shared machine); compares "
        "thread settings instead of vector envs",
    )
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    devices = [resolve_device(d) for d in args.devices.split(",")]
    env_counts = [int(n) for n in args.n_envs.split(",")]
    epoch_counts = [int(e) if e.strip().isdigit() else 0 for e in args.epochs.split(",")]
    if min(epoch_counts) < 1:
        parser.error(f"--epochs must be counts of at least 1, got {args.epochs}")
    if args.busy:
        epoch_counts = [PPO_DEFAULTS["n_epochs"]]  # --busy compares thread settings
    sizes, extractors = [int(n) for n in args.sizes.split(",")], args.extractors.split(",")
    # untimed, per device, extractor and size: compiles the numba kernels (cached after),
    # starts CUDA and builds oneDNN's kernels for the shapes a run meets (without it the
    # LSTM's first 8,192 steps at 100 nodes ran at 0.8x its later speed)
    for device, extractor, nodes in itertools.product(devices, extractors, sizes):
        throughput(extractor, nodes, VEC_ENVS[0], 1024, device, env_counts[0])
    rows, start = [], time.perf_counter()
    with busy_cores(args.busy):
        for nodes in sizes:
            env_speed = raw_env_speed(nodes)
            for extractor in extractors:
                for device in devices:
                    for n_envs, epochs in itertools.product(env_counts, epoch_counts):
                        if args.busy:
                            new = busy_rows(nodes, extractor, device, n_envs, args.steps)
                        else:
                            new = [
                                rows_for(
                                    nodes,
                                    extractor,
                                    device,
                                    n_envs,
                                    args.steps,
                                    env_speed,
                                    args.rollout_threads,
                                    tuple(args.vec_envs.split(",")),
                                    epochs,
                                )
                            ]
                        rows += new
                        print(*new, sep="\n", flush=True)
    options = "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name in (
            "steps",
            "threads",
            "devices",
            "n_envs",
            "extractors",
            "epochs",
            "sizes",
            "vec_envs",
            "rollout_threads",
            "busy",
        )
        if getattr(args, name) != parser.get_default(name)
    )
    note = (
        f"Command: `python benchmarks/bench_training_speed.py{options}` ({args.steps} steps "
        f"per run; {time.perf_counter() - start:.0f} s in all). MaskablePPO with placerl's "
        "defaults (1,024 steps per rollout split over the envs, minibatches of 256, "
        f"{PPO_DEFAULTS['n_epochs']} epochs at a learning rate of "
        f"{PPO_DEFAULTS['learning_rate']:g}"
        + "".join(
            f"; rows of {e} epochs at {epoch_switch(e)['learning_rate']:g}"
            for e in epoch_counts
            if epoch_switch(e)
        )
        + "), updates included; `updates`: their share of the training time."
    )
    if args.busy:
        note += f" {args.busy} other process(es) kept a core busy throughout; envs in process."
    name = (
        "training_speed"
        + ("_busy" if args.busy else "")
        + ("_n_envs" if args.n_envs != parser.get_default("n_envs") else "")
    )
    text = f"{note}\n\n{markdown_table(rows)}\n"
    write_results(name, rows, args.out, config=args, markdown=text)
    print(f"\n{text}")


if __name__ == "__main__":
    main()
