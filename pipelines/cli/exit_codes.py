"""Exit codes of ``logdir-gc``, one per error family (documented in docs/commands.md)."""

from __future__ import annotations

from pipelines import errors
from pipelines.kafka.bounded_read import FileTooLarge

OK = 0
USAGE = 2  # click's own code for a bad command line
UNREADABLE = 3  # nothing could be read (missing path, no permission)
CONFIG = 4
POLICY = 5  # plan or approval refused by policy / plan inconsistent
PRECONDITION = 6  # executor refused: precondition failed on disk
BUSY = 7  # a lock is held: broker running or another executor
DECODE = 8  # input is not the Kafka format it claims to be
FAILED = 9  # a run finished but failed (e.g. plan re-check disagreement)
UNAVAILABLE = 10  # the warehouse's object store stayed unreachable or throttling through every retry
HOST_IO = 11  # a write on the broker host failed (disk full, I/O error); rerun to resume
SPARK_START = 12  # Spark could not start: jars not resolvable (repository unreachable) or the JVM exited at start

#: Most specific first.
FAMILY_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (errors.ConfigError, CONFIG),
    (errors.PolicyViolation, POLICY),
    (errors.RecheckDisagreement, FAILED),
    (errors.PlanError, POLICY),
    (errors.ExecutorBusy, BUSY),
    (errors.HostIOError, HOST_IO),
    (errors.PreconditionFailed, PRECONDITION),
    (errors.DecodeError, DECODE),
    (errors.ReplayError, DECODE),
    (errors.SourceUnavailable, UNREADABLE),
    (errors.StorageUnavailable, UNAVAILABLE),
    (errors.SparkStartFailed, SPARK_START),
    (errors.PipelinesError, FAILED),
    (FileTooLarge, UNREADABLE),  # a file above its kind's size limit (bounded_read.LIMITS): refused unread
    (FileNotFoundError, UNREADABLE),
    (PermissionError, UNREADABLE),
    (NotADirectoryError, UNREADABLE),
)


def code_for(exc: BaseException) -> int:
    for family, code in FAMILY_CODES:
        if isinstance(exc, family):
            return code
    raise exc
