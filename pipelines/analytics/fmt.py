"""Number formatting shared by takeaways, notebooks and the HTML report."""

from __future__ import annotations

import math

__all__ = ["human_bytes", "pct"]


def human_bytes(n: float | int | None) -> str:
    """``1536`` → ``"1.5 KiB"``; binary units; ``None``/NaN → ``"n/a"``; negative sizes keep their sign."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "n/a"
    sign = "-" if n < 0 else ""
    size = float(abs(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            return f"{sign}{size:,.0f} B" if unit == "B" else f"{sign}{size:,.1f} {unit}"
        size /= 1024
    return f"{sign}{size:,.1f} PiB"


def pct(x: float | None) -> str:
    """``0.1234`` → ``"12.3%"``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x * 100:.1f}%"
