"""Number formatting shared by takeaways, notebooks and the HTML report, and names made safe for a notebook."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pipelines.terminal_text import shown

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["human_bytes", "pct", "shown_frame"]


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


def _shown_cell(value: Any) -> Any:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list | tuple):
        return [_shown_cell(v) for v in value]
    return value


def shown_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` to display in a notebook: every text cell (and text in list cells) escaped and cut as on a terminal
    (``terminal_text.shown``), so a name from a disk, a metadata log or the warehouse cannot hide, reorder or forge
    what a reviewer reads; numbers, times and booleans as they are."""
    out = df.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(_shown_cell)
    out.columns = [shown(c) if isinstance(c, str) else c for c in out.columns]
    return out
