"""The optional C speed-ups (``pipelines/**/_native_*.c``, built by ``setup.py``), loaded in one place.

Each speed-up has a pure-Python twin that stays the reference. ``load`` returns the compiled module, or None when it
was not built (no C compiler at install time) or when ``KLGC_PURE_PYTHON=1`` asks for the pure-Python code (tests
compare both; an operator can rule the compiled code out).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_PYTHON_ENV = "KLGC_PURE_PYTHON"


def pure_python_forced() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def load(module: str) -> ModuleType | None:
    """The compiled module ``module`` (dotted name), or None."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
