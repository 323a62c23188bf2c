"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_python_examples() -> None:
    """There is something to check."""
    assert BLOCKS


@pytest.mark.parametrize("block", BLOCKS, ids=[b.splitlines()[0] for b in BLOCKS])
def test_readme_example_runs(block: str) -> None:
    """Each ```python block runs without error."""
    exec(compile(block, str(README), "exec"), {})
