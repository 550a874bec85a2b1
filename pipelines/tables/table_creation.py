"""Create a table once when several pipelines start at the same moment into one new warehouse.

Two drivers that both find a table missing both create it. With a log store that never overwrites a commit
(``commit_log_store``), one of them commits version 0 and the other fails: Delta reports the location as holding a
table it did not see when it started (``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``), or a concurrent change of the
protocol or metadata. The loser then reads the table the winner made as existing, after checking that its columns
and partitioning are the declared ones: a table made by another version of the code is named, never written into
blindly.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence

from pipelines.errors import ConfigError
from pipelines.tables.schemas import TableSchema

__all__ = ["check_existing", "create_once", "is_creation_race"]

_RACE = re.compile(r"DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION|FileAlreadyExistsException|already exists|"
                   r"ProtocolChangedException|MetadataChangedException|DELTA_PROTOCOL_CHANGED|DELTA_METADATA_CHANGED|"
                   r"ConcurrentWriteException|DELTA_CONCURRENT_WRITE", re.IGNORECASE)


def is_creation_race(exc: BaseException) -> bool:
    """True for the errors a driver gets when another one created the same table first."""
    java = getattr(exc, "java_exception", None)
    text = str(exc) if java is None else f"{exc} {java.getClass().getName()}"
    return bool(_RACE.search(text))


def check_existing(schema: TableSchema, columns: Mapping[str, str], partition_by: Sequence[str], where: str) -> None:
    """Refuse a table at ``where`` whose shared columns have other types, or that is partitioned otherwise.

    ``columns``: the existing table's column name -> type (``simpleString`` of Spark); a declared column it lacks is
    fine (writes add columns with ``mergeSchema``), as are columns the declaration no longer has.

    Raises:
        ConfigError: the first difference, named.
    """
    declared = {f.name: f.dataType.simpleString() for f in schema.to_spark().fields}
    for name, kind in declared.items():
        if name in columns and columns[name] != kind:
            raise ConfigError(f"table {schema.name} at {where} exists with column {name} of type {columns[name]}, "
                              f"not {kind}: it was made by another version of logdir-gc")
    if list(partition_by) != list(schema.partition_by):
        raise ConfigError(f"table {schema.name} at {where} exists partitioned by {list(partition_by)}, not "
                          f"{list(schema.partition_by)}: it was made by another version of logdir-gc")


def create_once(create: Callable[[], object], exists: Callable[[], bool], check: Callable[[], None], *,
                is_race: Callable[[BaseException], bool] = is_creation_race, attempts: int = 5,
                delay_s: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Run ``create``; True if this call made the table.

    After a creation race (``is_race``) the table is looked for again: once it exists (the winner's commit can
    take a moment to land), ``check`` verifies it and False is returned; while it does not, ``create`` is tried
    again, ``attempts`` times in all. Any other error, or the last race, is raised as it is.
    """
    for attempt in range(attempts):
        try:
            create()
            return True
        except Exception as exc:
            if not is_race(exc) or attempt + 1 == attempts:
                raise
        sleep(delay_s * (attempt + 1))
        if exists():
            check()
            return False
    raise AssertionError("unreachable")  # pragma: no cover
