"""Catch a command-line override that Hydra would refuse for an unquoted ``=`` or ``&``.

placerl's specs hold options after a ``?``, joined by ``&`` (``gpu8_nvlink?n_devices=4``,
``synthetic:layered?n=60&seed=3``). Hydra's override grammar reserves ``=`` and ``&`` outside
quotes, so ``placerl-train cluster.spec=gpu8_nvlink?n_devices=4`` fails deep in Hydra with
"mismatched input '='" and nothing says to quote it. :func:`check_overrides` finds such an
override first and says the exact form to type: ``"cluster.spec='gpu8_nvlink?n_devices=4'"``
(single quotes for Hydra, inside double quotes for the shell, which strips one level).

The scan follows Hydra 1.3's override lexer (``hydra/grammar/OverrideLexer.g4``): quoted
strings, ``${...}`` interpolations and backslash escapes (``\\=``) are left alone, and so is a
function's keyword argument (``range(start=1,stop=5)``), the one place an unquoted ``=`` is
valid. A ``?`` alone is valid Hydra (``cluster.spec=placeto?n_devices`` parses), so it is
left alone too: every override refused here is one Hydra's parser refuses.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import shlex
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from placerl.errors import ConfigError

#: Characters of spec options that Hydra's grammar reserves outside quotes.
RESERVED = "=&"
#: Hydra's command-line flags that take the next argument as their value.
FLAGS_WITH_VALUE = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--experimental-rerun",
}
#: What a backslash escapes in Hydra's unquoted values (its ``ESC`` token).
_ESCAPED = "\\()[]{}:=, \t"
#: An override's key: ``key``, ``+key``, ``++key``, ``~key``, ``group@package``.
_KEY = re.compile(r"(~|\+\+?)?[A-Za-z0-9_$.@/-]+")
#: A function's keyword argument name at the start of an element: ``start=`` in ``range(...)``.
_ARG_NAME = re.compile(r"[ \t]*[A-Za-z_][A-Za-z0-9_-]*[ \t]*=")
_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class _Token:
    """A piece of an override's value: ``char`` (one unquoted character), ``sep`` (a comma or
    bracket), ``quoted`` (a whole quoted string), ``interp`` (``${...}``) or ``esc`` (``\\=``)."""

    kind: str
    text: str


def check_overrides(args: Sequence[str]) -> None:
    """Refuse command-line overrides whose value holds ``=`` or ``&`` outside quotes.

    Args:
        args: The command line after the program name (``sys.argv[1:]``), flags included.

    Raises:
        ConfigError: Naming each such override and the quoted form to type instead.
    """
    fixes = [(arg, fixed) for arg in _overrides(args) if (fixed := quoted_override(arg)) != arg]
    if not fixes:
        return
    lines = []
    for arg, fixed in fixes:
        lines.append(f"  {arg}  ->  {shell_word(fixed)}")
        if (whole := _quoted_whole(arg)) not in (None, fixed):
            lines.append(
                "    (the form above is a sweep over its commas; as one value: "
                f"{shell_word(whole)})"
            )
    raise ConfigError(
        "Hydra reserves '=' and '&' in an override's value unless quoted (its parser fails "
        "with \"mismatched input '='\" or a LexerNoViableAltException); quote the value for "
        "Hydra, inside quotes for the shell "
        "(where an unquoted '&' ends the command and '?' is a glob):\n" + "\n".join(lines)
    )


def quoted_override(arg: str) -> str:
    """``arg`` (``key=value``) with every element of its value (the value, or each item of a
    sweep, list or dict) that holds an unquoted ``=`` or ``&`` in quotes, as Hydra reads it;
    ``arg`` itself when there is none (or no value: ``~key``)."""
    key, equal, value = arg.partition("=")
    return f"{key}={_requoted(value)}" if equal else arg


def _quoted_whole(arg: str) -> str | None:
    """``arg`` with its whole value in quotes, where Hydra would read its top-level commas as
    a sweep (``init=best_of?placers=heft,m_sct``: a spec whose option holds a list); ``None``
    where the value has no comma or has quotes, brackets or escapes of its own (which quoting
    would change)."""
    key, _, value = arg.partition("=")
    if "," not in value or any(c in value for c in "'\"\\" + _OPEN + _CLOSE):
        return None
    return f"{key}='{value.strip()}'"


def _overrides(args: Sequence[str]) -> Iterator[str]:
    """The ``key=value`` overrides among ``args``, without flags and their values."""
    skip = False
    for arg in args:
        if skip:  # a flag's value, such as the config name after -cn
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg in FLAGS_WITH_VALUE
            continue
        key, equal, _ = arg.partition("=")
        if equal and _KEY.fullmatch(key):
            yield arg


def _requoted(value: str) -> str:
    """``value`` with its elements that hold reserved characters quoted (see
    :func:`quoted_override`)."""
    out, element, stack = [], [], []
    for token in _tokens(value):
        if token.kind != "sep":
            element.append(token)
            continue
        out += [_element(element, stack[-1] if stack else ""), token.text]
        element = []
        if token.text in _OPEN:
            stack.append(token.text)
        elif token.text in _CLOSE and stack:
            stack.pop()
    out.append(_element(element, stack[-1] if stack else ""))
    return "".join(out)


def _tokens(value: str) -> Iterator[_Token]:
    """``value`` cut as Hydra's lexer cuts it, as far as quoting goes."""
    i = 0
    while i < len(value):
        end = _token_end(value, i)
        if end > i:
            kind = {"'": "quoted", '"': "quoted", "$": "interp", "\\": "esc"}[value[i]]
        else:
            end, kind = i + 1, "sep" if value[i] in ",()[]{}" else "char"
        yield _Token(kind, value[i:end])
        i = end


def _token_end(value: str, i: int) -> int:
    """Where a quoted string, interpolation or escape starting at ``i`` ends (``i``: none)."""
    char = value[i]
    if char in "'\"":
        backslashes = 0
        for j in range(i + 1, len(value)):
            if value[j] == char and backslashes % 2 == 0:
                return j + 1
            backslashes = backslashes + 1 if value[j] == "\\" else 0
    elif value.startswith("${", i):
        close = value.find("}", i + 2)
        return close + 1 if close > i + 2 else i
    elif char == "\\" and i + 1 < len(value) and value[i + 1] in _ESCAPED:
        return i + 2
    return i


def _element(tokens: list[_Token], context: str) -> str:
    """One element of a value, quoted if it holds a reserved character. In a function call
    (``context`` ``(``) a keyword argument's name stays outside the quotes, and so does a
    dict entry's key (``{``)."""
    raw = "".join(t.text for t in tokens)
    prefix = 0
    if context == "(" and (name := _ARG_NAME.match(raw)):
        prefix = len(name.group())  # all single characters: the regex matches no other token
    elif context == "{":
        prefix = next((k + 1 for k, t in enumerate(tokens) if t == _Token("char", ":")), 0)
    rest = tokens[prefix:]
    if not any(t.kind == "char" and t.text in RESERVED for t in rest):
        return raw
    return "".join(t.text for t in tokens[:prefix]) + _hydra_quoted(_meaning(rest))


def _meaning(tokens: list[_Token]) -> str:
    """The string Hydra makes of an element's tokens (escapes and quotes undone)."""
    parts = []
    for token in tokens:
        if token.kind == "esc":
            parts.append(token.text[1])
        elif token.kind == "quoted":
            quote, inner = token.text[0], token.text[1:-1]
            inner = re.sub(rf"(\\+)(?={quote}|$)", lambda m: m[1][: len(m[1]) // 2], inner)
            parts.append(inner)
        else:
            parts.append(token.text)
    return "".join(parts).strip(" \t")


def _hydra_quoted(text: str) -> str:
    """``text`` as a Hydra quoted string: single quotes unless it holds one and no double
    quote; backslashes before the quote, and the quote itself, escaped."""
    quote = '"' if "'" in text and '"' not in text else "'"
    body = re.sub(rf"(\\*){quote}", lambda m: "\\" * (2 * len(m[1]) + 1) + quote, text)
    body = re.sub(r"(\\+)$", lambda m: m[1] * 2, body)
    return f"{quote}{body}{quote}"


def shell_word(arg: str) -> str:
    """``arg`` as one word for a POSIX shell: in double quotes, which keep the single quotes
    Hydra needs readable, unless it holds what a shell expands there."""
    if any(char in arg for char in '"$`\\!'):
        return shlex.quote(arg)
    return f'"{arg}"'


def check_override_keys(
    args: Sequence[str], schema: type, groups: Sequence[str] = (), app: str = "placerl-train"
) -> None:
    """Refuse an override of a key that neither ``schema`` (a nested dataclass) declares nor
    names a config group, with the closest known key: Hydra's own message ("Could not
    override 'total_step'") names no alternative. Added keys (``+key``) are left to
    :func:`placerl.run_config.check_known_keys`; ``hydra.*`` and ``group@package`` to Hydra;
    the free mappings (``agent.hyperparams.*``) to what reads them.

    Raises:
        ConfigError: The key, and the closest known one.
    """
    known = _dotted_fields(schema)
    choices = sorted({*known, *groups})
    for arg in _overrides(args):
        key = arg.partition("=")[0]
        if key[:1] in "+~" or key.startswith("hydra") or "@" in key or "/" in key:
            continue
        if (
            key in groups
            or key in known
            or any(key.startswith(f"{free}.") for free in known if known[free])
        ):
            continue
        close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(f"unknown option {key!r}{hint} ({app} --help lists them)")


def _dotted_fields(schema: type, prefix: str = "") -> dict[str, bool]:
    """Every field of ``schema`` by dotted path, nested groups included; True marks a free
    mapping, whose keys are anything."""
    fields: dict[str, bool] = {}
    types = typing.get_type_hints(schema)
    for item in dataclasses.fields(schema):
        path, kind = f"{prefix}{item.name}", types[item.name]
        fields[path] = typing.get_origin(kind) is dict
        if dataclasses.is_dataclass(kind):
            fields.update(_dotted_fields(kind, f"{path}."))
    return fields
