"""Leave a short-lived command that built a large in-memory image without tearing the image down.

A replayed 19k-topic image is over a million objects: the cyclic collector walking them once gc is back on, and
the interpreter freeing them one by one at exit, cost about as much as the replay itself. A command that only
prints and exits calls :func:`request`; when the process is the console entry point (:func:`arm`, called by
``main`` run without an argv, never under tests), the collector stays off and the process leaves through
``os._exit`` once stdout and stderr are flushed.
"""

from __future__ import annotations

import gc
import os
import sys

_armed = False
_requested = False


def arm() -> None:
    global _armed
    _armed = True


def console() -> bool:
    """True when this process is the console entry point (``arm`` was called): a short-lived command."""
    return _armed


def request() -> None:
    global _requested
    if _armed:
        gc.disable()
        _requested = True


def finish(code: int) -> None:
    """Exit now with ``code`` if a command asked for it; otherwise return (the caller exits normally)."""
    if not _requested:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 1
    os._exit(code)
