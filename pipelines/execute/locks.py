"""The two locks of an apply: Kafka's own ``<logdir>/.lock`` and one executor lock per broker.

Kafka (``LogManager.lockLogDirs``) holds ``<logdir>/.lock`` with ``FileChannel.tryLock`` while the broker runs;
on Linux the JVM implements that with a POSIX record lock (fcntl). ``fcntl.lockf`` takes the same kind of lock,
so holding it proves the broker is down and keeps it from starting while we work (it fails with "Failed to
acquire lock"). ``fcntl.flock`` would NOT conflict (a separate BSD lock), so it is never used here.

POSIX record locks belong to the process and are released when the process closes ANY descriptor of the file:
each lock file is opened exactly once per process and the descriptor is kept until release. Taking the same
log dir twice in one process is refused instead (it would silently share one lock).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType

from pipelines.errors import ExecutorBusy

KAFKA_LOCK_NAME = ".lock"
_held: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of lock files held by this process


class FileLock:
    """An exclusive, non-blocking POSIX record lock on ``path`` (created if missing), held until release."""

    def __init__(self, path: str | os.PathLike[str], *, busy_message: str, create: bool = True) -> None:
        self.path = Path(path)
        self.busy_message = busy_message
        self.create = create
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    def acquire(self) -> FileLock:
        flags = os.O_RDWR | (os.O_CREAT if self.create else 0)
        fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key in _held:
            os.close(fd)  # closing a second descriptor would also drop the lock we already hold
            raise ExecutorBusy(f"{self.busy_message}: {self.path} is already locked by this process")
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise ExecutorBusy(f"{self.busy_message} ({self.path} is locked)") from None
            raise
        self._fd, self._key = fd, key
        _held[key] = str(self.path)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, key = self._fd, self._key
        self._fd = self._key = None
        if key is not None:
            _held.pop(key, None)
        os.close(fd)  # closing releases the record lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def kafka_dir_lock(log_dir: str | os.PathLike[str]) -> FileLock:
    """Kafka's lock of ``log_dir``; busy means the broker (or another tool) is using the log dir."""
    return FileLock(Path(log_dir) / KAFKA_LOCK_NAME,
                    busy_message=f"log dir {log_dir} is in use: the broker is running (stop it first)")


def executor_lock(state_dir: str | os.PathLike[str], broker_id: int) -> FileLock:
    """One executor per broker at a time."""
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    return FileLock(Path(state_dir) / f"executor-broker-{broker_id}.lock",
                    busy_message=f"another logdir-gc executor is already running for broker {broker_id}")
