"""The training figures: every reference line inside the learning curve's axes."""

from __future__ import annotations

import matplotlib.colors
import matplotlib.figure
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from placerl.figures import plot_learning_curve, runtime_limits
from placerl.results import GraphOutcome, TrainResult


def _result(curve_ms: list[float], baselines_ms: dict[str, float]) -> TrainResult:
    outcome = GraphOutcome(
        graph="layered_100",
        final_runtime=curve_ms[-1] / 1e3,
        sampled_runtime=curve_ms[-1] / 1e3,
        best_runtime=min(curve_ms) / 1e3,
        best_placement=[0],
        baselines={k: v / 1e3 for k, v in baselines_ms.items()},
    )
    curve = [
        {"step": 512 * i, "runtimes": [ms / 1e3], "wall_s": float(i)}
        for i, ms in enumerate(curve_ms)
    ]
    return TrainResult(config={}, graphs=[outcome], curve=curve, steps=512 * len(curve), timings={})


@pytest.fixture
def saved_axes(monkeypatch):
    """The axes of every figure saved during the test, recorded just before saving."""
    axes = []
    save = matplotlib.figure.Figure.savefig

    def recording_savefig(self, *args, **kwargs):
        axes.append(self.axes[0])
        return save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", recording_savefig)
    return axes


def test_learning_curve_shows_baselines_below_and_above_the_curve(tmp_path, saved_axes):
    # HEFT far below the policy's curve and single device far above it: both must be visible.
    path = plot_learning_curve(
        _result([5.0, 5.1, 5.05], {"heft": 3.0, "single_device": 9.0}), tmp_path / "curve.png"
    )
    assert path.stat().st_size > 0
    low, high = saved_axes[0].get_ylim()
    assert low < 3.0 and high > 9.0
    assert saved_axes[0].get_yscale() == "log"  # 3x apart: linear would flatten the curve


def test_a_baseline_the_policy_matches_stays_visible(tmp_path, saved_axes):
    plot_learning_curve(_result([4.0, 4.0], {"heft": 4.0, "m_etf": 4.5}), tmp_path / "flat.png")
    ax = saved_axes[0]
    low, high = ax.get_ylim()
    assert low < 4.0 < high and ax.get_yscale() == "linear"
    policy, *baselines = ax.get_lines()
    assert [line.get_label() for line in baselines] == ["heft, layered_100", "m_etf, layered_100"]
    colours = {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()}
    assert len(colours) == 3  # one colour per line when there is one graph
    assert all(line.get_zorder() > policy.get_zorder() for line in baselines)


@given(st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=20))
@example([5e-324])  # a subnormal: its 8% pad underflows to zero
@example([1e6, 1e6 + 1.1641532182693481e-10])  # a span of one float step at 1e6
def test_runtime_limits_hold_every_value_strictly(values):
    low, high = runtime_limits(values)
    assert all(low < v < high for v in values)


@given(st.lists(st.floats(1e-6, 1e6), min_size=1, max_size=20))
def test_log_runtime_limits_hold_every_value_strictly_and_stay_positive(values):
    low, high = runtime_limits(values, log=True)
    assert low > 0 and all(low < v < high for v in values)


def test_runtime_limits_margin():
    assert runtime_limits([1.0, 2.0], margin=0.1) == pytest.approx((0.9, 2.1))


def test_the_best_found_so_far_is_a_line_of_its_own(tmp_path, saved_axes):
    # A search recipe: the greedy pass stays at its start while its episodes find better.
    result = _result([7.0, 7.0, 7.0], {"heft": 7.7})
    for point, best in zip(result.curve, [7.0, 6.9, 6.8], strict=True):
        point["best"] = [best / 1e3]
    plot_learning_curve(result, tmp_path / "search.png")
    lines = {line.get_label(): line for line in saved_axes[0].get_lines()}
    assert list(lines["best found so far, layered_100"].get_ydata()) == [7.0, 6.9, 6.8]
    assert saved_axes[0].get_ylim()[0] < 6.8


def _op_bars(ax):
    """The op bars of a timeline (transfers and communication are thinner or grey)."""
    return [
        p
        for p in ax.patches
        if abs(p.get_height() - 0.55) < 1e-9
        and p.get_facecolor()[:3] != matplotlib.colors.to_rgb("0.6")
    ]


def test_the_timeline_draws_every_op_on_its_device_within_the_step(tmp_path, saved_axes):
    from placerl.baselines import place
    from placerl.figures import plot_timeline
    from placerl.sim import simulate

    graph, cluster = "synthetic:layered?n=30&seed=0", "placeto?n_devices=3"
    placement = place("best_of", graph, cluster)
    result = simulate(graph, placement, cluster)
    plot_timeline(graph, placement, cluster, "step_time", tmp_path / "t.png")
    (ax,) = saved_axes
    bars = _op_bars(ax)
    assert len(bars) == 30
    rows = sorted(round(b.get_y() + b.get_height() / 2) for b in bars)
    assert rows == sorted(placement.tolist())
    assert max(b.get_x() + b.get_width() for b in bars) == pytest.approx(1e3 * result.runtime)
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "gpu:0 (gpu)",
        "gpu:1 (gpu)",
        "gpu:2 (gpu)",
    ]
    assert any(list(line.get_xdata()) == [1e3 * result.runtime] * 2 for line in ax.get_lines())
    assert ax.get_xlim()[1] > 1e3 * result.runtime  # the step-time line inside the axes
    assert (tmp_path / "t.png").is_file()


def test_under_pipeline_the_timeline_stacks_each_devices_load(tmp_path, saved_axes):
    from placerl.baselines import place
    from placerl.figures import plot_timeline
    from placerl.sim import simulate

    graph, cluster = "synthetic:chain?n=12&seed=8", "homogeneous?n_devices=3"
    placement = place("tarnawski_dp", graph, cluster, "pipeline")
    result = simulate(graph, placement, cluster, "pipeline")
    plot_timeline(graph, placement, cluster, "pipeline", tmp_path / "p.png")
    (ax,) = saved_axes
    bars = _op_bars(ax)
    assert len(bars) == 12
    for device in range(3):
        mine = [b.get_width() for b in bars if round(b.get_y() + 0.275) == device]
        assert sum(mine) == pytest.approx(1e3 * result.busy[device])
    assert any(list(line.get_xdata()) == [1e3 * result.runtime] * 2 for line in ax.get_lines())
