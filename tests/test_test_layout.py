"""Test modules live in folders without ``__init__.py``, so pytest imports them by basename: two test files with
the same name anywhere under tests/ stop the whole collection. Keep every basename unique."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1], "rename one of them"
