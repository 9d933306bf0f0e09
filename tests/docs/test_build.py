"""The docs build fails on a broken reference or link, naming the page and line.

Built here on a small project with the real ``conf.py`` (its hooks and settings, the
generated results pages included) and a page of the test's: the whole site with its API
reference takes minutes, and ``make docs`` in ``.ci/run`` builds that.
"""

import shutil

import pytest
from sphinx.cmd.build import build_main

from tests.docs.conftest import DOCS, docs_module

INDEX = "\n".join(
    [
        "# Test site",
        "",
        "```{toctree}",
        "page",
        *(f"_generated/{name}" for name in docs_module("generate").PAGES),
        "```",
        "",
    ]
)


def build(tmp_path, page: str) -> int:
    """Build a site of ``page`` and the generated pages in ``tmp_path/docs``; the results
    they read are the repository's (``tmp_path/benchmarks`` and ``tmp_path/experiments`` link
    to them)."""
    source = tmp_path / "docs"
    source.mkdir()
    for results in ("benchmarks", "experiments"):
        (tmp_path / results).symlink_to(DOCS.parent / results)
    for name in ("conf.py", "generate.py", "docstrings.py"):
        shutil.copy(DOCS / name, source / name)
    (source / "index.md").write_text(INDEX)
    (source / "page.md").write_text(page)
    return build_main(
        ["-W", "--keep-going", "-n", "-q", "-b", "html", str(source), str(tmp_path / "html")]
    )


def test_a_page_with_good_references_builds(tmp_path):
    """A re-exported name resolves to where it is defined (the module documented here)."""
    page = (
        "# Page\n\n{exc}`placerl.ConfigError` and {exc}`ConfigError`\n\n"
        "```{py:exception} placerl.errors.ConfigError\n```\n"
    )
    assert build(tmp_path, page) == 0


@pytest.mark.parametrize(
    ("line", "broken", "message"),
    [
        (
            "{func}`placerl.no_such_function`",
            3,
            "py:func reference target not found: placerl.no_such_function",
        ),
        ("[a page](missing.md)", 3, "'missing.md'"),
    ],
)
def test_a_broken_reference_fails_naming_page_and_line(tmp_path, capsys, line, broken, message):
    assert build(tmp_path, f"# Page\n\n{line}\n") != 0
    err = capsys.readouterr().err
    assert f"page.md:{broken}" in err and message in err, err
