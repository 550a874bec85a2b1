"""Table-store engines by name, imported lazily (so the executor never loads the Spark engine).

``known_engines`` is a read-only view of name → ``"module:Class"``; add engines with :func:`register_engine`.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import Any

from pipelines.errors import ConfigError
from pipelines.tables.base import TableStore

__all__ = ["get_engine", "known_engines", "open_store", "register_engine"]

_ENGINES: dict[str, str] = {
    "spark": "pipelines.tables.spark_engine:SparkTableStore",
    "rust": "pipelines.tables.rust_engine:RustTableStore",
}

known_engines: MappingProxyType[str, str] = MappingProxyType(_ENGINES)


def register_engine(name: str, target: str, *, clobber: bool = False) -> None:
    """Register ``target`` (``"module:Class"``) as engine ``name``.

    Raises:
        ValueError: ``name`` is taken by a different target and ``clobber`` is false, or ``target`` is malformed.
    """
    if ":" not in target:
        raise ValueError(f"engine target must look like 'module:Class', got {target!r}")
    if not clobber and _ENGINES.get(name, target) != target:
        raise ValueError(f"engine {name!r} is already registered as {_ENGINES[name]!r}")
    _ENGINES[name] = target


def get_engine(name: str) -> type[TableStore]:
    """Import and return the store class of engine ``name``.

    Raises:
        ConfigError: unknown engine name.
        ImportError: the engine's packages are not installed (e.g. pyspark for ``spark``).
    """
    try:
        target = _ENGINES[name]
    except KeyError:
        raise ConfigError(f"unknown table engine {name!r}; known: {sorted(_ENGINES)}") from None
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, TableStore)):
        raise ConfigError(f"engine {name!r} target {target!r} is not a TableStore")
    return cls


def open_store(engine: str, warehouse: str, **kwargs: Any) -> TableStore:
    """``open_store("rust", root)`` or ``open_store("spark", root, spark=spark)``."""
    return get_engine(engine)(warehouse=warehouse, **kwargs)
