"""PlaceBench: versioned suites of cases in tiers and splits, and the rule that scores them.

``load_suite("placebench-v1")`` gives the benchmark's cases (:mod:`placerl.bench.placebench`);
``folder_suite(path, cluster)`` makes a researcher's own graphs a suite;
:func:`placerl.bench.guard.check_reads` keeps training and tuning off held-out cases.
"""

from placerl.bench import placebench  # noqa: F401  (registers placebench-v1)
from placerl.bench.case import SPLITS, Case
from placerl.bench.suite import SUITES, Suite, folder_suite, load_suite

__all__ = ["SPLITS", "SUITES", "Case", "Suite", "folder_suite", "load_suite"]
