"""What the log-dir readers report instead of raising: one ``Problem`` per finding, with a severity.

Severities, most serious first:

- ``fatal``: Kafka's broker would fail to start with this log dir as it is (e.g. an unparseable directory name).
- ``error``: a file Kafka needs is unreadable or corrupt; Kafka would mark the dir or the log offline, or refuse it.
- ``warning``: unusual but tolerated by Kafka (hidden dirs, leftover ``*.tmp`` files, a non-base64 cluster id).
- ``info``: worth knowing, normal in practice (checkpoint entries without a partition dir, missing segments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["fatal", "error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("fatal", "error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding. ``code`` is a stable snake_case identifier; ``message`` is for humans."""

    severity: Severity
    code: str
    message: str
    path: str = ""

    def at(self, path: str) -> Problem:
        """The same problem, located at ``path`` (readers of single files do not know where the bytes came from)."""
        return Problem(self.severity, self.code, self.message, path)

    def __str__(self) -> str:
        return self.text_at(self.path)

    def text_at(self, path: str) -> str:
        """``str(self.at(path))``, without making that problem."""
        if path:
            return f"{self.severity}: {self.code} [{path}]: {self.message}"
        return f"{self.severity}: {self.code}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "path": self.path, "message": self.message}


def worst(problems: tuple[Problem, ...] | list[Problem]) -> Severity | None:
    """The most serious severity among ``problems`` (None when there are none)."""
    present = {p.severity for p in problems}
    return next((s for s in SEVERITIES if s in present), None)
