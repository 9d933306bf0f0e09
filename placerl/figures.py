"""Figures of a training run, saved as PNG: the learning curve and the best placement."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from placerl.train import TrainResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curve(result: TrainResult, path: str | Path) -> Path:
    """Greedy evaluation runtime against steps, per graph, with the baselines as lines.

    Returns:
        The PNG's path.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [point["step"] for point in result.curve]
    for g, outcome in enumerate(result.graphs[:8]):  # more lines say nothing
        runtimes = [1e3 * point["runtimes"][g] for point in result.curve]
        line = ax.plot(steps, runtimes, marker=".", label=f"policy, {outcome.graph}")[0]
        for k, (name, runtime) in enumerate(sorted(outcome.baselines.items())):
            style = ("--", ":", "-.")[k % 3]
            ax.axhline(1e3 * runtime, color=line.get_color(), alpha=0.5, linestyle=style,
                       label=f"{name}, {outcome.graph}")  # fmt: skip
    ax.set_xlabel("env steps")
    ax.set_ylabel("runtime (ms)")
    ax.set_title("greedy policy runtime during training")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_best_placement(result: TrainResult, path: str | Path, *, graph: int = 0) -> Path:
    """The best placement of ``graph`` drawn by device (the env's ``rgb_array`` rendering).

    Returns:
        The PNG's path.
    """
    from placerl.envs.render import render_rgb
    from placerl.train import make_env

    config = result.config
    arguments = {"graph": config["graph"], "cluster": config["cluster"],
                 "order": config["order"], "objective": config["objective"],
                 **config["env_kwargs"]}  # fmt: skip
    env = make_env(arguments, config["env"])
    env.reset(seed=0, options={"graph": graph})
    placement = np.asarray(result.graphs[graph].best_placement, dtype=np.int64)
    image = render_rgb(env.case, placement, env.cluster)
    plt = _pyplot()
    path = Path(path)
    plt.imsave(path, image)
    return path
