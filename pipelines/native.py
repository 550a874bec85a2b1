"""The optional C speed-ups (``pipelines/**/_native_*.c``, built by ``setup.py``), loaded in one place.

Each speed-up has a pure-Python twin that stays the reference. ``load`` returns the compiled module, or None when it
was not built (no C compiler at install time) or when ``KLGC_PURE_PYTHON=1`` asks for the pure-Python code (tests
compare both; an operator can rule the compiled code out).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from types import ModuleType

PURE_PYTHON_ENV = "KLGC_PURE_PYTHON"
_pure_blocks = 0


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """Within the block ``load`` returns None, so code that loads its compiled twin per call runs the reference.

    The executor re-reads controller metadata in such a block: its safety re-check then shares no compiled code with
    the crawl and plan that produced the plan (constructors bound at import time stay as they are).
    """
    global _pure_blocks
    _pure_blocks += 1
    try:
        yield
    finally:
        _pure_blocks -= 1


def pure_python_forced() -> bool:
    return _pure_blocks > 0 or os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def load(module: str) -> ModuleType | None:
    """The compiled module ``module`` (dotted name), or None."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


#: The speed-ups a crawl task uses: the compiled lister and the slotted-dataclass constructors.
CRAWL_SPEEDUPS = ("pipelines.crawl._native_dirscan", "pipelines.kafka._native_fastinit")
COMPILED = "compiled"
PURE_PYTHON = "pure_python"


def code_path(modules: tuple[str, ...] = CRAWL_SPEEDUPS) -> str:
    """``compiled`` when every one of ``modules`` loads in this process, else ``pure_python``.

    A Spark executor on another platform (or one that got the package as a zip, from which Python cannot load
    extension modules) runs the pure-Python twins; tasks report this so the run says which path ran.
    """
    return COMPILED if all(load(m) is not None for m in modules) else PURE_PYTHON
