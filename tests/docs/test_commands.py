"""Every shell command of the README and the docs' pages names a real program, and its options
are ones the program takes: a Hydra app's overrides compose (as the app composes them, without
running the job), a script's options are in its parser, a ``make`` target is in the Makefile.

Running them is what the tests of each app do on tiny budgets; here each command is checked as
a reader would type it.
"""

import importlib
import inspect
import re
import shlex

import pytest

from tests.docs.test_code_blocks import PAGES, ROOT

BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
#: The Hydra apps and the config each composes (``placerl.compose.compose_run``).
HYDRA_APPS = {"placerl-train": "train", "placerl-eval": "eval", "placerl-bench": "bench"}
#: Hydra's own flags: how a command runs, not what it composes.
HYDRA_FLAGS = {"-m", "--multirun", "--help"}


def commands() -> list[tuple[str, int, list[str]]]:
    """``(page, line, words)`` of every command line in the pages' ``bash`` blocks."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in BLOCK.finditer(text):
            line, pending, start = text[: block.start()].count("\n") + 2, "", 0
            for offset, row in enumerate(block[1].splitlines()):
                start = start if pending else line + offset
                pending += row.removesuffix("\\") + " "
                if row.endswith("\\"):
                    continue  # a continuation: one command over several lines
                words, pending = shlex.split(pending, comments=True), ""
                if words:
                    found.append((str(page.relative_to(ROOT)), start, words))
    return found


COMMANDS = commands()
#: pyproject's console scripts: ``{name: "module:function"}`` (read without tomllib: Python 3.10).
SCRIPTS = dict(
    re.findall(
        r'^(placerl-[a-z]+) = "([^"]+)"$',
        (ROOT / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0],
        re.M,
    )
)


def first_of_sweeps(overrides: list[str]) -> list[str]:
    """Each override, a sweep (``order=topo,bfs``, ``choice(...)``) as its first value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [
        f"{o.get_key_element()}={next(o.sweep_string_iterator())}"
        if o.is_sweep_override()
        else text
        for o, text in zip(parsed, overrides, strict=True)
    ]


def check_hydra_app(config_name: str, words: list[str]) -> None:
    from placerl.compose import compose_run, group_options

    overrides = []
    for word in words:
        if word in HYDRA_FLAGS or word.startswith(("hydra.", "hydra/")):
            continue  # the launcher's and the run folder's: Hydra's own config
        if word.startswith("hparams_search="):  # a sweeper config: Hydra's own too
            assert word.split("=", 1)[1] in group_options("hparams_search"), word
            continue
        overrides.append(word)
    compose_run(*first_of_sweeps(overrides), config_name=config_name)


def check_script(program: str, words: list[str]) -> None:
    """A console script of pyproject's: every ``--option`` it is given is in its module."""
    module = importlib.import_module(SCRIPTS[program].split(":")[0])
    source = inspect.getsource(module)
    for option in (w for w in words if w.startswith("--")):
        assert f'"{option}"' in source, f"{program} takes no {option}"


@pytest.mark.parametrize(
    ("page", "line", "words"), COMMANDS, ids=[f"{page}:{line}" for page, line, _ in COMMANDS]
)
def test_a_documented_command_is_one_its_program_takes(page, line, words):
    program, *rest = words
    if program in HYDRA_APPS:
        check_hydra_app(HYDRA_APPS[program], rest)
    elif program in SCRIPTS:
        check_script(program, rest)
    elif program == "make":
        makefile = (ROOT / "Makefile").read_text()
        assert all(re.search(rf"^{t}:", makefile, re.M) for t in rest), f"{page}:{line}: {rest}"
    elif program == "python" and rest[:2] == ["-m", "placerl"]:
        source = inspect.getsource(importlib.import_module("placerl.cli"))
        assert f'"{rest[2]}"' in source and all(
            f'"{w}"' in source for w in rest[3:] if w.startswith("--")
        )
    else:
        pytest.fail(f"{page}:{line}: no check for program {program!r}; add one")


def test_the_pages_have_commands_to_check():
    programs = {words[0] for _, _, words in COMMANDS}
    assert {"make", "placerl-train", "placerl-bench", "placerl-report"} <= programs


def test_a_misspelled_override_fails_the_check_by_name():
    from placerl.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown option 'total_step'; did you mean"):
        check_hydra_app("train", ["-m", "total_step=4", "order=topo,bfs"])


def test_a_sweep_is_checked_at_its_first_value():
    assert first_of_sweeps(["order=topo,bfs", "seed=range(0,3)", "x=1"]) == [
        "order=topo",
        "seed=0",
        "x=1",
    ]


def test_an_option_a_script_lacks_fails_the_check():
    with pytest.raises(AssertionError, match="placerl-report takes no --nowhere"):
        check_script("placerl-report", ["multirun", "--nowhere"])
