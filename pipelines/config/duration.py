"""Human durations in config and on the command line: ``90s``, ``15m``, ``24h``, ``7d``, ``1w``, or milliseconds."""

from __future__ import annotations

import re

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_PATTERN = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration_ms(text: str | int) -> int:
    """Parse a duration to milliseconds; a bare number is milliseconds.

    Raises:
        ValueError: the text is not ``<digits><unit>`` with a known unit.
    """
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"duration must not be negative: {text}")
        return text
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"not a duration (use e.g. 90s, 15m, 24h, 7d): {text!r}")
    return int(match.group(1)) * _UNITS_MS[match.group(2) or "ms"]


