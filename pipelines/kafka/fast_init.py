"""Hot-path constructors for frozen slotted dataclasses.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``; setting the slot
descriptors directly builds an identical object in about half the time. Only for classes without
``__post_init__`` or validation, called with every field, in declaration order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipelines import native

__all__ = ["fast_constructor", "python_fast_constructor"]

NATIVE = "pipelines.kafka._native_fastinit"


def fast_constructor(cls: type) -> Callable[..., Any]:
    """``make(*every_field_in_order)`` returning a ``cls`` equal to ``cls(*every_field_in_order)``.

    The compiled twin (``_native_fastinit.c``) stores the arguments into the slots in C when it is built;
    :func:`python_fast_constructor` is the reference.
    """
    make = python_fast_constructor(cls)
    compiled = native.load(NATIVE)
    if compiled is None:
        return make
    return compiled.maker(cls, tuple(getattr(cls, name) for name in cls.__dataclass_fields__))  # type: ignore[attr-defined]


def python_fast_constructor(cls: type) -> Callable[..., Any]:
    """The pure-Python ``fast_constructor``: generated code calling each slot descriptor's ``__set__``."""
    names = list(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__; use its constructor")
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params = ", ".join(f"a{i}" for i in range(len(names)))
    lines = [f"def make({params}):", "    obj = _new(_cls)"]
    for i, name in enumerate(names):
        ns[f"_s{i}"] = getattr(cls, name).__set__  # the slot's member descriptor
        lines.append(f"    _s{i}(obj, a{i})")
    lines.append("    return obj")
    exec("\n".join(lines), ns)  # source built from the dataclass's own field names only
    make = ns["make"]
    make.__qualname__ = make.__name__ = f"new_{cls.__name__}"
    return make
