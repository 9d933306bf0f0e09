"""``placebench-v1``: the cases of the benchmark, fixed in code.

Tiers (the split of each case is fixed here; :mod:`placerl.bench.guard` enforces it):

* ``tiny``: chains, fork-joins, series-parallel graphs and parallel chains of unequal length
  (a bin packing) of 12 to 40 nodes on 3 identical devices under ``pipeline``, where the MILP
  proves the optimum over every placement: a learned placer should reach it. Seeds 0-5
  train, 6-7 validation, 8-9 test.
* ``families``: layered graphs of 80 nodes on Placeto's 4 devices (seeds 0-23 train, 100-115
  validation, 24-31 test: the split every recipe benchmark of placerl used) and Placeto's
  cifar10, ptb and nmt cell families on 4 NVLink GPUs (seeds 2-9 train, four validation seeds
  from 10 on, chosen by content for nmt; test seed 1 and seeds from 24 on; seed 0, the main
  job's graph, is in no split). No graph is in two splits (tested on the graphs' content).
* ``models``: the zoo models (Inception-v3, ResNet-50, GNMT, NASNet-A, BERT-base and GPT-2
  small) coarsened to at most 100 and 300 nodes on 4 NVLink GPUs, all test (zero-shot from the
  families), and the msr-fiddle workloads on their own clusters under ``pipeline`` (two train,
  one validation, the other four test).
* ``devices``: test graphs of the layered family on clusters no training case uses (2 and 8
  devices, PCIe and NVLink, a host CPU beside GPUs): GiPH's generalization axis.
* ``scale``: layered graphs of 10k, 50k and 100k nodes on 8, 16 and 32 NVLink GPUs (as their
  weights need), all test: the sizes GDP, GO and the hierarchical planner report; the
  record's ``wall_s`` is the time to place.

Bump the version for any change to a case: results of two versions never pool.
"""

from __future__ import annotations

from placerl.bench.case import Case
from placerl.bench.suite import SUITES, Suite

NAME, VERSION = "placebench", 1
_NVLINK4 = "gpu8_nvlink?n_devices=4"
_PLACETO4 = "placeto?n_devices=4"


def _split(
    seed: int,
    train: range | tuple[int, ...],
    validation: range | tuple[int, ...],
    test: range | tuple[int, ...],
) -> str:
    """The split ``seed`` is in (the seeds the callers pass are in exactly one)."""
    return next(
        split
        for split, seeds in (("train", train), ("validation", validation), ("test", test))
        if seed in seeds
    )


#: The tiny tier's families: ``(name, graph spec without n and seed, sizes)``. Parallel
#: chains of unequal length between a fork and a join are a bin packing.
TINY_FAMILIES = (
    ("chain", "synthetic:chain?", (12, 24)),
    ("fork_join", "synthetic:fork_join?", (20, 40)),
    ("series_parallel", "synthetic:series_parallel?", (16, 32)),
    ("parallel_chains", "synthetic:fork_join?branches=5&stages=1&", (17, 27)),
)


def tiny() -> list[Case]:
    """Small graphs whose pipeline optimum the MILP proves."""
    cases = []
    for family, spec, sizes in TINY_FAMILIES:
        for n in sizes:
            for seed in range(10):
                split = _split(seed, range(6), (6, 7), (8, 9))
                cases.append(
                    Case(
                        f"tiny/{family}-n{n}-s{seed}",
                        "tiny",
                        split,
                        f"{spec}n={n}&seed={seed}",
                        "homogeneous?n_devices=3",
                        "pipeline",
                    )
                )
    return cases


#: The test seeds of Placeto's cell families (``benchmarks/bench_recipes.py``'s held-out).
CELL_TEST_SEEDS = {"cifar10": (1, 24, 25, 26), "ptb": (1, 24, 25, 26), "nmt": (1, 24, 27, 28)}
#: The validation seeds of the cell families. nmt draws only its shapes from the seed, so many
#: seeds are one graph (24 and 25 are 12's; 10 is 5's, a training seed): its validation seeds
#: are chosen by content, each a graph no training or test seed gives.
CELL_VALIDATION_SEEDS = {
    "cifar10": (10, 11, 12, 13),
    "ptb": (10, 11, 12, 13),
    "nmt": (11, 14, 18, 29),
}


def families() -> list[Case]:
    """Synthetic families at Placeto's sizes, split by seed."""
    cases = []
    for seed in (*range(24), *range(100, 116), *range(24, 32)):
        split = _split(seed, range(24), range(100, 116), range(24, 32))
        cases.append(
            Case(
                f"families/layered-n80-s{seed}",
                "families",
                split,
                f"synthetic:layered?n=80&seed={seed}",
                _PLACETO4,
            )
        )
    for family, test in CELL_TEST_SEEDS.items():
        validation = CELL_VALIDATION_SEEDS[family]
        for seed in (*range(2, 10), *validation, *test):
            split = _split(seed, range(2, 10), validation, test)
            cases.append(
                Case(
                    f"families/{family}-s{seed}",
                    "families",
                    split,
                    f"synthetic:{family}?seed={seed}",
                    _NVLINK4,
                )
            )
    return cases


#: ``(model, variant)`` of the zoo cases.
ZOO_MODELS = (
    ("inception_v3", "inception_v3"),
    ("resnet50", "resnet50"),
    ("gnmt", "gnmt"),
    ("nasnet", "mobile"),
    ("transformer", "bert_base"),
    ("transformer", "gpt2_small"),
)
#: The coarsening levels of the zoo cases (``max_nodes``).
ZOO_SIZES = (100, 300)
#: The msr-fiddle workloads and their split.
MSR_SPLITS = {
    "bert24_inference": "train",
    "bert24_training": "train",
    "bert_l-3_training": "validation",
    "bert_l-3_inference": "test",
    "gnmt_inference": "test",
    "resnet50_inference": "test",
    "resnet50_training": "test",
}


def models() -> list[Case]:
    """Real models: the zoo, coarsened, and the msr-fiddle workloads under ``pipeline``."""
    cases = [
        Case(
            f"models/{variant}-n{size}",
            "models",
            "test",
            f"zoo:{model}?variant={variant}&max_nodes={size}",
            _NVLINK4,
            family="models/zoo",
        )
        for model, variant in ZOO_MODELS
        for size in ZOO_SIZES
    ]
    cases += [
        Case(f"models/msr-{name}", "models", split, f"msr:{name}", f"msr:{name}", "pipeline")
        for name, split in MSR_SPLITS.items()
    ]
    return cases


#: The clusters of the ``devices`` tier, by a short name: none is a training case's.
DEVICE_CLUSTERS = {
    "placeto-d2": "placeto?n_devices=2",
    "placeto-d8": "placeto?n_devices=8",
    "pcie-d4": "gpu4_pcie?n_devices=4",
    "nvlink-d8": "gpu8_nvlink?n_devices=8",
    "cpu-gpu2": "cpu_gpu?n_gpus=2",
}


def devices() -> list[Case]:
    """Test graphs of the layered family on device counts and topologies training never saw."""
    return [
        Case(
            f"devices/layered-n80-s{seed}@{short}",
            "devices",
            "test",
            f"synthetic:layered?n=80&seed={seed}",
            cluster,
        )
        for short, cluster in DEVICE_CLUSTERS.items()
        for seed in range(24, 28)
    ]


#: The ``scale`` tier: graph size -> A100-40GB GPUs on NVSwitch. The layered family's weights
#: grow with the graph (674 GB at 100k nodes), so the GPU count grows with it, as a model of
#: that size needs: each cluster holds about twice the weights.
SCALE_CLUSTERS = {10_000: 8, 50_000: 16, 100_000: 32}


def scale() -> list[Case]:
    """Graphs of the sizes the scalable placers report, to time placing them."""
    return [
        Case(
            f"scale/layered-n{n}-s0",
            "scale",
            "test",
            f"synthetic:layered?n={n}&seed=0",
            f"gpu8_nvlink?n_devices={gpus}",
        )
        for n, gpus in SCALE_CLUSTERS.items()
    ]


#: Where a recipe learns to place the families without training cases of their own: the zoo
#: from the cell families (one cluster), the msr-fiddle workloads from BERT-24's training
#: graph (each workload has its own cluster, and a policy trains on one), the held-out
#: clusters and the large graphs from the layered family on Placeto's 4 devices.
TRAINED_ON = {
    "models/zoo": ("families/cifar10", "families/ptb", "families/nmt"),
    **{f"models/msr-{name}": ("models/msr-bert24_training",) for name in MSR_SPLITS},
    "devices/layered-n80": ("families/layered-n80",),
    "scale/layered-n10000": ("families/layered-n80",),
    "scale/layered-n50000": ("families/layered-n80",),
    "scale/layered-n100000": ("families/layered-n80",),
}


#: Iterated local search's budgets on the board (simulator calls per case).
SEARCH_BUDGETS = (1_000, 10_000, 100_000)
#: Every tier, ``scale`` included: where the rows that place 100k nodes in seconds run.
_WITH_SCALE = ("tiny", "families", "models", "devices", "scale")
#: The classic rows of the leaderboard: ``(placer spec, tiers)``, ``()`` for every tier but
#: ``scale``, where only the constructive placers and the two floors (one device, uniformly
#: random devices) run (a search over 100k-node graphs is no row). The exact solvers carry a
#: time limit, so every row finishes: a placement found at the limit is the solver's
#: incumbent, recorded as not proven.
CLASSIC_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    *((placer, _WITH_SCALE) for placer in ("single_device", "random", "heft", "m_etf", "m_sct")),
    ("m_topo", ()),
    ("min_cut", ()),
    ("best_of", ()),
    ("local_search?init=best_of", ()),
    *(
        (f"local_search?init=best_of&restarts=1000000&max_evaluations={n}&time_limit=600", ())
        for n in SEARCH_BUDGETS
    ),
    ("tarnawski_dp?time_limit=60", ()),
    ("milp", ("tiny",)),
    ("milp?contiguous=false", ("tiny",)),
)


def placebench_v1() -> Suite:
    """The benchmark's first version."""
    return Suite(NAME, VERSION, (*tiny(), *families(), *models(), *devices(), *scale()), TRAINED_ON)


SUITES.register(f"{NAME}-v{VERSION}", placebench_v1)
