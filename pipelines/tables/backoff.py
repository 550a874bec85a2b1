"""Bounded exponential backoff with full jitter: how often, and how long apart, a table operation is re-run.

Two layers re-run operations with it: commit conflicts (``base.retry_on_conflict``, short and many) and an
unreachable or throttling object store (``storage_retry.retry_transient``, few and seconds apart).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` runs in all; before run ``n + 1``, a random wait up to ``base_delay_s * 2**n`` (capped)."""

    attempts: int = 10
    base_delay_s: float = 0.05
    max_delay_s: float = 2.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * (2**attempt)))
