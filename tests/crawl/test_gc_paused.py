"""Tasks pause the cyclic GC only while they run, and leave it as they found it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pipelines.crawl.rows import utc_now
from pipelines.crawl.tasks import LogDirJob, gc_paused, root_task


def test_gc_paused_restores_the_previous_state_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled(), "a caller that disabled GC keeps it disabled"
    finally:
        gc.enable()


def test_root_task_runs_without_cyclic_gc_and_restores_it(cluster: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A spy on the real scan (it runs unchanged) records whether GC was enabled inside the task."""
    import pipelines.crawl.rows as rows

    seen: list[bool] = []
    real = rows.scan_listing

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(rows, "scan_listing", spy)
    job = LogDirJob("r", "c", 1, str(cluster["b2-d0"]))
    out, chunks = root_task(job, utc_now(), include_segments=False, fanout_dirs=None)
    assert seen == [False] and gc.isenabled()
    assert len(out.log_dirs) == 1 and out.partition_dirs and not chunks
