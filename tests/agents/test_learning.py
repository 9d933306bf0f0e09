"""Policies learn: the sanity problems' known optima, an identity-style check, and (slow) a
real graph where a trained policy beats random and round-robin placements."""

import numpy as np
import pytest

from placerl.agents.episodes import rollout
from placerl.agents.factory import make_agent
from placerl.cluster import homogeneous
from placerl.envs import PlacementEnv
from placerl.envs.sanity import SANITY_PROBLEMS, SanityEnv
from placerl.graph import CompGraph

#: A small budget that all three seeds meet (measured: 768-1,920 steps on ``branches``, at
#: the 4 epochs ``FAST`` pins).
BUDGET, CHUNK = 3_072, 128
FAST = {"n_steps": 128, "batch_size": 64, "learning_rate": 3e-3, "ent_coef": 0.0, "n_epochs": 4}


def _steps_to_optimum(problem: str, extractor: str, seed: int) -> int | None:
    model = make_agent("maskable_ppo", SanityEnv(problem), extractor, seed=seed, **FAST)
    optimum = SANITY_PROBLEMS[problem].optimal_runtime
    while model.num_timesteps < BUDGET:
        model.learn(CHUNK, reset_num_timesteps=False)
        if rollout(model, SanityEnv(problem)).runtime <= optimum * (1 + 1e-9):
            return model.num_timesteps
    return None


# Seed 0 checks that each extractor learns each problem; seeds 1 and 2, that it was not luck
# (slow: they double the suite's learning time and have never failed alone).
@pytest.mark.parametrize(
    "seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("extractor", ["gnn", "lstm"])
@pytest.mark.parametrize("problem", sorted(SANITY_PROBLEMS))
def test_reaches_the_known_optimum(problem, extractor, seed):
    assert _steps_to_optimum(problem, extractor, seed) is not None


def test_identity_style_the_fast_device_is_learned():
    """SB3's identity test in placement form: each op runs 10x faster on one device kind, and
    the ``duration`` column shows which; the reward threshold is the optimum's."""
    from placerl.cluster import Cluster, Device
    from placerl.graph import CompGraph

    nodes = [
        {
            "name": f"op{i}",
            "cost": 1e-3,
            "costs": {"a": 1e-3 if i % 2 else 1e-2, "b": 1e-2 if i % 2 else 1e-3},
        }
        for i in range(6)
    ]
    graph = CompGraph(nodes, [(f"op{i}", f"op{i + 1}") for i in range(5)], name="identity")
    cluster = Cluster((Device("A", kind="a"), Device("B", kind="b")), comm_model="ideal")
    env = PlacementEnv(graph=graph, cluster=cluster, reward="improvement")
    model = make_agent("maskable_ppo", env, "mlp", seed=0, **FAST)
    model.learn(2_048)
    result = rollout(model, PlacementEnv(graph=graph, cluster=cluster, reward="improvement"))
    np.testing.assert_array_equal(result.placement, [1, 0, 1, 0, 1, 0])
    assert result.episode_return >= 0.9 * (1 - 6e-3 / 3.3e-2)


@pytest.mark.slow
@pytest.mark.parametrize("extractor", ["gnn", "lstm"])
def test_trained_policy_beats_random_and_round_robin(extractor):
    """The plain training recipe (the groups' bare defaults, not the main job's: the construct
    env, no warm start, 8 envs, greedy evaluations, the best evaluation's weights kept) on an
    80-node graph."""
    from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
    from placerl.train import train

    result = train(
        {
            "graph": {"spec": "synthetic:layered?n=80&seed=0"},
            "cluster": {"spec": "placeto?n_devices=4"},
            "order": OrderGroup(),
            "env": EnvGroup(),
            "agent": AgentGroup(extractor=extractor, warm_start=None),
            "total_steps": 20_000,
            "seed": 0,
            "eval_samples": 0,
            "baselines": ["random", "round_robin"],
            "progress_bar": False,
            "resume": False,
        }
    )
    (outcome,) = result.graphs
    for placer, runtime in outcome.baselines.items():
        assert outcome.final_runtime < runtime, placer


def five_chains() -> CompGraph:
    """A fork, five chains of 3 to 7 equal 1 ms ops, a join: 27 nodes. On 3 devices the
    25 chain ops need at least 9 ms after the fork (ceil(25 / 3) whole ops), so no placement
    runs under 11 ms; {7}, {6, 3}, {5, 4} reaches it, as list scheduling does."""
    op = {"cost": 1e-3, "out_bytes": 1e4}
    nodes, edges = [{"name": "fork", **op}, {"name": "join", **op}], []
    for length in range(3, 8):
        names = [f"chain{length}/op{k}" for k in range(length)]
        nodes += [{"name": name, **op} for name in names]
        edges += list(zip(["fork", *names], [*names, "join"], strict=True))
    return CompGraph(nodes, edges, name="five-chains")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_ppo_at_its_defaults_learns_the_five_chain_bin_packing(seed):
    """The issue's sanity check, 50k steps at make_agent's defaults: within 5% of the
    optimum (list scheduling's placement). In topological order the policy settles on the
    earliest finish of each node (HEFT's column), 1.18x: it assigns the chains before it
    meets the long ones; critical-path order (the ``scratch`` recipe's) meets them first."""
    from placerl.baselines import solve

    graph, cluster = five_chains(), homogeneous(3)
    optimum = solve("heft", graph, cluster).runtime
    assert 11e-3 <= optimum < 11.01e-3  # the bound, and list scheduling meets it
    env = PlacementEnv(graph=graph, cluster=cluster, order="critical_path")
    model = make_agent("maskable_ppo", env, "gnn", seed=seed)
    model.learn(50_000)
    learned = rollout(model, PlacementEnv(graph=graph, cluster=cluster, order="critical_path"))
    assert learned.runtime <= 1.05 * optimum
