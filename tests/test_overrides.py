"""check_overrides: an override with '=' or '&' unquoted in its value is refused with the quoted
form to type; every valid Hydra override form is left alone (checked with Hydra's parser)."""

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.errors import ConfigError
from placerl.overrides import check_overrides, quoted_override

pytest.importorskip("hydra", reason="the experiments extra is not installed")
from hydra.core.override_parser.overrides_parser import OverridesParser

PARSER = OverridesParser.create()

#: Valid overrides, as the program receives them (the shell has stripped its own quotes).
ACCEPTED = [
    "cluster.spec='gpu8_nvlink?n_devices=4'",
    'cluster.spec="gpu8_nvlink?n_devices=4"',
    "graph.spec='synthetic:layered?n=60&seed=3'",
    "cluster.spec=placeto?n_devices",  # a '?' alone is valid Hydra
    "cluster.spec=placeto",
    "graph=nmt",
    "total_steps=40000",
    "+key=value",
    "++agent.hyperparams.n_steps=256",
    "~experiment",
    "~experiment=excursions",
    "order.name=topo,bfs",
    "seed=0,1,2",
    "baselines=[heft,'local_search?init=best_of']",
    "baselines=[]",
    "agent.hyperparams={n_steps:256,gamma:0.99}",
    "agent.hyperparams={n_steps:256,spec:'placeto?n_devices=2'}",
    "agent.warm_start=null",
    "logger.entity=",
    "hydra.run.dir=outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}",
    "hydra.sweep.dir=multirun/${oc.env:USER,me}",
    "x=${oc.select:a=b,c}",  # '=' inside an interpolation
    "order.name=glob(*)",
    "order.name=glob(*,exclude=bfs)",
    "seed=range(0,3)",
    "seed=range(start=0,stop=6,step=2)",
    "order.name=choice(topo,bfs)",
    "agent.hyperparams.learning_rate=interval(1e-4,1e-2)",
    "order.name=sort(bfs,topo)",
    "order.name=shuffle(topo,bfs)",
    "seed=tag(seeds,range(0,3))",
    "x=a\\=b",  # Hydra's escaped '='
    "graph.spec=zoo:inception_v3",
    "x=a b",
    "x=/tmp/out?n",
    "db@pkg=mysql",
    "hydra/launcher=joblib",
]
#: Invalid ones, each with the override the check says to type (before the shell's quotes).
REFUSED = {
    "cluster.spec=gpu8_nvlink?n_devices=4": "cluster.spec='gpu8_nvlink?n_devices=4'",
    "graph.spec=synthetic:layered?n=60&seed=3": "graph.spec='synthetic:layered?n=60&seed=3'",
    "graph.spec=synthetic:layered?n=60": "graph.spec='synthetic:layered?n=60'",
    "+placer=policy?path=m.zip": "+placer='policy?path=m.zip'",
    "++placer=policy?path=m.zip&search=local": "++placer='policy?path=m.zip&search=local'",
    "~placer=policy?path=m.zip": "~placer='policy?path=m.zip'",
    "baselines=[heft,local_search?init=best_of]": "baselines=[heft,'local_search?init=best_of']",
    "baselines=[heft, local_search?init=best_of ]": "baselines=[heft,'local_search?init=best_of']",
    "cluster.spec=placeto?n_devices=2,placeto?n_devices=4": "cluster.spec='placeto?n_devices=2','placeto?n_devices=4'",  # noqa: E501
    "cluster.spec=placeto,gpu8_nvlink?n_devices=4": "cluster.spec=placeto,'gpu8_nvlink?n_devices=4'",  # noqa: E501
    "agent.hyperparams={spec:placeto?n_devices=2}": "agent.hyperparams={spec:'placeto?n_devices=2'}",  # noqa: E501
    "cluster.spec=choice(placeto,gpu8_nvlink?n_devices=4)": "cluster.spec=choice(placeto,'gpu8_nvlink?n_devices=4')",  # noqa: E501
    "x=a&b": "x='a&b'",
    "x='a'=b": "x='a=b'",
    "x=it's=1": 'x="it\'s=1"',
    "x=a\\\\=b": "x='a\\=b'",  # an escaped backslash, then a bare '='
    "x= a=b ": "x='a=b'",
}


def _parses(override: str) -> bool:
    try:
        PARSER.parse_overrides([override])
    except Exception:  # Hydra's OverrideParseException, or its functions' errors
        return False
    return True


@pytest.mark.parametrize("override", ACCEPTED)
def test_valid_overrides_are_accepted(override):
    assert _parses(override)
    check_overrides([override])
    assert quoted_override(override) == override


@pytest.mark.parametrize(("override", "quoted"), REFUSED.items())
def test_unquoted_reserved_characters_are_refused_with_the_quoted_form(override, quoted):
    assert not _parses(override)
    assert quoted_override(override) == quoted
    assert _parses(quoted)
    with pytest.raises(ConfigError) as error:
        check_overrides([override])
    (word,) = [
        line.split("  ->  ")[1]
        for line in str(error.value).splitlines()
        if line.startswith(f"  {override}  ->  ")
    ]
    assert shlex.split(word) == [quoted]  # what the shell hands the program


def test_a_value_with_commas_is_offered_as_a_sweep_and_as_one_value():
    """``best_of?placers=heft,m_sct`` is, to Hydra, a sweep over two values; the message
    quotes it as Hydra reads it and as the one spec it more likely is."""
    with pytest.raises(ConfigError) as error:
        check_overrides(["env.init=best_of?placers=heft,m_sct", "x=a=b"])
    lines = str(error.value).splitlines()
    at = lines.index(
        "  env.init=best_of?placers=heft,m_sct  ->  \"env.init='best_of?placers=heft',m_sct\""
    )
    assert lines[at + 1] == (
        "    (the form above is a sweep over its commas; as one value: "
        "\"env.init='best_of?placers=heft,m_sct'\")"
    )
    assert lines[-1] == "  x=a=b  ->  \"x='a=b'\""  # no comma: no second reading
    (word,) = [line.split("as one value: ", 1)[1][:-1] for line in lines if "one value" in line]
    assert _parses(shlex.split(word)[0])
    with pytest.raises(ConfigError) as error:  # quoting it whole would keep the escape
        check_overrides(["x=a\\,b=1,c"])
    assert "as one value" not in str(error.value)


def test_the_message_says_what_to_type_in_the_shell():
    with pytest.raises(ConfigError) as error:
        check_overrides(
            [
                "-m",
                "cluster.spec=gpu8_nvlink?n_devices=4",
                "seed=0,1",
                "graph.spec=synthetic:layered?n=6&seed=3",
            ]
        )
    assert str(error.value) == (
        "Hydra reserves '=' and '&' in an override's value unless quoted (its parser fails "
        "with \"mismatched input '='\" or a LexerNoViableAltException); quote the value for "
        "Hydra, inside quotes for the shell "
        "(where an unquoted '&' ends the command and '?' is a glob):\n"
        "  cluster.spec=gpu8_nvlink?n_devices=4  ->  \"cluster.spec='gpu8_nvlink?n_devices=4'\"\n"
        "  graph.spec=synthetic:layered?n=6&seed=3  ->  "
        "\"graph.spec='synthetic:layered?n=6&seed=3'\""
    )


def test_the_quoted_value_reads_back_as_the_spec():
    (override,) = PARSER.parse_overrides([quoted_override("cluster.spec=gpu8_nvlink?n_devices=4")])
    assert override.value() == "gpu8_nvlink?n_devices=4"


@pytest.mark.parametrize(
    ("arg", "word"),
    [
        ("x=a=$HOME", "'x='\"'\"'a=$HOME'\"'\"''"),  # '$' would expand inside double quotes
        ("x=it's=1", "'x=\"it'\"'\"'s=1\"'"),  # a double quote for Hydra
    ],
)
def test_a_shell_word_with_what_double_quotes_expand_is_single_quoted(arg, word):
    with pytest.raises(ConfigError) as error:
        check_overrides([arg])
    assert str(error.value).endswith(f"  {arg}  ->  {word}")
    assert shlex.split(word) == [quoted_override(arg)]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--hydra-help"],
        ["-m", "seed=0,1"],
        ["--multirun"],
        ["--cfg", "job"],
        ["-c", "all", "--resolve"],
        ["--info", "defaults"],
        ["-cn", "eval"],
        ["--config-name=eval"],
        ["-cp", "/tmp/a=b"],
        ["--config-dir", "conf?x=1"],
        ["-p", "hydra.job"],
        ["--experimental-rerun", "/tmp/x=1.pickle"],
        ["-sc", "install=bash"],
        ["positional=?"],
        ["not an override"],
        ["a b=c=d"],
    ],
)
def test_flags_their_values_and_non_overrides_are_left_to_hydra(args):
    check_overrides(args)


def test_the_flag_value_skip_ends_at_the_flag_value():
    with pytest.raises(ConfigError, match="x=a=b"):
        check_overrides(["-cn", "train", "x=a=b"])


VALUE_CHARS = st.sampled_from([*"ab1?=&:,/._- '\"[]{}()\\$", "${x}", "range(", "start="])


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.lists(VALUE_CHARS, max_size=10).map("".join))
def test_an_override_refused_never_parses(value):
    override = f"key={value}"
    if quoted_override(override) != override:
        assert not _parses(override)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text(alphabet="ab1?=&:/._-", min_size=1, max_size=12).filter(lambda s: "=" in s))
def test_the_quoted_form_of_a_spec_parses_back_to_it(spec):
    for override, expected in ((f"x={spec}", spec), (f"x=[a,{spec}]", ["a", spec])):
        (parsed,) = PARSER.parse_overrides([quoted_override(override)])
        assert parsed.value() == expected
