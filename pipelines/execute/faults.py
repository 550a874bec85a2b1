"""Deterministic crash points for the crash-injection tests.

``KLGC_FAULT_POINT=<name>:<n>`` kills this process with SIGKILL (no cleanup, no flush, like ``kill -9``) the
``n``-th time (1-based) the executor passes the point ``name``; ``<name>:<n>:hang`` blocks there forever instead
(a hung disk or store, for the pre-start hook's hard deadline). Points are the journal step boundaries
(``<step>.<state>``, passed right after the record is fsynced) plus ``<step>.performed`` right after a
filesystem operation and before its completion is journalled. ``KLGC_FAULT_TRACE=<file>`` appends every point
passed to ``file`` so a test can enumerate them. Unset, both cost one dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV_POINT = "KLGC_FAULT_POINT"
ENV_TRACE = "KLGC_FAULT_TRACE"
_seen: Counter[str] = Counter()


def fault_point(name: str) -> None:
    """Pass the fault point ``name``: trace it and, when armed for this occurrence, die at once."""
    trace = os.environ.get(ENV_TRACE)
    if trace:
        with open(trace, "a", encoding="utf-8") as f:
            f.write(name + "\n")
    armed = os.environ.get(ENV_POINT)
    if not armed:
        return
    _seen[name] += 1
    hang = armed.endswith(":hang")
    target, _, count = armed.removesuffix(":hang").rpartition(":")
    if target == name and _seen[name] == int(count or 1):
        if hang:
            while True:
                signal.pause()
        os.kill(os.getpid(), signal.SIGKILL)
