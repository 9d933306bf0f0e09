"""Reference placements and runtimes, computed once and shared.

Rewards are normalized by a reference runtime (the best single device, HEFT, ...). Computing it
inside every env object would repeat a placer run per vector-env worker and per experiment, so
references come from one cache keyed by what determines them: the graph's fingerprint, the
cluster's fingerprint, the objective, the placer and its options (and the placerl version). The
cache lives in memory for this process and on disk under ``$PLACERL_CACHE/references/``
(written atomically, computed under a file lock), so N workers starting together and repeated
runs compute each reference once.

Example:
    >>> from placerl.baselines.references import reference
    >>> ref = reference("msr:bert24_inference", "msr:bert24_inference", "pipeline", "heft")
    >>> ref.runtime, ref.feasible, ref.placement[:4]          # doctest: +SKIP
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from placerl._io import atomic_write_text, cache_root, file_lock
from placerl._options import check_options
from placerl._spec import split_named
from placerl._version import __version__
from placerl.cluster import Cluster, load_cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph
from placerl.sim import parse_objective, penalized_runtime

from .api import PLACERS, InfeasiblePlacementWarning, solve

#: Bump when the meaning of a cached reference changes, to invalidate old files.
#: 2: ``optimal``. 3: the MILP solves in scaled time (exact where HiGHS's absolute
#: tolerances had cut off better splits).
CACHE_FORMAT = 3

#: In a training run's baseline spec, the env steps it trained (``RunConfig.baselines``).
STEPS = "{steps}"
#: In a training run's baseline spec, every simulation it made: an equal budget of calls.
CALLS = "{calls}"

_memory: dict[tuple[str, Any], Reference] = {}


@dataclass(frozen=True, eq=False)
class Reference:
    """A reference placement of one graph on one cluster under one objective.

    Attributes:
        placer: The placer's name.
        options: The placer's options.
        objective: The objective it was scored with.
        graph: Fingerprint of the graph.
        cluster: Fingerprint of the cluster.
        placement: One device index per node.
        runtime: Simulated runtime (seconds; max load under ``pipeline``).
        feasible: Whether the placement fits (memory, colocation, device kinds).
        score: The runtime rewards divide by: ``runtime`` when feasible, else the penalized
            runtime of :func:`placerl.sim.penalized_runtime`.
        optimal: Whether the placer proved the placement optimal within its model
            (``PlacementResult.optimal``: the DP and the MILP when no limit stopped them).
    """

    placer: str
    options: Mapping[str, Any]
    objective: str
    graph: str
    cluster: str
    placement: np.ndarray
    runtime: float
    feasible: bool
    score: float
    optimal: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form; :meth:`from_dict` reads it back."""
        return {
            "placer": self.placer,
            "options": dict(self.options),
            "objective": self.objective,
            "graph": self.graph,
            "cluster": self.cluster,
            "placement": self.placement.tolist(),
            "runtime": self.runtime,
            "feasible": self.feasible,
            "score": self.score,
            "optimal": self.optimal,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reference:
        """Inverse of :meth:`to_dict`."""
        try:
            keys = ("placer", "options", "objective", "graph", "cluster", "runtime", "feasible")
            fields = {key: data[key] for key in (*keys, "score")}
            fields["optimal"] = bool(data.get("optimal", False))
            placement = np.array(data["placement"], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"not a reference document: {err!r}") from None
        return cls(placement=placement, **fields)

    def __post_init__(self) -> None:
        # References are shared (memory cache, every env over the graph): never edited.
        self.placement.flags.writeable = False

    def check_matches(self, graph: CompGraph, cluster: Cluster, objective: str) -> None:
        """Raise unless this reference was computed for ``graph``, ``cluster`` and ``objective``.

        Raises:
            ConfigError: Naming what differs.
        """
        wrong = [
            what
            for what, ok in (
                ("graph", self.graph == graph.fingerprint()),
                ("cluster", self.cluster == cluster.fingerprint()),
                ("objective", self.objective == objective),
            )
            if not ok
        ]
        if wrong:
            raise ConfigError(
                f"the reference ({self.placer}, {self.objective}) was computed for another "
                f"{' and '.join(wrong)} than {graph.name!r} on {cluster.name!r} under {objective!r}"
            )


def resolve_budget(specs: Sequence[str], steps: int | None, calls: int | None = None) -> list[str]:
    """The placer specs with a training run's budget filled in, each at least 1 (a search
    given ``max_evaluations=0`` would have no limit): :data:`STEPS`, the env steps it
    trained, and :data:`CALLS`, every simulation it made (``TrainResult.simulator_calls``:
    training, evaluations, rollback checks, warm-start episodes, final rollouts). The one
    place the placeholders are read.

    Args:
        specs: Placer specs.
        steps: The steps trained; ``None`` for an evaluation, which trains none.
        calls: The run's simulations (``None``: unknown yet, checked as 1).

    Raises:
        ConfigError: ``steps`` is ``None`` and a spec holds a placeholder.
    """
    resolved = []
    for spec in specs:
        if steps is None and any(p in spec for p in (STEPS, CALLS)):
            raise ConfigError(
                f"baseline {spec!r}: {STEPS} and {CALLS} stand for the budget "
                "a training run spent (placerl-train); an evaluation trains "
                "none, so give a number"
            )
        counts = {STEPS: steps or 0, CALLS: calls if calls is not None else 1}
        for placeholder, count in counts.items():
            spec = spec.replace(placeholder, str(max(count, 1)))
        resolved.append(spec)
    return resolved


def placer_spec(name: str, **options: Any) -> str:
    """The spec of placer ``name`` with ``options``, written in Python as keyword arguments
    (the command line's ``name?key=value&...``), checked as :func:`parse_placer` checks one.

    Example: ``placer_spec("local_search", init="best_of", max_evaluations=STEPS)`` is
    ``"local_search?init=best_of&max_evaluations={steps}"``. Booleans are written
    ``true``/``false``, lists and tuples comma-joined, and a ``&`` or ``%`` inside a value
    (a nested spec with options of its own) percent-encoded, so that the query keeps it
    whole and ``parse_placer`` gives it back as written.

    Raises:
        ConfigError: As :func:`parse_placer`: an unknown placer or option, a value of the
            wrong type.
    """
    pairs = [
        f"{key}={quote(_spec_value(value), safe='?=,:/@{}')}" for key, value in options.items()
    ]
    spec = f"{name}?{'&'.join(pairs)}" if pairs else name
    parse_placer(resolve_budget([spec], 1, 1)[0])
    return spec


def _spec_value(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return str(bool(value)).lower()
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


def parse_placer(spec: str, extra: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """A placer spec ``name?option=value&...`` as (name, options), checked against the registry,
    with ``extra`` options beside the spec's (values a spec cannot hold, as a file path with
    ``=`` in it).

    Raises:
        ConfigError: Unknown placer (lists the known ones) or option (lists the placer's), or
            an option value of the wrong type (ranges are checked when the placer runs).
    """
    if not isinstance(spec, str):
        raise ConfigError(f"a placer spec must be a string like 'heft', got {spec!r}")
    name, options = split_named(spec, what="placer spec")
    options.update(extra or {})
    check_options(
        PLACERS[name].fn, options, what=f"placer {name!r}", error=ConfigError, keyword_only=True
    )
    return name, options


def cache_dir() -> Path:
    """Where references are cached on disk: ``$PLACERL_CACHE/references``."""
    return cache_root() / "references"


def reference(
    graph: CompGraph | str,
    cluster: Cluster | str,
    objective: str = "step_time",
    placer: str = "single_device",
    *,
    use_cache: bool = True,
) -> Reference:
    """The reference placement of ``placer`` for this graph, cluster and objective, cached.

    Args:
        graph: A graph or a graph spec.
        cluster: A cluster or a cluster spec.
        objective: A registered objective.
        placer: A placer spec: a name from :data:`~placerl.baselines.PLACERS`, optionally with
            options (``"local_search?time_limit=2"``).
        use_cache: Read and write the memory and disk caches (``False`` recomputes).

    Raises:
        ConfigError: Unknown objective, placer or option.
        PlacementError: The placer cannot place the graph at all.
    """
    graph, cluster = load_graph(graph), load_cluster(cluster)
    parse_objective(objective)
    if not isinstance(use_cache, bool):
        raise ConfigError(f"use_cache must be True or False, got {use_cache!r}")
    name, options = parse_placer(placer)
    options = {**PLACERS[name].options, **options}  # defaults spelled out: one entry per meaning
    if not use_cache:
        return _compute(graph, cluster, objective, name, options)
    key = _key(graph, cluster, objective, name, options)
    memory_key = (key, PLACERS[name].fn)  # a placer re-registered under the name is another
    if memory_key not in _memory:
        path = _path(key, name)
        with file_lock(path.with_suffix(".lock")):  # concurrent workers compute it once
            ref = _read(path)
            if ref is None:
                ref = _compute(graph, cluster, objective, name, options)
                atomic_write_text(path, json.dumps(ref.to_dict()))
        _memory[memory_key] = ref
    return _memory[memory_key]


def _compute(
    graph: CompGraph, cluster: Cluster, objective: str, name: str, options: dict[str, Any]
) -> Reference:
    """Run the placer and score its placement."""
    with warnings.catch_warnings():
        # An infeasible reference is legitimate (a graph no single device holds); it is
        # recorded in ``feasible`` and scored by the penalty instead of warned about.
        warnings.simplefilter("ignore", InfeasiblePlacementWarning)
        result = solve(name, graph, cluster, objective, **options)
    return Reference(
        placer=name,
        options=options,
        objective=objective,
        graph=graph.fingerprint(),
        cluster=cluster.fingerprint(),
        placement=result.placement.copy(),
        runtime=result.runtime,
        feasible=result.feasible,
        score=penalized_runtime(result.simulation, result.runtime),
        optimal=result.optimal,
    )


def clear_memory_cache() -> None:
    """Forget the references held in memory (the disk cache stays)."""
    _memory.clear()


def _key(graph: CompGraph, cluster: Cluster, objective: str, placer: str, options: dict) -> str:
    blob = {
        "graph": graph.fingerprint(),
        "cluster": cluster.fingerprint(),
        "objective": objective,
        "placer": placer,
        "options": options,
        "code": _code_fingerprint(PLACERS[placer].fn),
        "format": CACHE_FORMAT,
        "placerl": __version__,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


@functools.cache
def _package_sources() -> str:
    """A hash of the code that decides a reference: the placers and the simulator."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder in ("baselines", "sim"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _code_fingerprint(fn: Any) -> str:
    """What identifies the code of a reference: placerl's placers and simulator, and the placer
    function itself (a user's placer lives outside the package, and may change under its name).
    """
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):  # built in a notebook or by exec: its bytecode stands in
        code = getattr(fn, "__code__", None)
        source = repr((code.co_code, code.co_consts)) if code is not None else repr(fn)
    # Defaults are part of the code a lambda made in a loop runs. Closed-over values are not
    # hashed (they may be mutable state); a changed closure under one name needs a new name.
    bound = repr((getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)))
    own = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}:{source}:{bound}"
    return hashlib.sha256((_package_sources() + own).encode()).hexdigest()


def _path(key: str, placer: str) -> Path:
    return cache_dir() / f"{placer}-{key[:24]}.json"


def _read(path: Path) -> Reference | None:
    """The reference cached on disk, or ``None`` when absent or unreadable (then recomputed)."""
    try:
        return Reference.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
