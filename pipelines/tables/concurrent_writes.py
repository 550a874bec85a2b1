"""Run a step's independent table writes at the same time.

A Delta write to a small table is mostly driver-side work (reading the table's log, planning, committing) with a
few tiny tasks, one thread at a time. Writes to different tables do not conflict, so a step that writes several
(the crawl's three tables, the ingest's controller tables and event history) runs them in threads: one write's
driver work overlaps another's tasks. Threads are pyspark's ``InheritableThread``, so the Spark local properties of
the caller (job group, the step tag) follow each write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["run_writes"]


def run_writes(writes: Sequence[Callable[[], T]], *, spark: Any = None) -> list[T]:
    """Run ``writes`` and return their results in order; in threads when there is a Spark session and more than
    one write, else one after the other.

    Every write runs to its end before the first error (in ``writes`` order) is raised.
    """
    if spark is None or len(writes) < 2:
        return [write() for write in writes]
    from pyspark import InheritableThread

    results: list[Any] = [None] * len(writes)
    errors: list[BaseException | None] = [None] * len(writes)

    def runner(index: int) -> Callable[[], None]:
        def run() -> None:
            try:
                results[index] = writes[index]()
            except BaseException as exc:  # handed to the caller below
                errors[index] = exc

        return run

    threads = [InheritableThread(target=runner(i), name=f"klgc-write-{i}") for i in range(len(writes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
