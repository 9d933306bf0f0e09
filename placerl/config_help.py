"""``--help`` for the apps: every config field by its dotted path, with its type, default and
meaning, taken from the schema's dataclasses and their docstrings' ``Attributes:`` sections.

:func:`field_help` lists the fields; :func:`help_template` wraps the list in a Hydra help
template (``hydra.help.template``) with the config groups and how to quote a spec.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from dataclasses import dataclass
from typing import Any

from placerl.overrides import quoted_override, shell_word

#: Default factories whose value is safe and cheap to show (others may compose configs).
PLAIN_FACTORIES = (list, dict, set, tuple)
#: Width of the help text, as Hydra's own help is written for a terminal.
WIDTH = 100
#: An entry of an ``Attributes:`` section: ``name: text`` or ``name (type): text``.
_ENTRY = re.compile(r"(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


@dataclass(frozen=True)
class FieldDoc:
    """One field of a schema, for ``--help``.

    Attributes:
        path: The dotted path an override names (``env.kind``).
        type: The field's type, as written.
        default: The default's ``repr``, ``"(required)"`` without one, ``"(computed)"`` for a
            default factory that is not a plain container; empty for a nested group.
        meaning: The text of the field's ``Attributes:`` entry (empty without one).
    """

    path: str
    type: str
    default: str
    meaning: str


def field_docs(schema: type, prefix: str = "", values: Any = None) -> list[FieldDoc]:
    """Every field of the dataclass ``schema``, a nested dataclass's fields after its own
    entry, in declaration order; the defaults are those of ``values`` (an instance of
    ``schema``) when given, else the fields' own."""
    meanings = attribute_docs(schema)
    types = _type_hints(schema)
    docs = []
    for item in dataclasses.fields(schema):
        kind = types.get(item.name, item.type)
        path = f"{prefix}{item.name}"
        nested = isinstance(kind, type) and dataclasses.is_dataclass(kind)
        value = getattr(values, item.name) if values is not None else None
        default = "" if nested else repr(value) if values is not None else _default(item)
        docs.append(FieldDoc(path, _type_name(kind), default, meanings.get(item.name, "")))
        if nested:
            docs += field_docs(kind, f"{path}.", value)
    return docs


def field_help(schema: type, values: Any = None) -> str:
    """The fields of ``schema`` as text: ``path: type = default`` and the meaning under it
    (the defaults of ``values``, an instance, when given)."""
    blocks = []
    for doc in field_docs(schema, values=values):
        head = f"{doc.path}: {doc.type}" + (f" = {doc.default}" if doc.default else "")
        meaning = textwrap.fill(
            doc.meaning or "(no description)",
            WIDTH,
            initial_indent="    ",
            subsequent_indent="    ",
        )
        blocks.append(f"{head}\n{meaning}")
    return "\n".join(blocks)


def attribute_docs(cls: type) -> dict[str, str]:
    """``{name: text}`` from the ``Attributes:`` sections of ``cls``'s docstring and its
    bases' (Google style: ``name: text`` entries, continued on more deeply indented lines),
    as plain text: reStructuredText's ````literals```` and ``:role:`targets``` unwrapped."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if "__doc__" in vars(klass) and klass.__doc__:
            docs.update(_attributes_section(inspect.cleandoc(klass.__doc__)))
    return {name: _plain(text) for name, text in docs.items()}


def _attributes_section(doc: str) -> dict[str, str]:
    """The entries of a cleaned docstring's ``Attributes:`` section, lines joined."""
    entries: dict[str, list[str]] = {}
    section = entry = None  # the section's and the entries' indentation
    name = ""
    for line in doc.splitlines():
        indent, text = len(line) - len(line.lstrip()), line.strip()
        if section is None:
            section = indent if text == "Attributes:" else None
        elif not text:
            continue
        elif indent <= section:
            break  # the next section, or the end of the docstring
        elif (entry is None or indent <= entry) and (match := _ENTRY.fullmatch(text)):
            entry, name = indent, match[1]
            entries[name] = [match[2]]
        elif name:
            entries[name].append(text)
    return {name: " ".join(lines).strip() for name, lines in entries.items()}


def _plain(text: str) -> str:
    """``text`` without reStructuredText markup: ``:attr:`~a.b``` -> ``a.b``, ````x```` -> x."""
    text = re.sub(r":[\w:]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _type_hints(schema: type) -> dict[str, Any]:
    """The field types, resolved; as written (strings) where a name does not resolve."""
    try:
        return typing.get_type_hints(schema)
    except (NameError, TypeError):
        return {}


def _type_name(kind: Any) -> str:
    """A type as one writes it: ``int | None``, ``dict[str, Any]``, ``EnvGroup``."""
    if isinstance(kind, str):
        return kind
    if isinstance(kind, type) and not typing.get_args(kind):
        return kind.__name__
    return str(kind).replace("typing.", "").replace("NoneType", "None")


def _default(item: dataclasses.Field) -> str:
    """A field's default, as ``repr`` shows it (see :attr:`FieldDoc.default`)."""
    if item.default is not dataclasses.MISSING:
        return repr(item.default)
    if item.default_factory is dataclasses.MISSING:
        return "(required)"
    if item.default_factory in PLAIN_FACTORIES:
        return repr(item.default_factory())
    return "(computed)"


def help_template(app_name: str, schema: type, values: Any = None) -> str:
    """A Hydra help template (``hydra.help.template``) for the app ``app_name`` composing on
    ``schema``: its config groups (Hydra's ``$APP_CONFIG_GROUPS``), every field with its
    meaning (:func:`field_help`; the defaults of ``values``, the run the app makes with no
    overrides, when given) and how to quote a spec that holds ``?`` and ``=``.

    Hydra reads the template through OmegaConf, which resolves ``${...}``, then substitutes
    its ``$NAMES`` with :class:`string.Template`; the text taken from the schema is escaped
    for both, so a ``$`` in a docstring or default shows as written.
    """
    summary = _plain((inspect.getdoc(schema) or schema.__name__).splitlines()[0])
    examples = "\n".join(
        f"  {app_name} {shell_word(quoted_override(f'{path}={spec}'))}"
        for path, spec in _spec_examples(schema, values)
    )
    text = "\n".join(
        [
            f"{app_name}: {summary}",
            "",
            "== Config groups ==",
            "Compose the run from one option of each group (group=option):",
            "",
        ]
    )
    fields = "\n".join(
        [
            "== Fields ==",
            "Override any field by its dotted path (path=value). "
            + (
                f"The values shown are what {app_name} runs"
                if values is not None
                else "The defaults shown are the schema's,"
            ),
            ("with no overrides; " if values is not None else "before the config groups apply; ")
            + f"{app_name} --cfg job prints a composed "
            "config.",
            "",
            field_help(schema, values),
            "",
            "== Quoting a spec ==",
            "Hydra reserves '=' and '&' in a value: quote a spec that holds options (after its "
            "'?'),",
            "for Hydra inside quotes for the shell, as in",
            examples,
            "",
            f"{app_name} --hydra-help shows Hydra's own flags.",
            "",
        ]
    )
    return f"{_escaped(text)}\n$APP_CONFIG_GROUPS\n{_escaped(fields)}"


def _spec_examples(schema: type, values: Any = None) -> list[tuple[str, str]]:
    """Up to two ``(path, spec)`` from the schema's string defaults that hold ``?`` and
    ``=``; a made-up one when there is none."""
    found = []
    for doc in field_docs(schema, values=values):
        value = ast.literal_eval(doc.default) if doc.default[:1] in ("'", '"') else None
        if isinstance(value, str) and "?" in value and "=" in value:
            found.append((doc.path, value))
    return found[:2] or [("cluster.spec", "gpu8_nvlink?n_devices=4")]


def _escaped(text: str) -> str:
    """``text`` as it must stand in the template to come out as written: ``$`` doubled for
    :class:`string.Template`, then ``${`` escaped for OmegaConf as ``\\${``."""
    return text.replace("$", "$$").replace("${", "\\${")
