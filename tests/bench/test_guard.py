"""The split, enforced: selection and tuning never read a test case."""

import pytest

from placerl.bench.guard import check_reads
from placerl.errors import ConfigError
from placerl.run_config import RunConfig


def test_selection_and_tuning_may_read_validation_cases_and_graphs_of_no_suite():
    for use in ("selection", "tuning"):
        check_reads(["synthetic:layered?n=80&seed=100", "synthetic:cifar10?seed=0"], use)


@pytest.mark.parametrize(
    ("spec", "use", "message"),
    [
        (
            "synthetic:layered?n=80&seed=24",
            "selection",
            "placebench-v1's test case 'families/layered-n80-s24': selection may not read it",
        ),
        ("synthetic:layered?seed=24&n=80", "tuning", "test case 'families/layered-n80-s24'"),
        ("synthetic:nmt?seed=27", "tuning", "test case 'families/nmt-s27': tuning may not"),
        ("msr:gnmt_inference", "selection", "test case 'models/msr-gnmt_inference'"),
    ],
)
def test_a_test_case_is_refused_by_name(spec, use, message):
    with pytest.raises(ConfigError, match=message):
        check_reads([spec], use)


def test_a_run_config_refuses_to_select_its_weights_on_a_test_case():
    with pytest.raises(ConfigError, match="test case 'families/layered-n80-s25': selection"):
        RunConfig.from_dict({"validation_graphs": ["synthetic:layered?n=80&seed=25"]}).check()
    # a per-graph search trains on the graph it places, as any search reads it
    assert RunConfig.from_dict({"graph": {"spec": "synthetic:layered?n=80&seed=25"}}).check()
