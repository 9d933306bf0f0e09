"""placerl's docstring habits read right on the API pages."""

from hypothesis import given
from hypothesis import strategies as st


def test_a_heading_becomes_a_rubric_set_apart(docstrings):
    lines = ["Intro.", "## Observation space", "A ``Dict``."]
    assert docstrings.markdown_to_rest(lines) == [
        "Intro.",
        "",
        ".. rubric:: Observation space",
        "",
        "A ``Dict``.",
    ]


def test_a_pipe_table_becomes_a_list_table(docstrings):
    lines = [
        "Placers:",
        "| placer | what |",
        "|---|---|",
        "| ``heft`` | HEFT |",
        "| ``milp`` | |",
        "After.",
    ]
    assert docstrings.markdown_to_rest(lines) == [
        "Placers:",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - placer",
        "     - what",
        "   * - ``heft``",
        "     - HEFT",
        "   * - ``milp``",
        "     -  ",
        "",
        "After.",
    ]


def test_a_list_after_a_paragraph_gets_a_blank_line_once(docstrings):
    lines = ["Versions:", "* v1: this,", "  continued.", "* v0: initial."]
    assert docstrings.markdown_to_rest(lines) == ["Versions:", "", *lines[1:]]


@given(
    st.lists(
        st.text(alphabet="ab .:*|#-\n", max_size=20).map(lambda t: t.replace("\n", "")), max_size=12
    )
)
def test_only_blank_lines_are_added_outside_headings_and_tables(docstrings, lines):
    """Lines that are neither headings nor table rows all survive, in order."""
    kept = [
        line
        for line in lines
        if not docstrings.HEADING.match(line) and not docstrings.TABLE_ROW.match(line)
    ]
    out = [line for line in docstrings.markdown_to_rest(lines) if line in kept]
    assert [line for line in out if line.strip()] == [line for line in kept if line.strip()]


def test_a_constants_colons_survive_napoleon(docstrings):
    """Napoleon reads the text before a data docstring's first colon as its type; the hooks
    around it keep the sentence whole."""
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    lines = ["Placers by name: the entry points add more.", "", "More: text."]
    docstrings.process_docstring(None, "data", "PLACERS", None, None, lines)
    parsed = GoogleDocstring(lines, Config(), what="data", name="PLACERS").lines()
    docstrings.restore_colons(None, "data", "PLACERS", None, None, parsed)
    assert not any(":type:" in line for line in parsed)
    assert "Placers by name: the entry points add more." in parsed[0]
