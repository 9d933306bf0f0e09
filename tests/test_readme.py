"""Every Python block of the README runs as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    from placerl.graph.orders import ORDERS

    namespace: dict = {}
    with ORDERS.scope():  # the README registers an order of its own
        exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), namespace)
