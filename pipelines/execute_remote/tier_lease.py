"""One remote executor per tier: a lease object in the tier's quarantine folder, created only if absent.

The state-dir lock (:func:`~pipelines.execute_remote.remote_journal.remote_lock`) keeps two remote executors on
one host apart. Two hosts, each with its own state dir, acting on one tier would each trust only their own journal;
the lease keeps them apart too. ``<quarantine folder>.executor-lease`` is created with a conditional write (S3
``If-None-Match: *``, local disk ``O_EXCL``; other fsspec stores look, then write: a window of one round trip),
names who took it, and is deleted on release if it is still the one written. An executor that finds it refuses
(``[tier_lease]``, exit 7) naming the holder. A lease left by a killed executor stays until the operator deletes it
(the message names the object): only a person can tell that the other run is gone, and that run's journal is on its
own host.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from types import TracebackType

from pipelines.errors import ExecutorBusy
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_store import TierStore

__all__ = ["LEASE_NAME", "TierLease"]

LEASE_NAME = ".executor-lease"
_SHOWN_BYTES = 1024


class TierLease:
    def __init__(self, tier: TierStore, target: RemoteTarget, command: str) -> None:
        self.tier = tier
        self.key = f"{target.quarantine_folder}{LEASE_NAME}"
        self.where = f"{target.location.rstrip('/')}/{self.key}"
        self.body = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "command": command,
                                "since": datetime.now(timezone.utc).isoformat(timespec="seconds")},
                               sort_keys=True).encode()
        self.held = False

    def __enter__(self) -> TierLease:
        if not self.tier.create_exclusive(self.key, self.body):
            raise ExecutorBusy(f"[tier_lease] another remote executor holds this tier: {self.where} "
                               f"({self._holder()}); if no remote executor runs, delete that object")
        self.held = True
        return self

    def _holder(self) -> str:
        try:
            held = json.loads(self.tier.read_head(self.key, _SHOWN_BYTES))
            return (f"{held['command']} on {held['host']}, pid {held['pid']}, since {held['since']}"
                    if isinstance(held, dict) and {"command", "host", "pid", "since"} <= held.keys()
                    else "its content is not a lease this tool wrote")
        except (OSError, ValueError) as exc:
            return f"unreadable: {type(exc).__name__}"

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if not self.held:
            return
        self.held = False
        try:  # only our own lease: one that another writer replaced is left for the operator to judge
            if self.tier.read_head(self.key, len(self.body) + 1) == self.body:
                self.tier.delete(self.key)
        except OSError:
            pass  # a lease we could not remove only makes the next run refuse with its name
