"""The remote executor's journal and lock: the local executor's append-only, fsynced :class:`Journal` and
:func:`executor_lock`, kept in ``executor.state_dir`` as ``journal-remote.jsonl`` (records carry broker id
:data:`~pipelines.plan.model.REMOTE_BROKER_ID`).

Steps of one segment: ``item.intent``; per key ``copy.intent`` → (server-side copy, ``copy.performed``) →
``copy.done`` (the copy verified, with its facts) or ``copy.failed``; then per key ``delete.intent`` → (delete,
``delete.performed``) → ``delete.done``; ``item.done``. Restore: per key ``restore_copy.*`` then
``restore_delete.*`` (the quarantined copy removed), ``restore.done``. Purge: per key ``purge_delete.*``,
``purge.done``. A key is deleted only after its ``copy.done``; a rerun reads the journal back and continues.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError
from pipelines.execute.journal import DONE, INTENT, Journal, JournalRecord
from pipelines.execute.locks import executor_lock
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_lease import TierLease
from pipelines.execute_remote.tier_store import TierStore
from pipelines.plan.model import REMOTE_BROKER_ID

__all__ = ["SegmentHistory", "open_journal", "remote_lock", "remote_state_dir"]

QUARANTINED, RESTORED, PURGED = "quarantined", "restored", "purged"


def remote_state_dir(config: AppConfig) -> Path:
    """``executor.state_dir``: required (the remote executor has no log dir to put it beside)."""
    if not config.executor.state_dir:
        raise ConfigError("the remote executor needs executor.state_dir (its journal and lock)")
    return Path(config.executor.state_dir)


def open_journal(config: AppConfig, cluster: str) -> Journal:
    journal = Journal(remote_state_dir(config), cluster, REMOTE_BROKER_ID)
    journal.path = journal.dir / "journal-remote.jsonl"
    return journal


@contextmanager
def remote_lock(config: AppConfig, tier: TierStore, target: RemoteTarget, command: str) -> Iterator[None]:
    """One remote executor per state dir (a lock file) and per tier (a lease object in the tier: :mod:`.tier_lease`),
    taken in that order."""
    with executor_lock(remote_state_dir(config), REMOTE_BROKER_ID), TierLease(tier, target, command):
        yield


@dataclass
class SegmentHistory:
    """What the journal says about one segment of one plan."""

    records: list[JournalRecord] = field(default_factory=list)

    def _keys(self, step: str, state: str) -> dict[str, dict[str, Any]]:
        return {str(r.detail.get("key")): r.detail for r in self.records if r.step == step and r.state == state}

    @property
    def state(self) -> str | None:
        """``quarantined``, ``restored``, ``purged`` or None (never completely quarantined)."""
        out: str | None = None
        for r in self.records:
            if r.state != DONE:
                continue
            if r.step == "item" and out is None:
                out = QUARANTINED
            elif r.step == "restore" and out == QUARANTINED:
                out = RESTORED
            elif r.step == "purge" and out == QUARANTINED:
                out = PURGED
        return out

    @property
    def quarantined_at(self) -> str | None:
        return next((r.at for r in self.records if r.step == "item" and r.state == DONE), None)

    def copied(self) -> dict[str, dict[str, Any]]:
        """key → facts of its verified copy (``dst``, ``size``, ``etag``, maybe ``sha256``)."""
        return self._keys("copy", DONE)

    def deleted(self) -> set[str]:
        return set(self._keys("delete", DONE))

    def delete_intended(self) -> set[str]:
        return set(self._keys("delete", INTENT)) - self.deleted()

    def done(self, step: str) -> set[str]:
        return set(self._keys(step, DONE))

    def intended(self, step: str) -> set[str]:
        return set(self._keys(step, INTENT)) - self.done(step)


def histories(journal: Journal, plan_id: str | None = None) -> dict[tuple[str, str], SegmentHistory]:
    """(plan id, item id) → its history (every plan when ``plan_id`` is None)."""
    out: dict[tuple[str, str], SegmentHistory] = {}
    for rec in journal.records():
        if rec.item_id and (plan_id is None or rec.plan_id == plan_id):
            out.setdefault((rec.plan_id, rec.item_id), SegmentHistory()).records.append(rec)
    return out
