"""The project's error hierarchy: one root, one family per concern.

Storage failures stay builtin ``OSError`` subclasses; these classes describe what *our* code found wrong.
The CLI maps each family to a distinct exit code (see ``pipelines.cli.exit_codes``).
"""

from __future__ import annotations


class PipelinesError(Exception):
    """Root of every error this project raises on purpose."""


class DecodeError(PipelinesError):
    """Bytes or text that do not follow a Kafka format.

    Attributes:
        offset: byte offset (or line number for text formats) where decoding failed, when known.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (at offset {offset})")
        self.offset = offset


class ConfigError(PipelinesError):
    """A configuration file or command-line value is invalid."""


class ReplayError(PipelinesError):
    """A metadata record cannot be applied to the image (e.g. a change to an unknown partition)."""


class PlanError(PipelinesError):
    """A GC plan is inconsistent, failed its independent re-check, or violates policy."""


class RecheckDisagreement(PlanError):
    """The plan's independent re-check disagreed with the Spark join: no plan is written (the run failed, exit 9)."""


class PolicyViolation(PlanError):
    """An approval or plan breaks a configured rule; the message names the rule."""


class PreconditionFailed(PipelinesError):
    """The executor found the disk or the plan not as the plan expected; nothing was changed."""


class ExecutorBusy(PipelinesError):
    """Another executor, or a running broker, holds a lock the executor needs."""


class HostIOError(PipelinesError):
    """A write on the broker host failed (disk full, I/O error); every completed step is journalled, so a rerun
    resumes where it stopped."""


class SourceUnavailable(PipelinesError):
    """A configured controller metadata service (ZooKeeper) cannot be reached or read."""


class StorageUnavailable(PipelinesError):
    """The warehouse's object store stayed unreachable or kept throttling through every retry."""


class SparkStartFailed(PipelinesError):
    """Spark could not start: its jars could not be resolved, or the driver JVM exited before it was up."""


class StepRefused(PipelinesError):
    """A pipeline step will not run on a run id whose earlier step (crawl, ingest) did not succeed."""
