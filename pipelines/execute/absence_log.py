"""When this executor first saw each topic id absent from a complete controller image.

ZooKeeper keeps no record of a deletion: once ``/brokers/topics/<t>`` is gone, nothing says when it went. The
executor cannot trust the warehouse's history (``metadata_events``) for its grace floor, so it keeps its own:
``<state_dir>/absent-topic-ids-broker-<id>.json`` maps a topic id to the time an ``apply --execute`` first found
it absent. The deletion happened before that, so the time is a safe bound: the first apply that meets such a dir
skips it and starts the clock, a later one past the grace floor may move it. Written under the executor lock
(tmp + fsync + rename, no symlink followed); a damaged file is reported and treated as empty (which only delays).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from pipelines.errors import DecodeError
from pipelines.execute.journal import fsync_dir
from pipelines.kafka.listing import read_regular_file
from pipelines.kafka.uuid import Uuid


class AbsenceLog:
    def __init__(self, state_dir: str | os.PathLike[str], broker_id: int) -> None:
        self.path = Path(state_dir) / f"absent-topic-ids-broker-{broker_id}.json"
        self.problems: list[str] = []

    def read(self) -> dict[Uuid, int]:
        try:
            data = json.loads(read_regular_file(str(self.path)))
            return {Uuid.from_string(k): int(v) for k, v in data.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError, DecodeError, RecursionError) as exc:
            self.problems.append(f"{self.path} unreadable, treated as empty (it can only delay items): {exc}")
            return {}

    def add(self, noticed: Mapping[Uuid, int]) -> None:
        """Record ids seen absent for the first time (earlier records are kept)."""
        if not noticed:
            return
        merged = {**{str(k): v for k, v in noticed.items()}, **{str(k): v for k, v in self.read().items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, json.dumps(merged, sort_keys=True).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
