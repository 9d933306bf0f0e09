"""Does PPO add to the warm start? Greedy and sampled curves after cloning, per PPO setting.

Each run clones ``best_of`` (the best classic placement of the graph), then trains MaskablePPO
for ``--steps`` steps, evaluating the greedy policy every 1,024 steps and recording the mean
runtime of the episodes PPO sampled in each rollout. Variants: placerl's defaults without and
with :class:`~placerl.agents.callbacks.Rollback`, and the usual remedies for a collapse after a
warm start (a lower learning rate, a KL target, no advantage normalization, a small value
coefficient, separate actor and critic extractors, Monte Carlo advantages, a dense reward,
rollouts aligned with episodes).

    python benchmarks/bench_fine_tuning.py                    # 2 graphs x 2 seeds x variants
    python benchmarks/bench_fine_tuning.py --variants default,rollback --seeds 3

Results: ``benchmarks/results/fine_tuning.{json,md,png}``: per variant the greedy runtime at
the start, the end and its worst point, over the start (below 1: better than the clone), and
the sampled episodes' mean runtime in the first and last fifth of training.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPHS = {
    "inception_v3_200": ("zoo:inception_v3?max_nodes=200", "gpu8_nvlink?n_devices=4"),
    "layered_100": ("synthetic:layered?n=100&seed=0", "placeto?n_devices=4"),
}
DENSE = {"reward": "normalized_delta", "reference": "best_of"}
#: name -> (options over the base run, hyperparameters). The options: ``rollback``
#: (``agent.rollback``), ``env`` (fields over the construct env's) and ``align``.
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "default": ({"rollback": False}, {}),
    "rollback": ({"rollback": True}, {}),
    "lr_3e-4": ({"rollback": False}, {"learning_rate": 3e-4}),
    "target_kl_0.01": ({"rollback": False}, {"target_kl": 0.01}),
    "no_advantage_norm": ({"rollback": False}, {"normalize_advantage": False}),
    "vf_coef_0.05": ({"rollback": False}, {"vf_coef": 0.05}),
    "separate_extractors": (
        {"rollback": False},
        {"policy_kwargs": {"share_features_extractor": False}},
    ),
    "gae_lambda_1": ({"rollback": False}, {"gae_lambda": 1.0}),
    "dense_reward": ({"rollback": False, "env": DENSE}, {}),
    "episode_rollouts": ({"rollback": False, "align": True}, {}),
}


class SampledRuntime(BaseCallback):
    """The mean runtime of the episodes each rollout finished."""

    def __init__(self) -> None:
        super().__init__()
        self.means: list[float] = []
        self._runtimes: list[float] = []

    def _on_step(self) -> bool:
        self._runtimes += [i["runtime"] for i in self.locals["infos"] if "placement" in i]
        return True

    def _on_rollout_end(self) -> None:
        if self._runtimes:
            self.means.append(float(np.mean(self._runtimes)))
            self._runtimes = []


def run(graph: str, variant: str, seed: int, steps: int) -> dict[str, Any]:
    """One fine-tuning run; runtimes relative to the greedy clone's."""
    spec, cluster = GRAPHS[graph]
    options, hyperparams = VARIANTS[variant]
    options = dict(options)
    if options.pop("align", False):  # each env's rollout is whole episodes
        from placerl.graph import load_graph

        hyperparams = {**hyperparams, "n_steps": load_graph(spec).num_nodes}
    sampled = SampledRuntime()
    # The groups' bare defaults (the construct env, the GNN), not the main job's recipe.
    env = EnvGroup(**options.pop("env", {}))
    agent = AgentGroup(
        warm_start="best_of", rollback=options.pop("rollback"), hyperparams=hyperparams
    )
    if options:
        raise ValueError(f"variant {variant!r}: unknown options {sorted(options)}")
    result = train(
        {
            "graph": {"spec": spec},
            "cluster": {"spec": cluster},
            "order": OrderGroup(),
            "env": env,
            "agent": agent,
            "total_steps": steps,
            "eval_every": 1_024,
            "keep_best": False,
            "seed": seed,
            "eval_samples": 0,
            "baselines": ["heft"],
            "progress_bar": False,
            "resume": False,
        },
        callbacks=[sampled],
    )
    greedy = np.array([c["runtimes"][0] for c in result.curve])
    start, fifth = greedy[0], max(1, len(sampled.means) // 5)
    return {
        "graph": graph,
        "variant": variant,
        "seed": seed,
        "greedy_end": round(float(greedy[-1] / start), 4),
        "greedy_worst": round(float(greedy.max() / start), 4),
        "greedy_best": round(float(greedy.min() / start), 4),
        "sampled_first": round(float(np.mean(sampled.means[:fifth])) / start, 4),
        "sampled_last": round(float(np.mean(sampled.means[-fifth:])) / start, 4),
        "heft": round(float(result.graphs[0].baselines["heft"] / start), 4),
        "curve": [round(float(g / start), 4) for g in greedy],
        "sampled_curve": [round(m / start, 4) for m in sampled.means],
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per graph and variant: means over seeds, and how many runs ended worse than the clone."""
    out = []
    for graph, variant in dict.fromkeys((r["graph"], r["variant"]) for r in rows):
        group = [r for r in rows if r["graph"] == graph and r["variant"] == variant]
        mean = {
            k: round(float(np.mean([r[k] for r in group])), 3)
            for k in ("greedy_end", "greedy_worst", "greedy_best", "sampled_first", "sampled_last")
        }
        worse = sum(r["greedy_end"] > 1 + 1e-9 for r in group)
        out.append(
            {
                "graph": graph,
                "variant": variant,
                "runs": len(group),
                **mean,
                "ended_worse": f"{worse}/{len(group)}",
            }
        )
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Greedy curves of ``default`` and ``rollback`` per graph (seed means)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(GRAPHS), figsize=(6 * len(GRAPHS), 4), squeeze=False)
    for ax, graph in zip(axes[0], GRAPHS, strict=True):
        for variant in ("default", "rollback"):
            curves = [r["curve"] for r in rows if r["graph"] == graph and r["variant"] == variant]
            if curves:
                size = min(map(len, curves))
                mean = np.mean([c[:size] for c in curves], axis=0)
                ax.plot(np.arange(size) * 1_024, mean, label=f"{variant} (greedy)")
        ax.axhline(1.0, color="grey", linestyle=":", label="the clone")
        ax.set(title=graph, xlabel="env steps", ylabel="greedy runtime / the clone's")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20_480)
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    begin, rows = time.perf_counter(), []
    for graph in args.graphs.split(","):
        for variant in args.variants.split(","):
            for seed in range(args.seeds):
                rows.append(run(graph, variant, seed, args.steps))
                print({k: v for k, v in rows[-1].items() if "curve" not in k}, flush=True)
    out = Path(args.out)
    plot(rows, out / "fine_tuning.png")
    command = "python benchmarks/bench_fine_tuning.py " + " ".join(sys.argv[1:])
    table = markdown_table(summarize(rows))
    text = (
        f"Command: `{command.strip()}` ({time.perf_counter() - begin:.0f} s). Greedy "
        f"runtime over the cloned policy's (below 1: PPO improved on the warm start), "
        f"{args.steps} steps per run.\n\n{table}\n"
    )
    write_results("fine_tuning", rows, out, config=args, markdown=text)
    print(f"\n{table}")


if __name__ == "__main__":
    main()
