"""Declarative schemas of every Delta table the pipeline writes.

One definition serves both engines: ``TableSchema.to_arrow()`` for delta-rs (``deltalake``) and
``TableSchema.to_spark()`` for delta-spark. pyspark is imported only inside ``to_spark`` so the executor on a
broker host can use these schemas without a JVM. Timestamps are microsecond UTC on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

#: Column types understood by both engines.
TYPES = ("string", "int", "long", "bool", "double", "timestamp", "array<string>", "array<int>")


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    doc: str = ""

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"column {self.name}: unknown type {self.type!r}")


@dataclass(frozen=True, slots=True)
class TableSchema:
    name: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()
    doc: str = ""

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def to_arrow(self) -> pa.Schema:
        import pyarrow as pa

        mapping: dict[str, Any] = {
            "string": pa.string(),
            "int": pa.int32(),
            "long": pa.int64(),
            "bool": pa.bool_(),
            "double": pa.float64(),
            "timestamp": pa.timestamp("us", tz="UTC"),
            "array<string>": pa.list_(pa.string()),
            "array<int>": pa.list_(pa.int32()),
        }
        return pa.schema([pa.field(c.name, mapping[c.type], nullable=c.nullable) for c in self.columns])

    def to_spark(self) -> StructType:
        from pyspark.sql import types as T

        mapping: dict[str, Any] = {
            "string": T.StringType(),
            "int": T.IntegerType(),
            "long": T.LongType(),
            "bool": T.BooleanType(),
            "double": T.DoubleType(),
            "timestamp": T.TimestampType(),
            "array<string>": T.ArrayType(T.StringType()),
            "array<int>": T.ArrayType(T.IntegerType()),
        }
        return T.StructType([T.StructField(c.name, mapping[c.type], c.nullable) for c in self.columns])


def _t(name: str, doc: str, partition_by: tuple[str, ...], *cols: tuple[str, ...]) -> TableSchema:
    columns = tuple(Column(c[0], c[1], c[0] not in _REQUIRED, c[2] if len(c) > 2 else "") for c in cols)
    return TableSchema(name, columns, partition_by, doc)


_REQUIRED = frozenset({"run_id", "cluster", "plan_id", "item_id"})

_RUN = (("run_id", "string", "crawl run id; reruns with the same id replace that run's rows"), ("cluster", "string"))
_WHERE = (("broker_id", "int"), ("log_dir", "string", "log-dir URL as crawled"))

CRAWL_RUNS = _t(
    "crawl_runs",
    "One row per crawl run: its outcome, written last (a rerun says `running` while it rewrites the run's rows).", (),
    *_RUN,
    ("started_at", "timestamp"), ("finished_at", "timestamp"),
    ("status", "string", "running | succeeded | partial | failed"),
    ("source", "string", "listing | inventory"),
    ("brokers", "int"), ("log_dirs", "int"), ("partition_dirs", "long"), ("files", "long"), ("bytes", "long"),
    ("errors", "long"), ("config_json", "string"),
    ("code_path", "string", "compiled | pure_python | mixed: whether the crawl tasks ran the compiled speed-ups"),
)

INGEST_RUNS = _t(
    "ingest_runs", "One row per controller-metadata ingest per run; detect and plan refuse a run without a"
    " succeeded one.", (),
    *_RUN,
    ("started_at", "timestamp"), ("finished_at", "timestamp"),
    ("status", "string", "running | succeeded | failed"),
    ("source", "string"), ("metadata_offset", "long", "last replayed metadata offset"),
    ("image_complete", "bool"), ("topics", "int"), ("partitions", "long"), ("brokers", "int"), ("events", "long"),
)

LOG_DIRS = _t(
    "log_dirs", "One row per broker log dir per run: root files and filesystem totals.", ("run_id",),
    *_RUN, *_WHERE,
    ("meta_version", "int"), ("meta_cluster_id", "string"), ("meta_node_id", "int"),
    ("directory_id", "string", "KIP-858 directory.id (base64url)"),
    ("has_lock_file", "bool"), ("clean_shutdown", "bool"), ("clean_shutdown_broker_epoch", "long"),
    ("is_metadata_log_dir", "bool", "holds __cluster_metadata-0"),
    ("fs_total_bytes", "long"), ("fs_used_bytes", "long"), ("fs_free_bytes", "long"),
    ("attributed_bytes", "long", "bytes the crawl attributed to partition dirs and known root files"),
    ("partition_dirs", "int"), ("problems", "array<string>"), ("crawled_at", "timestamp"),
)

PARTITION_DIRS = _t(
    "partition_dirs", "One row per partition directory per run.", ("run_id",),
    *_RUN, *_WHERE,
    ("dir_name", "string"),
    ("kind", "string", "live | delete | future | stray | metadata | unparseable"),
    ("topic", "string", "parsed from the dir name (may be truncated for -delete/-stray)"),
    ("partition", "int"), ("unique_id", "string", "32-hex id of -delete/-future/-stray dirs"),
    ("topic_id", "string", "from partition.metadata, base64url"),
    ("partition_metadata_status", "string", "ok | missing | empty | malformed | zero_id | invalid_id | unreadable"),
    ("files", "int"), ("bytes", "long"), ("log_bytes", "long"), ("index_bytes", "long"), ("segment_count", "int"),
    ("min_base_offset", "long"), ("max_base_offset", "long"),
    ("oldest_mtime", "timestamp"), ("newest_mtime", "timestamp"), ("dir_mtime", "timestamp"),
    ("fingerprint", "string", "sha256 over sorted (file, size, mtime in whole seconds); re-checked by the executor"),
    ("problems", "array<string>"), ("crawled_at", "timestamp"),
    ("leader_epochs", "string", "leader-epoch-checkpoint as parsed: JSON [[epoch, start offset], ...]; null when"
     " absent, empty or malformed"),
)

SEGMENT_FILES = _t(
    "segment_files", "Optional per-file detail.", ("run_id",),
    *_RUN, *_WHERE, ("dir_name", "string"), ("file_name", "string"), ("base_offset", "long"),
    ("suffix", "string"), ("state", "string", "'' | deleted | cleaned | swap"), ("bytes", "long"),
    ("mtime", "timestamp"),
)

CRAWL_ERRORS = _t(
    "crawl_errors", "Anything the crawl could not read; never a failed job.", ("run_id",),
    *_RUN, *_WHERE, ("path", "string"), ("stage", "string"), ("error_class", "string"), ("reason", "string"),
    ("at", "timestamp"),
)

_META = (("metadata_offset", "long", "last replayed metadata offset"), ("image_complete", "bool"), ("source", "string"))

CONTROLLER_TOPICS = _t(
    "controller_topics", "Topics in the controller image, per run.", ("run_id",),
    *_RUN, ("topic_id", "string", "null for a ZooKeeper-mode topic that has no topic id"), ("topic", "string"),
    ("partition_count", "int"), *_META,
    ("deletion_queued_at", "timestamp", "ZooKeeper mode: when the topic was queued in /admin/delete_topics; null if"
     " it is not"),
)

CONTROLLER_PARTITIONS = _t(
    "controller_partitions", "Partition registrations in the controller image, per run.", ("run_id",),
    *_RUN, ("topic_id", "string"), ("topic", "string"), ("partition", "int"),
    ("replicas", "array<int>"), ("isr", "array<int>"), ("leader", "int"), ("leader_epoch", "int"),
    ("partition_epoch", "int"), ("adding_replicas", "array<int>"), ("removing_replicas", "array<int>"),
    ("directories", "array<string>", "KIP-858 dir id per replica, same order as replicas"), *_META,
)

CONTROLLER_BROKERS = _t(
    "controller_brokers", "Broker registrations in the controller image, per run.", ("run_id",),
    *_RUN, ("broker_id", "int"), ("broker_epoch", "long"), ("fenced", "bool"), ("in_controlled_shutdown", "bool"),
    ("log_dirs", "array<string>", "registered online directory ids"), ("rack", "string"),
    ("file_delete_delay_ms", "long", "effective log.segment.delete.delay.ms"), *_META,
)

CONTROLLER_BROKER_CONFIGS = _t(
    "controller_broker_configs",
    "Dynamic broker configs in the controller image, per run: every broker's, registered or not (a ZooKeeper-mode"
    " broker that is stopped is not registered but keeps its `/config/brokers/<id>`), and the cluster-wide default.",
    ("run_id",),
    *_RUN, ("broker_id", "int", "null for the cluster-wide default (`<default>` in ZooKeeper, resource \"\" in KRaft)"),
    ("name", "string"), ("value", "string"),
    ("long_value", "long", "the value read as Kafka reads a LONG config (trimmed, optional sign, decimal); null if it"
     " is not one"), *_META,
)

METADATA_EVENTS = _t(
    "metadata_events",
    "Durable history of topic ids, merged incrementally: survives Kafka truncating its own log. A log event is keyed"
    " by (cluster, offset, event, topic_id, partition); an event read from a snapshot (detail `from_snapshot`) by what"
    " it states (cluster, event, topic_id, partition, detail), so a newer snapshot restating a topic adds nothing.",
    ("cluster",),
    ("cluster", "string"), ("offset", "long"), ("timestamp", "timestamp", "batch append time"),
    ("event", "string", "topic_created | topic_removed | partition_added | replicas_changed | ..."),
    ("topic_id", "string"), ("topic", "string"), ("partition", "int"), ("detail", "string", "JSON"),
    ("source", "string"), ("run_id", "string", "run that first ingested it"),
)

FINDINGS = _t(
    "findings", "One row per partition dir per run, with its class (ok included).", ("run_id",),
    *_RUN, *_WHERE, ("dir_name", "string"), ("topic", "string"), ("partition", "int"), ("topic_id", "string"),
    ("class", "string"), ("protected", "bool"), ("reason", "string"), ("bytes", "long"),
    ("kind", "string"), ("controller_topic_id", "string", "id the controller has for this topic name"),
    ("metadata_offset", "long"), ("garbage_since", "timestamp", "grace clock start: the metadata event time"),
    ("plannable", "bool", "garbage, not protected, grace elapsed"), ("evidence", "string", "JSON"),
    ("fingerprint", "string"), ("directory_id", "string"), ("detected_at", "timestamp"),
)

_SEGMENT = (("topic", "string"), ("topic_id", "string", "base64url"), ("partition", "int"),
            ("segment_id", "string", "RemoteLogSegmentId's id, base64url"))

REMOTE_OBJECTS = _t(
    "remote_objects", "One row per object of the remote tier (KIP-405) per run, listed through fsspec or read from an"
    " S3 Inventory report; a key that fits no layout, or an entry the listing could not read, is an error row (never"
    " planned).", ("run_id",),
    *_RUN, ("key", "string", "relative to remote_tier.location"), ("size", "long", "bytes, as listed"),
    ("last_modified", "timestamp"), ("etag", "string", "without quotes"), *_SEGMENT,
    ("start_offset", "long"), ("object_kind", "string", "the key's suffix: log, indexes, rsm-manifest, index, ..."),
    ("error", "string", "why the key is an error row; null when parsed"),
)

REMOTE_LOG_SEGMENTS = _t(
    "remote_log_segments", "The replayed `__remote_log_metadata`, per run: one row per remote segment with its latest"
    " state as the broker's cache holds it, and one row per partition delete state (`segment_id` null).", ("run_id",),
    *_RUN, *_SEGMENT,
    ("state", "string", "COPY_SEGMENT_STARTED | COPY_SEGMENT_FINISHED | DELETE_SEGMENT_STARTED |"
     " DELETE_SEGMENT_FINISHED | DELETE_PARTITION_MARKED | DELETE_PARTITION_STARTED | DELETE_PARTITION_FINISHED"),
    ("event_time", "timestamp", "the latest accepted event"),
    ("first_event_time", "timestamp", "the first accepted event"),
    ("start_offset", "long"), ("end_offset", "long"), ("segment_bytes", "long", "the metadata's size (compare only;"
     " bytes are the listing's)"), ("broker_id", "int", "broker of the latest accepted event"),
    ("max_timestamp", "timestamp"), ("leader_epochs", "string", "JSON [[epoch, start offset], ...]"),
    ("metadata_partition", "int", "where the latest accepted event was read"), ("metadata_offset", "long"),
    ("metadata_partitions", "array<int>", "every metadata partition holding an event of it"),
    ("base_missing", "bool", "its COPY_SEGMENT_STARTED record was not read"),
    ("dropped_events", "int", "its events Kafka's cache would drop"),
)

REMOTE_FINDINGS = _t(
    "remote_findings", "One row per remote segment with listed objects per run, with its class (remote_ok included)."
    " Plan items join it with `remote_objects` on (cluster, run_id, topic_id, partition, segment_id).", ("run_id",),
    *_RUN, *_SEGMENT, ("start_offset", "long"),
    ("class", "string", "remote_deleted_topic | remote_copy_incomplete | remote_delete_incomplete |"
     " remote_delete_leaked | remote_untracked | remote_outside_lineage | remote_ok"),
    ("reason", "string", "every fact, and when not plannable every reason why"),
    ("bytes", "long", "sum of its objects' listed sizes"), ("objects", "int"),
    ("plannable", "bool"), ("garbage_since", "timestamp", "grace clock start (null for classes never planned)"),
)

GC_PLANS = _t(
    "gc_plans", "One row per plan; status changes are Delta transactions.", (),
    ("plan_id", "string"), ("cluster", "string"), ("created_at", "timestamp"), ("created_by", "string"),
    ("run_id", "string"), ("metadata_offset", "long"), ("content_hash", "string"), ("status", "string"),
    ("item_count", "int"), ("total_bytes", "long"), ("expires_at", "timestamp"), ("superseded_by", "string"),
    ("approvals", "array<string>", "approver names bound to content_hash"), ("updated_at", "timestamp"),
    ("plan_json", "string"),
)

#: Columns holding whole documents (a fleet's plan JSON is tens of MB): written without Parquet statistics or a
#: dictionary, which would only copy the value again (``rust_engine``).
DOCUMENT_COLUMNS: dict[str, tuple[str, ...]] = {"gc_plans": ("plan_json",)}

GC_PLAN_ITEMS = _t(
    "gc_plan_items", "Items of each plan.", ("plan_id",),
    ("plan_id", "string"), ("item_id", "string"), ("cluster", "string"), *_WHERE, ("dir_name", "string"),
    ("topic", "string"), ("partition", "int"), ("topic_id", "string"), ("class", "string"), ("bytes", "long"),
    ("fingerprint", "string"), ("reason", "string"),
    ("kind", "string", "log_dir (a partition dir of `broker_id`) | remote_segment (a remote-tier segment; `broker_id`"
                       " 2147483647, no `log_dir`); null in rows written before remote items: log_dir"),
    ("segment_id", "string", "remote_segment: the segment's id (base64url Uuid)"),
    ("start_offset", "long", "remote_segment: the segment's start offset"),
)

GC_PLAN_AUDIT = _t(
    "gc_plan_audit", "Every plan state transition: who, when, why, which hash.", (),
    ("plan_id", "string"), ("at", "timestamp"), ("actor", "string"), ("action", "string"),
    ("from_status", "string"), ("to_status", "string"), ("comment", "string"), ("content_hash", "string"),
)

GC_PLAN_SIGNATURES = _t(
    "gc_plan_signatures",
    "Signed proposals, approvals and rejections, one row beside each such audit row (same `plan_id` and `at`). An"
    " executor that requires signatures reads only `statement` and `signature` and checks them against its own"
    " allowed_signers; the other columns are copies for readers.", (),
    ("plan_id", "string"), ("at", "timestamp", "the `at` of the audit row it belongs to"),
    ("action", "string", "propose | approve | reject"), ("signer", "string", "principal the statement names"),
    ("content_hash", "string"), ("key_fingerprint", "string", "SHA256 fingerprint of the signing key"),
    ("statement", "string", "the signed canonical statement (text)"),
    ("signature", "string", "armored SSHSIG, namespace kafka-logdir-gc-plan@v1"),
)

GC_JOURNAL = _t(
    "gc_journal", "Mirror of the executors' on-host journals.", ("cluster",),
    ("cluster", "string"), ("broker_id", "int"), ("plan_id", "string"), ("item_id", "string"), ("seq", "long"),
    ("step", "string"), ("state", "string", "intent | done | skipped | failed"), ("at", "timestamp"),
    ("detail", "string"),
)

ALL_TABLES: MappingProxyType[str, TableSchema] = MappingProxyType(
    {
        t.name: t
        for t in (
            CRAWL_RUNS, INGEST_RUNS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, CRAWL_ERRORS, CONTROLLER_TOPICS,
            CONTROLLER_PARTITIONS, CONTROLLER_BROKERS, CONTROLLER_BROKER_CONFIGS, METADATA_EVENTS, FINDINGS,
            GC_PLANS, GC_PLAN_ITEMS, GC_PLAN_AUDIT, GC_PLAN_SIGNATURES, GC_JOURNAL, REMOTE_OBJECTS,
            REMOTE_LOG_SEGMENTS, REMOTE_FINDINGS,
        )
    }
)
