"""``best_of``: run several placers and keep the placement that scores best.

The start of a learned placer (the warm start it clones, the placement a refining env starts
from) should be the best the classic placers offer on *this* graph: which one wins changes
from graph to graph (HEFT on one, m-ETF on another, Tarnawski's contiguous split on a third,
also under ``step_time``), so a fixed choice leaves a policy in a worse basin than needed.
"""

from __future__ import annotations

import warnings

from placerl.errors import ConfigError, PlaceRLError

from .api import PLACERS, Solution, register_placer
from .problem import Problem

_NAME = "best_of"

#: The default candidates: every constructive placer that applies to any device problem, and one
#: device (the best where every split pays more in transfers than it gains). The
#: DP's pair budget (about 5 s) bounds its cost on large graphs and, unlike a clock, gives the
#: same split on any machine; when it stops, it returns its best split so far.
DEFAULT_CANDIDATES = "single_device,heft,m_etf,m_sct,m_topo,tarnawski_dp?max_pairs=50000000"


@register_placer(_NAME, optimizes="any")
def best_of(problem: Problem, *, placers: str = DEFAULT_CANDIDATES) -> Solution:
    """The best placement of several placers under the problem's objective (feasible first).

    A candidate that cannot place the problem (it raises, e.g. a placer for one device kind)
    is skipped and named in ``info["skipped"]``; a candidate's warnings (the DP stopping at its
    pair budget) are kept in ``info["warnings"]`` rather than printed; ``info["runtimes"]``
    holds every candidate's score and ``info["chosen"]`` the winner.

    Source: the portfolio starts of the learned placers (DOPPLER and Placeto warm-start or
    refine from a classic placer's placement; here the best of several).
    Complexity: the sum of the candidates' costs, plus one simulation per candidate.

    Args:
        problem: The problem.
        placers: Comma-separated placer specs (``heft,m_etf,local_search?init=heft``; in a
            spec string, a candidate can take one option, since ``&`` ends ``best_of``'s own).

    Raises:
        ConfigError: An empty list, an unknown placer or option, ``best_of`` itself, or no
            candidate that places the problem.
    """
    from .references import parse_placer

    specs = [spec.strip() for spec in str(placers).split(",") if spec.strip()]
    if not specs:
        raise ConfigError(f"{_NAME}: option 'placers' names no placer, got {placers!r}")
    parsed = [parse_placer(spec) for spec in specs]  # every spec checked before any work
    if any(name == _NAME for name, _ in parsed):
        raise ConfigError(f"{_NAME}: option 'placers' cannot name {_NAME!r} itself")
    runtimes, skipped, warned, best = {}, {}, {}, None
    for spec, (name, options) in zip(specs, parsed, strict=True):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # a limit hit: kept in info, not printed
                out = PLACERS[name].fn(problem, **options)
        except PlaceRLError as err:
            skipped[spec] = str(err)
            continue
        if caught:
            warned[spec] = "; ".join(str(w.message) for w in caught)
        placement = problem.model.check(out.placement if isinstance(out, Solution) else out)
        result = problem.model.evaluate(placement, check=False, times=False)
        runtimes[spec] = result.runtime
        key = (not result.feasible, result.runtime)
        if best is None or key < best[0]:
            best = (key, spec, placement)
    if best is None:
        raise ConfigError(f"{_NAME}: no candidate placed the problem: {skipped}")
    info = {"chosen": best[1], "runtimes": runtimes, "skipped": skipped, "warnings": warned}
    return Solution(best[2], info=info)
