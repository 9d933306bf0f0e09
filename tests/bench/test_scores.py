"""PlaceBench's scoring rule: normalized to the best constructive placer, gaps to the lower
bound and the DP optimum, infeasible placements without a score."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from placerl.baselines import PLACERS, InfeasiblePlacementWarning, place
from placerl.baselines.references import reference
from placerl.bench import load_suite
from placerl.bench.case import Case
from placerl.bench.scores import (
    CONSTRUCTIVE,
    Baseline,
    CaseScore,
    MeanScore,
    geometric_mean_score,
    score_placement,
)
from placerl.errors import ClusterError, ConfigError, PlacementError

LAYERED = "synthetic:layered?n=20&seed=1"
CLUSTER = "placeto?n_devices=3"
#: 6e7 bytes per device: the constructive placers fit the graph's 1.3e8 bytes over three
#: devices, one device cannot hold it.
SMALL = "placeto?n_devices=3&memory=6e7"
#: 6e4 bytes: no node fits anywhere, so no placer places the graph at all.
TINY = "placeto?n_devices=3&memory=6e4"
BERT = "msr:bert_l-3_inference"


def _case(graph: str = LAYERED, cluster: str = CLUSTER, objective: str = "step_time") -> Case:
    return Case(
        name="tiny/layered",
        tier="tiny",
        split="test",
        graph=graph,
        cluster=cluster,
        objective=objective,
    )


def _placed(placer: str, case: Case) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasiblePlacementWarning)  # scored below
        return place(placer, case.graph, case.cluster, case.objective)


def _runtimes(case: Case) -> dict[str, float]:
    return {p: reference(case.graph, case.cluster, case.objective, p).runtime for p in CONSTRUCTIVE}


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_each_constructive_placer_scores_the_best_runtime_over_its_own(objective):
    case = _case(objective=objective)
    runtimes = _runtimes(case)
    best = min(runtimes.values())
    for placer in CONSTRUCTIVE:
        scored = score_placement(case, _placed(placer, case))
        assert scored.feasible and scored.why == ""
        assert scored.runtime == runtimes[placer]
        assert scored.score == pytest.approx(best / runtimes[placer], rel=1e-12)
        assert scored.score <= 1
        assert scored.reference.runtime == best


def test_heft_scores_exactly_one_when_it_is_the_best_constructive_placer():
    case = _case()
    assert min(_runtimes(case).values()) == _runtimes(case)["heft"]  # the premise
    scored = score_placement(case, _placed("heft", case))
    assert scored.score == 1.0
    assert scored.reference == Baseline("heft", scored.runtime, True)  # first of the ties


def test_a_placement_that_does_not_fit_has_no_score():
    case = _case(cluster=SMALL)
    scored = score_placement(case, np.zeros(20, dtype=int))
    assert (scored.feasible, scored.why, scored.score) == (False, "memory", None)
    assert (scored.gap, scored.optimum_gap) == (None, None)
    assert 0 < scored.runtime < math.inf  # the simulated runtime, not a penalty
    assert scored.reference.feasible  # the constructive placers fit on this cluster


def test_a_graph_no_placer_can_place_has_no_reference():
    scored = score_placement(_case(cluster=TINY), np.zeros(20, dtype=int))
    assert (scored.feasible, scored.why, scored.score, scored.reference) == (
        False,
        "memory",
        None,
        None,
    )


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_every_placer_is_at_or_above_the_lower_bound(objective):
    case = _case(objective=objective)
    placers = [p.name for p in PLACERS.values() if p.standalone and p.decides == "device"]
    assert set(CONSTRUCTIVE) <= set(placers)
    for placer in placers:
        scored = score_placement(case, _placed(placer, case))
        assert scored.lower_bound > 0, placer
        assert scored.gap >= -1e-12, placer


def test_the_dp_placement_is_the_pipeline_optimum():
    case = _case(objective="pipeline")
    scored = score_placement(case, _placed("tarnawski_dp", case))
    assert scored.optimum == scored.runtime
    assert scored.optimum_gap == pytest.approx(0, abs=1e-12)
    assert scored.score > 1  # on this graph the DP beats every constructive placer
    heft = score_placement(case, _placed("heft", case))
    assert heft.optimum == scored.optimum and heft.optimum_gap > 0


def test_an_msr_graph_under_pipeline():
    case = _case(BERT, BERT, "pipeline")
    runtimes = _runtimes(case)
    best = min(runtimes, key=runtimes.get)
    dp = score_placement(case, _placed("tarnawski_dp", case))
    assert dp.optimum_gap == pytest.approx(0, abs=1e-12)
    assert dp.score == pytest.approx(runtimes[best] / dp.runtime) and dp.score > 1
    assert dp.gap >= 0 and dp.reference.placer == best
    assert score_placement(case, _placed(best, case)).score == 1.0


def test_step_time_has_no_optimum():
    scored = score_placement(_case(), _placed("heft", _case()))
    assert (scored.optimum, scored.optimum_gap) == (None, None)


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        (np.zeros(19, dtype=int), r"case 'tiny/layered': placement has shape \(19,\); expected"),
        (np.full(20, 3), r"case 'tiny/layered': .* on device 3; the cluster has devices 0..2"),
        (np.full(20, -1), r"case 'tiny/layered': .* on device -1"),
        (np.full(20, 0.5), r"case 'tiny/layered': placement has non-integer device 0.5"),
        (["a"] * 20, r"case 'tiny/layered': placement must hold integer device indices"),
    ],
)
def test_a_bad_placement_is_refused_naming_the_case(placement, message):
    with pytest.raises(PlacementError, match=message):
        score_placement(_case(), placement)


def test_a_case_whose_cluster_does_not_load_is_named():
    with pytest.raises(ClusterError, match=r"case 'tiny/layered': n_devices must be"):
        score_placement(_case(cluster="placeto?n_devices=0"), np.zeros(20, dtype=int))


def test_scores_are_plain_json_and_read_back():
    case = _case(cluster=SMALL, objective="pipeline")
    for placement in (_placed("heft", case), np.zeros(20, dtype=int)):
        scored = score_placement(case, placement)
        data = json.loads(json.dumps(scored.to_dict(), allow_nan=False))
        assert CaseScore.from_dict(data) == scored
    with pytest.raises(ConfigError, match="not a case score: missing 'runtime'"):
        CaseScore.from_dict({"case": "x"})


def _score(score: float | None) -> CaseScore:
    return CaseScore(
        "c",
        1.0,
        score is not None,
        "" if score else "memory",
        score,
        Baseline("heft", 1.0),
        0.5,
        None,
    )


def test_the_geometric_mean_counts_infeasible_cases_apart():
    mean = geometric_mean_score([_score(2.0), _score(0.5), _score(None)])
    assert mean.value == pytest.approx(1.0)
    assert (mean.cases, mean.infeasible, mean.wins, mean.losses) == (3, 1, 1, 1)
    assert mean.ci_low <= mean.value <= mean.ci_high
    assert mean.label().endswith("(1 infeasible)")
    assert json.loads(json.dumps(mean.to_dict(), allow_nan=False))["infeasible"] == 1


def test_the_geometric_mean_of_one_case_has_no_interval():
    mean = geometric_mean_score([_score(1.25)])
    assert (mean.value, mean.ci_low, mean.ci_high) == (pytest.approx(1.25), None, None)
    assert mean.note and mean.label() == "1.250"


def test_the_geometric_mean_when_nothing_fits():
    mean = geometric_mean_score([_score(None), _score(None)])
    assert mean == MeanScore(None, 2, 2, note="no placement fits")
    assert mean.label() == "all 2 infeasible"


def test_the_geometric_mean_of_real_scores():
    case = _case()
    scores = [score_placement(case, _placed(p, case)) for p in CONSTRUCTIVE]
    expected = math.exp(np.mean(np.log([s.score for s in scores])))
    assert geometric_mean_score(scores).value == pytest.approx(expected)


def test_the_geometric_mean_refuses_no_cases_or_other_values():
    with pytest.raises(ConfigError, match="at least one case score, got none"):
        geometric_mean_score([])
    with pytest.raises(ConfigError, match=r"takes CaseScore values .* got float"):
        geometric_mean_score([1.5])


def test_the_pipeline_optimum_counts_only_where_the_dp_proved_it():
    from placerl.baselines.references import reference
    from placerl.bench.scores import OPTIMUM, pipeline_optimum
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    dp = OPTIMUM[-1]
    graph, cluster = load_graph("msr:bert_l-3_inference"), load_cluster("msr:bert_l-3_inference")
    proven = reference(graph, cluster, "pipeline", dp)
    assert proven.optimal and pipeline_optimum(graph, cluster) == proven.runtime
    stopped = reference(graph, cluster, "pipeline", f"{dp}?max_pairs=1")
    assert not stopped.optimal  # a limit stopped it: its split is only the best found


def test_a_tiny_case_optimum_is_the_milp_s_over_every_placement():
    """On chain-n24-s9 a non-contiguous split beats the DP's best contiguous one; no search
    beats the MILP's."""
    from placerl.baselines import solve
    from placerl.bench.scores import pipeline_optimum
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    case = load_suite("placebench-v1").case("tiny/chain-n24-s9")
    graph, cluster = load_graph(case.graph), load_cluster(case.cluster)
    optimum = pipeline_optimum(graph, cluster)
    dp = solve("tarnawski_dp", graph, cluster, "pipeline").runtime
    search = solve(
        "local_search", graph, cluster, "pipeline", init="best_of", max_evaluations=3000, seed=0
    ).runtime
    assert optimum < dp and optimum <= search * (1 + 1e-12)
