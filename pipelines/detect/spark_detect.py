"""Classify every crawled partition directory against the controller tables: one ``findings`` row per dir.

Only joins; the partition dirs are never collected to the driver. Tables of a topic's or a broker's size (topics,
brokers, event times per topic) are broadcast; those of a partition's size (partition registrations, event times
per partition: 633k rows for 100k topics) are left to Spark, which broadcasts them when its size estimate is small
and joins them by shuffle when not (forced broadcasts of them ran a 1 GiB driver out of heap).

Each rule below is a small function returning a :class:`Rule` (condition, class, reason, grace-clock start);
:func:`classify_column` folds them, first match wins, in the same order as the independent re-check in
``pipelines.plan.recheck``.

All inputs must describe ONE crawl run (``partition_dirs``, ``log_dirs``, ``controller_*`` of that run);
``metadata_events`` is the durable per-cluster history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.models import DetectConfig
from pipelines.detect import classes as C
from pipelines.detect.params import (
    ASSIGNED_DELETE_REASON,
    DELETE_DELAY_CONFIG_KEY,
    NO_TOPIC_ID_REASON,
    PM_MISSING_STATUSES,
    PM_OK,
    RESERVED_DIRECTORY_IDS,
    protected_patterns,
)
from pipelines.kafka.uuid import METADATA_TOPIC_ID
from pipelines.tables.schemas import FINDINGS

__all__ = ["RULES", "Rule", "classify_column", "detect"]

col = F.col


@dataclass(frozen=True)
class Rule:
    name: str
    when: Column
    cls: Column
    reason: Column
    since: Column


def _lit_null_ts() -> Column:
    return F.lit(None).cast("timestamp")


def _by_kind(base: str) -> Column:
    """Stray and future dirs get their own class for every garbage reason."""
    return (F.when(col("kind") == "stray", F.lit(C.STRAY))
            .when(col("kind") == "future", F.lit(C.ABANDONED_FUTURE))
            .otherwise(F.lit(base)))


def _member() -> Column:
    """This broker is in replicas or adding_replicas."""
    return (F.coalesce(F.array_contains(col("replicas"), col("broker_id")), F.lit(False))
            | F.coalesce(F.array_contains(col("adding_replicas"), col("broker_id")), F.lit(False)))


def _member_by_name() -> Column:
    """This broker is in replicas or adding_replicas of the partition the controller has under the dir's topic NAME
    (what the executor checks when a dir has no topic id)."""
    return (F.coalesce(F.array_contains(col("n_replicas"), col("broker_id")), F.lit(False))
            | F.coalesce(F.array_contains(col("n_adding_replicas"), col("broker_id")), F.lit(False)))


def _reassigning() -> Column:
    return (F.coalesce(F.size(col("adding_replicas")), F.lit(0)) > 0) | (
        F.coalesce(F.size(col("removing_replicas")), F.lit(0)) > 0)


def _assigned_dir() -> Column:
    """Directories entry at the broker's index in replicas (KIP-858 ``directory(brokerId)``)."""
    pos = F.array_position(col("replicas"), col("broker_id")).cast("int")
    return F.when(pos > 0, F.try_element_at(col("directories"), pos))


def _deciding_dir() -> Column:
    """The assigned dir when it is one of the broker's registered dirs (not a reserved id), else null."""
    d = col("_assigned_dir")
    ok = (d.isNotNull() & ~d.isin(*sorted(RESERVED_DIRECTORY_IDS))
          & F.coalesce(F.array_contains(col("b_log_dirs"), d), F.lit(False)))
    return F.when(ok, d)


def _age_ms(ts: Column) -> Column:
    return (F.unix_micros(col("_now")) - F.unix_micros(ts)) / 1000


def _reason(*parts: Column | str) -> Column:
    return F.concat_ws("", *[p if isinstance(p, Column) else F.lit(p) for p in parts])


# -- rules, in order ---------------------------------------------------------------------------------------------

def rule_unparseable() -> Rule:
    return Rule("unparseable", col("kind") == "unparseable", F.lit(C.UNPARSEABLE_DIR),
                F.lit("name does not parse; Kafka would refuse to start"), _lit_null_ts())


def rule_metadata_log() -> Rule:
    return Rule("metadata_log", col("kind") == "metadata", F.lit(C.METADATA_LOG), F.lit("KRaft metadata log"),
                _lit_null_ts())


def rule_no_topic_id() -> Rule:
    """ZooKeeper mode: the controller has the dir's topic name without a topic id (a row with a null id)."""
    return Rule("no_topic_id", F.coalesce(col("c_no_id"), F.lit(False)), F.lit(C.UNKNOWN), F.lit(NO_TOPIC_ID_REASON),
                _lit_null_ts())


def rule_delete() -> Rule:
    limit = col("_delete_delay_ms") + col("_delete_margin_ms")
    age = col("_dir_age_ms")
    stuck = col("dir_mtime").isNotNull() & (age >= limit)
    reason = F.when(col("dir_mtime").isNull(), F.lit("dir mtime unknown; age cannot be judged")).otherwise(
        _reason("-delete dir ", age.cast("long").cast("string"), " ms old, limit ", limit.cast("string"), " ms"))
    # A -delete copy of a replica the controller still assigns to this broker (e.g. left by an interrupted log-dir
    # move) is never planned: the executor never touches such a replica, and Kafka deletes the copy at next start.
    # With no topic id on disk the executor can only go by the name, so the planner does too.
    assigned = F.when(col("topic_id").isNotNull(), _member()).otherwise(_member_by_name())
    reason = F.when(stuck & assigned, F.lit(ASSIGNED_DELETE_REASON)).otherwise(reason)
    stuck = stuck & ~assigned
    return Rule("delete", col("kind") == "delete",
                F.when(stuck, F.lit(C.STUCK_DELETE)).otherwise(F.lit(C.PENDING_DELETE)), reason,
                F.when(stuck, col("dir_mtime")))


def rule_missing_metadata() -> Rule:
    status = col("partition_metadata_status")
    cond = col("topic_id").isNull() & (status.isNull() | status.isin(*sorted(PM_MISSING_STATUSES)))
    return Rule("missing_pm", cond, F.lit(C.MISSING_PARTITION_METADATA), F.lit("no partition.metadata"),
                _lit_null_ts())


def rule_corrupt_metadata() -> Rule:
    status = col("partition_metadata_status")
    cond = col("topic_id").isNull() | (status.isNotNull() & (status != PM_OK))
    return Rule("corrupt_pm", cond, F.lit(C.CORRUPT_PARTITION_METADATA),
                _reason("partition.metadata status ", F.coalesce(status, F.lit("?"))), _lit_null_ts())


def rule_unknown_id() -> Rule:
    return Rule("unknown_id", col("c_name").isNull() & ~col("_image_complete"), F.lit(C.UNKNOWN),
                F.lit("topic id not in an incomplete controller image"), _lit_null_ts())


def rule_recreated() -> Rule:
    return Rule("recreated", col("c_name").isNull() & col("controller_topic_id").isNotNull(),
                _by_kind(C.RECREATED_TOPIC), _reason("name ", col("topic"), " now has id ", col("controller_topic_id")),
                col("ev_created_ts"))


def rule_deleted() -> Rule:
    return Rule("deleted", col("c_name").isNull(), _by_kind(C.DELETED_TOPIC),
                _reason("topic id ", col("topic_id"), " not in the image",
                        F.when(col("ev_removed_ts").isNull(), F.lit("; no topic_removed event: grace unknown"))),
                col("ev_removed_ts"))


def rule_topic_deletion() -> Rule:
    """ZooKeeper mode: the dir's topic (same id) is queued for deletion: pending, or stuck past the threshold."""
    age = _age_ms(col("c_deletion_queued_at"))
    stuck = age >= col("_stuck_deletion_ms")
    reason = _reason("topic ", col("c_name"), " queued for deletion ", age.cast("long").cast("string"),
                     " ms ago (stuck after ", col("_stuck_deletion_ms").cast("string"), " ms); replicas on brokers ",
                     F.to_json(col("t_replicas")), ", not registered: ",
                     F.to_json(F.array_except(col("t_replicas"), col("_registered"))),
                     F.when(col("t_reassigning"), F.lit("; reassignment in progress")))
    return Rule("topic_deletion", col("c_name").isNotNull() & col("c_deletion_queued_at").isNotNull(),
                F.when(stuck, F.lit(C.STUCK_TOPIC_DELETION)).otherwise(F.lit(C.PENDING_TOPIC_DELETION)), reason,
                _lit_null_ts())


def rule_out_of_range() -> Rule:
    return Rule("out_of_range", col("p_partition").isNull(), _by_kind(C.PARTITION_OUT_OF_RANGE),
                _reason(col("c_name"), " has ", col("partition_count").cast("string"), " partitions"),
                col("ev_topic_ts"))


def rule_reassignment_in_flight() -> Rule:
    return Rule("reassigning", ~col("_member") & col("_reassigning"), F.lit(C.UNKNOWN), F.lit("reassignment in flight"),
                _lit_null_ts())


def rule_not_a_replica() -> Rule:
    return Rule("not_a_replica", ~col("_member"), _by_kind(C.NOT_A_REPLICA),
                _reason("replicas ", F.to_json(col("replicas"))), col("ev_partition_ts"))


def rule_assigned_stray() -> Rule:
    return Rule("assigned_stray", col("kind") == "stray", F.lit(C.UNKNOWN),
                F.lit("-stray copy of a replica the controller assigns to this broker"), _lit_null_ts())


def rule_future_in_progress() -> Rule:
    return Rule("future_in_progress", col("kind") == "future", F.lit(C.FUTURE_IN_PROGRESS),
                F.lit("replica assigned to this broker; a log-dir move may be running"), _lit_null_ts())


def rule_single_copy() -> Rule:
    return Rule("single_copy", F.coalesce(col("copy_count"), F.lit(0)) <= 1,
                F.lit(C.OK), F.lit("assigned replica"), _lit_null_ts())


def rule_in_assigned_dir() -> Rule:
    return Rule("in_assigned_dir", col("_deciding_dir").isNotNull() & (col("_deciding_dir") == col("directory_id")),
                F.lit(C.OK), F.lit("assigned replica in its assigned log dir"), _lit_null_ts())


def rule_wrong_log_dir() -> Rule:
    d = col("_deciding_dir")
    cond = d.isNotNull() & col("directory_id").isNotNull() & F.coalesce(
        F.array_contains(col("copy_dir_ids"), d), F.lit(False))
    return Rule("wrong_log_dir", cond, F.lit(C.WRONG_LOG_DIR),
                _reason("assigned to log dir ", d, ", which holds a live copy"), col("ev_partition_ts"))


def rule_duplicate() -> Rule:
    return Rule("duplicate", F.lit(True), F.lit(C.DUPLICATE_REPLICA),
                F.lit("live in several log dirs; no directory assignment decides"), _lit_null_ts())


RULES: tuple[Callable[[], Rule], ...] = (
    rule_unparseable, rule_metadata_log, rule_no_topic_id, rule_delete, rule_missing_metadata, rule_corrupt_metadata,
    rule_unknown_id, rule_recreated, rule_deleted, rule_topic_deletion, rule_out_of_range, rule_reassignment_in_flight,
    rule_not_a_replica, rule_assigned_stray, rule_future_in_progress, rule_single_copy, rule_in_assigned_dir,
    rule_wrong_log_dir, rule_duplicate,
)


def classify_column(rules: tuple[Callable[[], Rule], ...] = RULES) -> Column:
    """A struct column (cls, reason, since, rule): the first rule whose condition holds."""
    expr: Column | None = None
    for make in rules:
        r = make()
        value = F.struct(r.cls.alias("cls"), r.reason.alias("reason"), r.since.alias("since"),
                         F.lit(r.name).alias("rule"))
        expr = F.when(r.when, value) if expr is None else expr.when(r.when, value)
    assert expr is not None
    return expr


# -- joins -------------------------------------------------------------------------------------------------------

def _image_meta(topics: DataFrame, partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    cols = ["metadata_offset", "image_complete"]
    union = topics.select(*cols).unionByName(partitions.select(*cols)).unionByName(brokers.select(*cols))
    return union.agg(
        F.max("metadata_offset").alias("_metadata_offset"),
        (F.coalesce(F.min(col("image_complete").cast("int")), F.lit(0)) == 1).alias("_image_complete"),
    )


def _event_clocks(events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Newest event times per topic id and per (topic id, partition); both small enough to broadcast.

    Per topic id: ``ev_removed`` (topic_removed), ``ev_created`` (topic_created), ``ev_topic`` (any change but a
    removal, partition-level ones included) and ``ev_tl`` (topic-level changes only). Per partition: ``ev_pl``.
    """
    ev = events.select("offset", "timestamp", "event", "topic_id", "partition").filter(col("topic_id").isNotNull())
    removed = col("event") == "topic_removed"
    picks = {
        "ev_removed": removed,
        "ev_created": col("event") == "topic_created",
        "ev_topic": ~removed,
        "ev_tl": ~removed & col("partition").isNull(),
    }
    aggs = []
    for prefix, cond in picks.items():
        aggs += [F.max(F.when(cond, col("timestamp"))).alias(f"{prefix}_ts"),
                 F.max(F.when(cond, col("offset"))).alias(f"{prefix}_off")]
    per_topic = ev.groupBy("topic_id").agg(*aggs)
    per_partition = ev.filter(~removed & col("partition").isNotNull()).groupBy("topic_id", "partition").agg(
        F.max("timestamp").alias("ev_pl_ts"), F.max("offset").alias("ev_pl_off"))
    return per_topic, per_partition


_KEY = "_k"
"""The partition key every partition-sized join shares: the dir's topic id, else the id the controller has for its
topic name (``controller_topic_id``)."""


def _live_copies(pd: DataFrame) -> DataFrame:
    """``copy_dir_ids`` (directory ids) and ``copy_count`` (log dirs) of the live copies of a dir's replica on its
    broker: a window over (topic id, partition, broker), so the dirs are not shuffled for it; null for a dir whose
    replica has no live copy or that has no topic id (as a join of the live copies on the topic id would give)."""
    from pyspark.sql import Window

    live = ((col("kind") == "live") & col("topic_id").isNotNull()
            & (col("partition_metadata_status").isNull() | (col("partition_metadata_status") == PM_OK)))
    w = Window.partitionBy(_KEY, "partition", "broker_id")
    has = col("topic_id").isNotNull() & (F.count(F.when(live, F.lit(1))).over(w) > 0)
    return pd.withColumns({
        "copy_dir_ids": F.when(has, F.collect_set(F.when(live, col("directory_id"))).over(w)),
        "copy_count": F.when(has, F.size(F.collect_set(F.when(live, col("log_dir"))).over(w))),
    })


def _by_key(df: DataFrame, by_id: dict[str, str], by_name: dict[str, str]) -> DataFrame:
    """Columns of a join on (``_KEY``, partition): ``by_id`` (source: name) hold for a dir with a topic id (null
    without one), ``by_name`` for a dir without (what a join on ``controller_topic_id`` gives)."""
    has_id = col("topic_id").isNotNull()
    return df.withColumns({
        **{name: F.when(has_id, col(source)) for source, name in by_id.items()},
        **{name: F.when(~has_id, col(source)) for source, name in by_name.items()},
    }).drop(*(set(by_id) | set(by_name)) - set(by_id.values()) - set(by_name.values()))


def _with_delete_delays(df: DataFrame, configs: DataFrame | None) -> DataFrame:
    """``cfg_delay_ms``/``cfg_has_broker`` (the broker's own dynamic ``log.segment.delete.delay.ms``, registered
    or not) and ``cfg_default_delay_ms`` (the cluster-wide one), as ``image.broker_config`` reads them; without
    the configs table, the registered brokers' effective values only (``b_delete_delay_ms``)."""
    if configs is None:
        return df.withColumns({"cfg_has_broker": col("b_delete_delay_ms").isNotNull(),
                               "cfg_delay_ms": col("b_delete_delay_ms"),
                               "cfg_default_delay_ms": F.lit(None).cast("long")})
    delays = configs.where(col("name") == DELETE_DELAY_CONFIG_KEY)
    per_broker = (delays.where(col("broker_id").isNotNull())
                  .groupBy("broker_id").agg(F.max("long_value").alias("cfg_delay_ms"))
                  .withColumn("cfg_has_broker", F.lit(True)))
    default = delays.where(col("broker_id").isNull()).agg(F.max("long_value").alias("cfg_default_delay_ms"))
    return (df.join(F.broadcast(per_broker), ["broker_id"], "left")
            .withColumn("cfg_has_broker", F.coalesce(col("cfg_has_broker"), F.lit(False)))
            .crossJoin(F.broadcast(default)))


def _delete_delay_ms(config: DetectConfig) -> Column:
    """The broker's value when it has one (even one that is not a number: then the config's), else the cluster's."""
    fallback = F.lit(config.file_delete_delay_ms)
    return F.when(col("cfg_has_broker"), F.coalesce(col("cfg_delay_ms"), fallback)).otherwise(
        F.coalesce(col("cfg_default_delay_ms"), fallback)).cast("long")


def _joined(
    partition_dirs: DataFrame, controller_topics: DataFrame, controller_partitions: DataFrame,
    controller_brokers: DataFrame, metadata_events: DataFrame, log_dirs: DataFrame,
    controller_broker_configs: DataFrame | None = None,
) -> DataFrame:
    """Every dir with what the controller and the event history say of it.

    The dirs are shuffled once, by (``_KEY``, partition): the live copies (a window), the partition registrations
    and the per-partition event times all join on that key, by the dir's topic id and, for a dir without one, by
    its topic name's id. Everything of a topic's or a broker's size is broadcast.
    """
    b = F.broadcast
    ld = log_dirs.select("broker_id", "log_dir", "directory_id").dropDuplicates(["broker_id", "log_dir"])
    by_id = controller_topics.select(col("topic_id"), col("topic").alias("c_name"), "partition_count",
                                     col("deletion_queued_at").alias("c_deletion_queued_at"))
    by_name = controller_topics.select(col("topic"), col("topic_id").alias("controller_topic_id"),
                                       col("topic_id").isNull().alias("c_no_id"))
    pd = (partition_dirs.join(b(ld), ["broker_id", "log_dir"], "left")
          .join(b(by_name), ["topic"], "left")
          .withColumn(_KEY, F.coalesce(col("topic_id"), col("controller_topic_id")))
          .repartition(_KEY, "partition"))
    per_topic_replicas = controller_partitions.where(col("topic_id").isNotNull()).groupBy("topic_id").agg(
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("replicas")))).alias("t_replicas"),
        (F.max(F.size("adding_replicas") + F.size("removing_replicas")) > 0).alias("t_reassigning"))
    registered = controller_brokers.agg(F.collect_set("broker_id").alias("_registered"))
    parts = controller_partitions.select(
        col("topic_id").alias(_KEY), "partition", col("partition").alias("_p_partition"),
        col("replicas").alias("_replicas"), col("adding_replicas").alias("_adding_replicas"),
        col("removing_replicas").alias("_removing_replicas"), col("directories").alias("_directories"))
    brokers = controller_brokers.select(
        "broker_id", col("log_dirs").alias("b_log_dirs"), col("file_delete_delay_ms").alias("b_delete_delay_ms"))
    per_topic, per_partition = _event_clocks(metadata_events)
    created = per_topic.select(col("topic_id").alias("controller_topic_id"), "ev_created_ts", "ev_created_off")
    per_partition = per_partition.select(col("topic_id").alias(_KEY), "partition", col("ev_pl_ts").alias("_ev_pl_ts"),
                                         col("ev_pl_off").alias("_ev_pl_off"))

    df = (_live_copies(pd)
          .join(parts, [_KEY, "partition"], "left")
          .join(per_partition, [_KEY, "partition"], "left"))
    df = _by_key(df, {"_p_partition": "p_partition", "_replicas": "replicas", "_adding_replicas": "adding_replicas",
                      "_removing_replicas": "removing_replicas", "_directories": "directories",
                      "_ev_pl_ts": "ev_pl_ts", "_ev_pl_off": "ev_pl_off"},
                 {"_replicas": "n_replicas", "_adding_replicas": "n_adding_replicas"})
    df = (df.join(b(by_id), ["topic_id"], "left")
          .join(b(brokers), ["broker_id"], "left")
          .join(b(per_topic.drop("ev_created_ts", "ev_created_off")), ["topic_id"], "left")
          .join(b(created), ["controller_topic_id"], "left")
          .join(b(per_topic_replicas), ["topic_id"], "left"))
    df = df.crossJoin(b(_image_meta(controller_topics, controller_partitions, controller_brokers)))
    df = df.crossJoin(b(registered))
    df = _with_delete_delays(df, controller_broker_configs)
    return df.withColumns({
        "ev_partition_ts": F.greatest(col("ev_pl_ts"), col("ev_tl_ts")),
        "ev_partition_off": F.greatest(col("ev_pl_off"), col("ev_tl_off")),
    })


def _protected(config: DetectConfig) -> Column:
    patterns = protected_patterns(config)
    internal = sorted(C.PROTECTED_INTERNAL_TOPICS | C.METADATA_TOPIC_NAMES)

    def matches(name: Column) -> Column:
        hit = name.isin(*internal)
        for p in patterns:
            hit = hit | name.rlike(f"^(?:{p})$")
        return F.coalesce(hit, F.lit(False))

    return matches(col("topic")) | matches(col("c_name")) | F.coalesce(
        col("topic_id") == str(METADATA_TOPIC_ID), F.lit(False))


def _evidence() -> Column:
    return F.to_json(F.struct(
        F.struct(col("topic_id").alias("topic_id"), col("partition_metadata_status").alias("partition_metadata_status"),
                 F.unix_millis(col("dir_mtime")).alias("dir_mtime_ms"),
                 col("directory_id").alias("directory_id")).alias("disk"),
        F.struct(col("controller_topic_id").alias("topic_id_for_name"), col("c_name").alias("name_for_id"),
                 col("partition_count"), col("replicas"), col("adding_replicas"), col("removing_replicas"),
                 col("_assigned_dir").alias("assigned_dir"), col("b_log_dirs").alias("broker_log_dirs"),
                 col("_delete_delay_ms").alias("delete_delay_ms")).alias("controller"),
        F.struct(col("_metadata_offset").alias("metadata_offset"),
                 col("_image_complete").alias("complete")).alias("image"),
        F.struct(col("ev_removed_off").alias("topic_removed_offset"),
                 col("ev_created_off").alias("topic_created_offset"),
                 col("ev_topic_off").alias("topic_last_offset"),
                 col("ev_partition_off").alias("partition_last_offset")).alias("events"),
        col("copy_dir_ids").alias("live_copies_in_dirs"),
        col("_rule").alias("rule"),
    ))


def detect(
    spark: SparkSession,
    partition_dirs: DataFrame,
    controller_topics: DataFrame,
    controller_partitions: DataFrame,
    controller_brokers: DataFrame,
    metadata_events: DataFrame,
    log_dirs: DataFrame,
    *,
    config: DetectConfig,
    now: datetime,
    controller_broker_configs: DataFrame | None = None,
) -> DataFrame:
    """One ``findings`` row (FINDINGS schema) per row of ``partition_dirs``.

    ``plannable`` = garbage class, not protected, controller image complete, a known grace-clock start
    (``garbage_since``) and at least ``config.grace_ms`` elapsed since it at ``now``.
    """
    df = _joined(partition_dirs, controller_topics, controller_partitions, controller_brokers, metadata_events,
                 log_dirs, controller_broker_configs)
    df = df.withColumns({
        "_now": F.lit(now).cast("timestamp"),
        "_delete_delay_ms": _delete_delay_ms(config),
        "_delete_margin_ms": F.lit(config.delete_margin_ms).cast("long"),
        "_stuck_deletion_ms": F.lit(config.stuck_topic_deletion_ms).cast("long"),
        "_member": _member(),
        "_reassigning": _reassigning(),
        "_assigned_dir": _assigned_dir(),
    })
    df = df.withColumns({"_deciding_dir": _deciding_dir(), "_dir_age_ms": _age_ms(col("dir_mtime"))})
    df = df.withColumn("_v", classify_column()).withColumns({
        "class": col("_v.cls"), "reason": col("_v.reason"), "garbage_since": col("_v.since"), "_rule": col("_v.rule"),
        "protected": _protected(config),
    })
    grace_ok = col("garbage_since").isNotNull() & (_age_ms(col("garbage_since")) >= F.lit(config.grace_ms))
    df = df.withColumn("plannable", col("class").isin(*sorted(C.GARBAGE_CLASSES)) & ~col("protected")
                       & col("_image_complete") & F.coalesce(grace_ok, F.lit(False)))
    df = df.withColumns({
        "evidence": _evidence(),
        "metadata_offset": col("_metadata_offset"),
        "detected_at": col("_now"),
    })
    return df.select(*[col(c.name).cast(_spark_type(c.type)).alias(c.name) for c in FINDINGS.columns])


def _spark_type(t: str) -> str:
    return {"long": "bigint", "bool": "boolean", "array<int>": "array<int>"}.get(t, t)

