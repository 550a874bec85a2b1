"""The executor never blocks on a FIFO planted where it reads a file (partition.metadata, meta.properties)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pipelines.errors import PreconditionFailed
from pipelines.execute.observe import ItemSkipped, _topic_id
from pipelines.execute.preconditions import check_host
from pipelines.plan.model import GcPlan


def _run_bounded(fn, *args) -> BaseException | None:
    """Run ``fn`` in a thread; a thread still blocked after 30 s means it hung on the FIFO."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn(*args)
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():
        pytest.fail("blocked reading a FIFO (the daemon thread is abandoned)")
    return outcome[0]


def test_fifo_partition_metadata_skips_the_item(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    os.mkfifo(part / "partition.metadata")
    exc = _run_bounded(_topic_id, part)
    assert isinstance(exc, ItemSkipped) and "partition.metadata" in str(exc)


def test_fifo_meta_properties_refuses_the_host(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "meta.properties")
    plan = GcPlan.model_validate({"plan_id": "p", "cluster": "c", "cluster_id": "x", "created_by": "a",
                                  "created_at": "2026-01-01T00:00:00Z", "run_id": "r"})
    exc = _run_bounded(check_host, plan, 1, str(tmp_path), [])
    assert isinstance(exc, PreconditionFailed) and "meta.properties" in str(exc)
