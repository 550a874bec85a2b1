"""Every C speed-up in the tree was built and imports (a silent fallback to pure Python would hide a broken build).

The differential tests of each speed-up (compiled vs pure-Python twin) live beside the twin's own tests.
Set ``KLGC_ALLOW_PURE_PYTHON=1`` on a machine without a C compiler to turn this check into a skip.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from pipelines import native

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(REPO.glob("pipelines/**/_native_*.c"))


def module_name(src: Path) -> str:
    return ".".join(src.relative_to(REPO).with_suffix("").parts)


@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_native_module_was_built(src: Path) -> None:
    if os.environ.get("KLGC_ALLOW_PURE_PYTHON") == "1":
        pytest.skip("KLGC_ALLOW_PURE_PYTHON=1: running without the C speed-ups is allowed here")
    importlib.import_module(module_name(src))


def test_pure_python_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    assert native.load("json") is None
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "0")
    assert native.load("json") is not None
    assert native.load("pipelines.no_such_module") is None
