"""config_help: the fields of a nested dataclass schema with their types, defaults and meanings
from the docstrings, and the Hydra help template that shows them."""

import os
import string
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from placerl.config_help import (
    FieldDoc,
    attribute_docs,
    field_docs,
    field_help,
    help_template,
)
from placerl.run_config import EvalRunConfig, RunConfig

ROOT = Path(__file__).resolve().parents[1]
HYDRA_NAMES = ("FLAGS_HELP", "HYDRA_CONFIG_GROUPS", "APP_CONFIG_GROUPS", "CONFIG")


def _computed() -> list[str]:
    return ["a"]


@dataclass
class Inner:
    """``inner/``: a group.

    Args:
        ignored: An argument, not an attribute.

    Attributes:
        spec: A spec (:func:`~placerl.cluster.load_cluster`); quote ``a?b=1``
            when it holds options.
        size (int): Sized, with the type
            in the entry.

        after_blank: Still an attribute after a blank line.

    Example:
        not_an_attribute: text of another section.
    """

    spec: str = "placeto?n_devices=2&bandwidth=1e9"
    size: int | None = None
    after_blank: bool = False


@dataclass
class Outer:
    """A run: a group and its schedule.

    Attributes:
        inner: The group.
        steps: Env steps; costs $5 or ${oc.env:HOME} as written.
        names: Names.
        made: Made by a factory that may be costly.
        required: Has no default.
    """

    required: int
    inner: Inner = field(default_factory=Inner)
    steps: int = 3
    names: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=_computed)
    undocumented: dict[str, float] = field(default_factory=dict)


@dataclass
class Derived(Inner):
    """A group with one more field.

    Attributes:
        extra: The extra field.
    """

    extra: float = 0.5


def test_attributes_sections_are_parsed_with_their_continuation_lines():
    assert attribute_docs(Inner) == {
        "spec": "A spec (placerl.cluster.load_cluster); quote a?b=1 when it holds options.",
        "size": "Sized, with the type in the entry.",
        "after_blank": "Still an attribute after a blank line.",
    }


def test_a_subclass_keeps_its_bases_attribute_entries():
    docs = attribute_docs(Derived)
    assert docs["extra"] == "The extra field." and docs["size"].startswith("Sized")


def test_a_class_without_an_attributes_section_has_no_entries():
    @dataclass
    class Bare:
        x: int = 0

    assert attribute_docs(Bare) == {}


def test_fields_are_listed_by_dotted_path_with_type_default_and_meaning():
    assert field_docs(Outer) == [
        FieldDoc("required", "int", "(required)", "Has no default."),
        FieldDoc("inner", "Inner", "", "The group."),
        FieldDoc(
            "inner.spec",
            "str",
            "'placeto?n_devices=2&bandwidth=1e9'",
            "A spec (placerl.cluster.load_cluster); quote a?b=1 when it holds options.",
        ),
        FieldDoc("inner.size", "int | None", "None", "Sized, with the type in the entry."),
        FieldDoc("inner.after_blank", "bool", "False", "Still an attribute after a blank line."),
        FieldDoc("steps", "int", "3", "Env steps; costs $5 or ${oc.env:HOME} as written."),
        FieldDoc("names", "list[str]", "[]", "Names."),
        FieldDoc("made", "list[str]", "(computed)", "Made by a factory that may be costly."),
        FieldDoc("undocumented", "dict[str, float]", "{}", ""),
    ]


def test_field_help_shows_each_field_with_its_meaning_under_it():
    text = field_help(Outer)
    assert text.startswith(
        "required: int = (required)\n    Has no default.\ninner: Inner\n"
        "    The group.\ninner.spec: str = "
    )
    assert "inner.size: int | None = None\n    Sized, with the type in the entry.\n" in text
    assert text.endswith("undocumented: dict[str, float] = {}\n    (no description)")


def test_long_meanings_are_wrapped_under_the_field():
    @dataclass
    class Long:
        """Long.

        Attributes:
            x: word word word word word word word word word word word word word word word word
                word word word word word word word word word word word word word.
        """

        x: int = 0

    lines = field_help(Long).splitlines()
    assert len(lines) == 3 and all(len(line) <= 100 for line in lines)
    assert lines[1].startswith("    word") and lines[2].startswith("    word")


@pytest.mark.parametrize("schema", [RunConfig, EvalRunConfig])
def test_every_field_of_the_apps_schemas_has_a_meaning(schema):
    docs = field_docs(schema)
    assert [doc.path for doc in docs if not doc.meaning] == []


def test_the_run_config_lists_its_nested_fields():
    paths = {doc.path for doc in field_docs(RunConfig)}
    assert {"env.kind", "agent.hyperparams", "total_steps", "cluster.spec"} <= paths


def _rendered(template: str) -> str:
    """The help text Hydra prints: the template resolved by OmegaConf (as a config value),
    then its ``$NAMES`` substituted."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.create({"template": template}).template
    return string.Template(resolved).substitute({name: f"<{name}>" for name in HYDRA_NAMES})


def test_the_help_template_shows_groups_fields_and_how_to_quote_a_spec():
    pytest.importorskip("omegaconf", reason="the experiments extra is not installed")
    text = _rendered(help_template("tiny", Outer))
    assert text.startswith("tiny: A run: a group and its schedule.\n\n== Config groups ==\n")
    assert "\n<APP_CONFIG_GROUPS>\n== Fields ==\n" in text
    assert field_help(Outer) in text  # '$5' and '${oc.env:HOME}' as written
    assert "tiny --cfg job prints a composed config" in text
    assert "\n  tiny \"inner.spec='placeto?n_devices=2&bandwidth=1e9'\"\n" in text


def test_without_a_spec_default_the_quoting_example_is_a_cluster_spec():
    @dataclass
    class Plain:
        """Plain.

        Attributes:
            name: A name.
        """

        name: str = "topo"

    text = _rendered(help_template("tiny", Plain))
    assert "as in\n  tiny \"cluster.spec='gpu8_nvlink?n_devices=4'\"\n\n" in text


def test_the_help_template_of_the_train_app_renders():
    text = _rendered(help_template("placerl-train", RunConfig))
    assert "env.kind: str = " in text and "agent.hyperparams: dict[str, Any]" in text
    assert "placerl-train \"cluster.spec='" in text


APP = """
import hydra
from hydra.core.config_store import ConfigStore

from placerl.config_help import help_template
from tests.test_config_help import Outer

store = ConfigStore.instance()
store.store(name="schema", node=Outer(required=1))
store.store(group="inner", name="small", node={"spec": "placeto?n_devices=2"}, package="inner")
store.store(group="inner", name="large", node={"spec": "placeto?n_devices=8"}, package="inner")
store.store(group="hydra/help", name="tiny", node={
    "app_name": "tiny", "header": "", "footer": "", "template": help_template("tiny", Outer)})
store.store(name="main", node={"defaults": ["schema", {"inner": "small"},
                                            {"override hydra/help": "tiny"}, "_self_"]})


@hydra.main(version_base=None, config_name="main")
def main(cfg):
    pass


main()
"""


def test_hydra_prints_the_template_as_the_apps_help(tmp_path):
    pytest.importorskip("hydra", reason="the experiments extra is not installed")
    (tmp_path / "app.py").write_text(APP)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(tmp_path / "app.py"), "--help"],
        text=True,
        capture_output=True,
        check=True,
        cwd=tmp_path,
        env=env,
    ).stdout
    assert "== Config groups ==" in out and "inner: large, small" in out
    assert field_help(Outer) in out
    assert "tiny \"inner.spec='placeto?n_devices=2&bandwidth=1e9'\"" in out


def test_the_help_shows_the_values_the_app_runs_with():
    """Given the run an app makes with no overrides, the help shows its values, not the
    schema's bare defaults."""
    from placerl.compose import main_job
    from placerl.run_config import RunConfig

    text = field_help(RunConfig, main_job("train"))
    assert "env.kind: str = 'refine'" in text  # the main job's recipe, not the bare 'construct'
    assert "env.moves: int | None = 4" in text
