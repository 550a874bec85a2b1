"""Re-export of the in-memory fake store from ``tests/plan`` for the executor tests (same fake, one copy)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plan"))

from memory_store import MemoryTableStore

__all__ = ["MemoryTableStore"]
