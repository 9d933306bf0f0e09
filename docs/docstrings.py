"""placerl's docstrings as the API pages read them (autodoc's ``autodoc-process-docstring``).

Two habits of placerl's docstrings, which help and IDEs show as written, need a word for the
API pages:

* Markdown: the env classes document themselves in Gymnasium's sections with Markdown
  headings (``## Observation space``), ``placerl.baselines`` holds a pipe table of its
  placers. :func:`process_docstring` (before napoleon) turns a heading into a rubric, a pipe
  table into a ``list-table``, and sets a list apart from the paragraph above it.
* Sentences with colons in the doc comment of a constant (``#: Placers by name; ...: ...``):
  napoleon reads whatever precedes a data docstring's first colon as its type.
  :func:`protect_colons` (before napoleon) hides that line's colons and
  :func:`restore_colons` (after) puts them back.
"""

from __future__ import annotations

import re
from typing import Any

HEADING = re.compile(r"^(\s*)#{1,6}\s+(.*\S)\s*$")
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
RULE = re.compile(r"^\s*\|(\s*:?-+:?\s*\|)+\s*$")
BULLET = re.compile(r"^\s*([*-]|\d+\.)\s")


def markdown_to_rest(lines: list[str]) -> list[str]:
    """The docstring ``lines`` with Markdown headings, pipe tables and lists made reST."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = HEADING.match(line)
        if heading:
            out += [*_blank_before(out), f"{heading[1]}.. rubric:: {heading[2]}", ""]
            i += 1
            continue
        if TABLE_ROW.match(line) and i + 1 < len(lines) and RULE.match(lines[i + 1]):
            end = i + 2
            while end < len(lines) and TABLE_ROW.match(lines[end]):
                end += 1
            out += _blank_before(out) + _list_table(lines[i], lines[i + 2 : end]) + [""]
            i = end
            continue
        if BULLET.match(line) and out and out[-1].strip() and not _in_list(out):
            out.append("")
        out.append(line)
        i += 1
    return out


def _blank_before(out: list[str]) -> list[str]:
    return [""] if out and out[-1].strip() else []


def _in_list(out: list[str]) -> bool:
    """Whether the line before continues a list (a bullet or its indented continuation)."""
    for line in reversed(out):
        if not line.strip():
            return False
        if BULLET.match(line):
            return True
        if not line.startswith((" ", "\t")):
            return False
    return False


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _list_table(header: str, rows: list[str]) -> list[str]:
    indent = header[: len(header) - len(header.lstrip())]
    table = [f"{indent}.. list-table::", f"{indent}   :header-rows: 1", ""]
    for row in [header, *rows]:
        first, *rest = _cells(row)
        table.append(f"{indent}   * - {first or ' '}")
        table += [f"{indent}     - {cell or ' '}" for cell in rest]
    return table


#: Stands for a colon napoleon must not read (no docstring holds it).
HIDDEN_COLON = "\u2063COLON\u2063"
#: The objects whose docstring napoleon reads as ``type: description``.
ATTRIBUTES = ("attribute", "data", "property")


def process_docstring(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Before napoleon: the Markdown made reST (:func:`markdown_to_rest`), and a constant's
    first line kept from being read as a type (:func:`protect_colons`)."""
    lines[:] = markdown_to_rest(lines)
    if what in ATTRIBUTES:
        protect_colons(lines)


def protect_colons(lines: list[str]) -> None:
    """Hide the colons of the first non-blank line of ``lines``, in place."""
    for i, line in enumerate(lines):
        if line.strip():
            lines[i] = line.replace(":", HIDDEN_COLON)
            return


def restore_colons(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """After napoleon: the colons :func:`protect_colons` hid, back."""
    lines[:] = [line.replace(HIDDEN_COLON, ":") for line in lines]
