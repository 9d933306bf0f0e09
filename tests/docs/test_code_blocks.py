"""Every Python block of the README and of the documentation's pages runs as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The pages people read: the README and the docs' own pages (not the generated ones).
PAGES = [
    ROOT / "README.md",
    *sorted(
        p
        for p in (ROOT / "docs").rglob("*.md")
        if not p.relative_to(ROOT / "docs").parts[0].startswith("_")
    ),
]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
BLOCKS = [
    (page, text[: match.start()].count("\n") + 2, match[1])
    for page in PAGES
    for text in [page.read_text()]
    for match in BLOCK.finditer(text)
]


@pytest.mark.parametrize(
    ("page", "line", "code"), BLOCKS, ids=[f"{p.relative_to(ROOT)}:{line}" for p, line, _ in BLOCKS]
)
def test_code_block_runs(page, line, code):
    """Named by page and line: a failing block says where it is."""
    from placerl.graph.orders import ORDERS

    namespace: dict = {}
    with ORDERS.scope():  # the README registers an order of its own
        exec(compile("\n" * (line - 1) + code, str(page.relative_to(ROOT)), "exec"), namespace)
