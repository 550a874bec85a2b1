from __future__ import annotations

import json
from datetime import timedelta

import pytest
from chispa import assert_df_equality
from gc_cluster import DAY, NOW, Cluster, Part, uid
from mixed_cluster import C1, C2, D1, D2, E1, EXPECTED, HEX, ORD, G, delete_copies_cluster, mixed_cluster

from pipelines.config.models import DetectConfig
from pipelines.tables.schemas import FINDINGS

pytestmark = pytest.mark.spark

CONFIG = DetectConfig(grace_ms=86_400_000)


def run(spark, cluster: Cluster, config: DetectConfig = CONFIG):
    from pipelines.detect.spark_detect import detect

    return detect(spark, **cluster.dataframes(spark), config=config, now=cluster.now)


def expected_df(spark, rows):
    schema = "broker_id int, log_dir string, dir_name string, class string, protected boolean, plannable boolean"
    return spark.createDataFrame(rows, schema)


@pytest.fixture(scope="module")
def mixed_findings(spark):
    return run(spark, mixed_cluster()).cache()


def test_every_class_on_a_mixed_cluster(spark, mixed_findings) -> None:
    findings = mixed_findings
    assert findings.schema.fieldNames() == list(FINDINGS.column_names)
    got = findings.select("broker_id", "log_dir", "dir_name", "class", "protected", "plannable")
    want = expected_df(spark, [(*k, v[0], v[1], v[2]) for k, v in EXPECTED.items()])
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)

    since = {(r.broker_id, r.log_dir, r.dir_name): r.garbage_since for r in findings.collect()}
    for key, (_, _, _, want_since) in EXPECTED.items():
        assert since[key] == (want_since.replace(tzinfo=None) if want_since else None), key


def test_rows_carry_evidence_and_binding(mixed_findings) -> None:
    rows = {r.dir_name: r for r in mixed_findings.filter("broker_id = 2").collect()}
    recreated = rows["clicks-0"]
    assert recreated.controller_topic_id == C2  # the name's current id, not the one on disk
    assert recreated.metadata_offset == 500
    evidence = json.loads(recreated.evidence)
    assert evidence["disk"]["topic_id"] == C1
    assert evidence["image"] == {"metadata_offset": 500, "complete": True}
    assert evidence["events"]["topic_created_offset"] == 23
    assert recreated.directory_id == E1
    assert recreated.fingerprint == "sha256:2:/e:clicks-0"


def test_incomplete_image_makes_unknown_ids_unknown_and_nothing_plannable(spark) -> None:
    findings = run(spark, mixed_cluster(complete=False)).collect()
    by_key = {(r.broker_id, r.log_dir, r.dir_name): r for r in findings}
    for key in [(2, "/e", "clicks-0"), (1, "/d1", "gone-0"), (2, "/e", "ghost-0"), (1, "/d2", f"gone-2.{HEX}-stray")]:
        assert by_key[key]["class"] == "unknown", key
    # ids the image does know keep their class; none of it is plannable
    assert by_key[(1, "/d1", "orders-1")]["class"] == "not_a_replica"
    assert not any(r.plannable for r in findings)


def test_grace_is_measured_from_the_metadata_event(spark) -> None:
    findings = run(spark, mixed_cluster(), DetectConfig(grace_ms=4 * 86_400_000)).filter("plannable")
    got = {(r.broker_id, r.dir_name) for r in findings.collect()}
    # only garbage whose event is at least 4 days old: the topic removed 5 days ago (its live dir and its -stray)
    assert got == {(1, "gone-0"), (1, f"gone-2.{HEX}-stray")}


def test_reassignment_in_flight_is_never_garbage(spark) -> None:
    c = Cluster().broker(1, ("/a", None)).broker(2, ("/b", None)).broker(3, ("/c", None))
    # moving 1 -> 3 while 2 stays: replicas = target + removing
    c.topic("t", ORD, p0=Part((2, 3, 1), adding=(3,), removing=(1,)), p1=Part((2,), adding=(2,)))
    c.event(1, NOW - 9 * DAY, "replicas_changed", ORD, "t", 0)
    for b, ld in ((1, "/a"), (2, "/b"), (3, "/c")):
        c.dir(b, ld, "t-0", topic_id=ORD)
        c.dir(b, ld, "t-1", topic_id=ORD)
    got = run(spark, c).select("broker_id", "dir_name", "class", "plannable")
    want = spark.createDataFrame(
        [(1, "t-0", "ok", False), (2, "t-0", "ok", False), (3, "t-0", "ok", False),
         (1, "t-1", "unknown", False), (2, "t-1", "ok", False), (3, "t-1", "unknown", False)],
        "broker_id int, dir_name string, class string, plannable boolean")
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)


def test_protected_patterns_are_full_matches(spark) -> None:
    c = Cluster().broker(1, ("/a", None))
    for i, name in enumerate(("payments-eu", "xpayments-eu", "__private", "_schemas", "orders")):
        c.dir(1, "/a", f"{name}-0", topic_id=uid(100 + i))
        c.event(i, NOW - 9 * DAY, "topic_removed", uid(100 + i), name)
    config = DetectConfig(protected_topic_patterns=("payments-.*", "_schemas"))
    got = {r.topic: (r["class"], r.protected, r.plannable) for r in run(spark, c, config).collect()}
    assert got == {
        "payments-eu": ("deleted_topic", True, False),
        "xpayments-eu": ("deleted_topic", False, True),
        "__private": ("deleted_topic", True, False),
        "_schemas": ("deleted_topic", True, False),
        "orders": ("deleted_topic", False, True),
    }


def test_delete_delay_comes_from_the_broker_registration(spark) -> None:
    c = Cluster().broker(1, ("/a", None), delete_delay_ms=7 * 86_400_000).broker(2, ("/b", None))
    c.dir(1, "/a", f"x-0.{HEX}-delete", kind="delete", topic_id=G, mtime=NOW - 2 * DAY)
    c.dir(2, "/b", f"x-0.{HEX}-delete", kind="delete", topic_id=G, mtime=NOW - 2 * DAY)
    c.dir(2, "/b", f"y-0.{HEX}-delete", kind="delete", topic_id=G, mtime=None)
    got = {(r.broker_id, r.dir_name): r["class"] for r in run(spark, c).collect()}
    assert got == {(1, f"x-0.{HEX}-delete"): "pending_delete", (2, f"x-0.{HEX}-delete"): "stuck_delete",
                   (2, f"y-0.{HEX}-delete"): "pending_delete"}


def test_old_delete_copies_of_assigned_replicas_by_id_or_by_name(spark) -> None:
    c, expected = delete_copies_cluster()
    rows = [(b, name, cls, cls == "stuck_delete") for (b, name), cls in sorted(expected.items())]
    assert_df_equality(
        run(spark, c).select("broker_id", "dir_name", "class", "plannable"),
        spark.createDataFrame(rows, "broker_id int, dir_name string, class string, plannable boolean"),
        ignore_row_order=True, ignore_nullable=True,
    )


def test_directory_assignment_outside_registered_dirs_decides_nothing(spark) -> None:
    lost_dir = uid(999)
    c = Cluster().broker(1, ("/d1", D1), ("/d2", D2))
    c.topic("j", ORD, p0=Part((1,), directories=(lost_dir,)), p1=Part((1,), directories=(D2,)))
    c.dir(1, "/d1", "j-0", topic_id=ORD).dir(1, "/d2", "j-0", topic_id=ORD)
    c.dir(1, "/d1", "j-1", topic_id=ORD)  # only copy, in a dir the controller does not name: fine
    got = {(r.log_dir, r.dir_name): r["class"] for r in run(spark, c).collect()}
    assert got == {("/d1", "j-0"): "duplicate_replica", ("/d2", "j-0"): "duplicate_replica",
                   ("/d1", "j-1"): "ok"}


def test_no_controller_rows_means_an_incomplete_image(spark) -> None:
    c = Cluster().broker(1, ("/a", None))
    c.dir(1, "/a", "t-0", topic_id=ORD)
    dfs = c.dataframes(spark)
    dfs["controller_brokers"] = dfs["controller_brokers"].limit(0)
    from pipelines.detect.spark_detect import detect

    [row] = detect(spark, **dfs, config=CONFIG, now=NOW + timedelta(days=30)).collect()
    assert (row["class"], row.plannable) == ("unknown", False)


def _exchanges_above(plan: str, marker: str) -> int:
    """Exchange nodes on the way from the plan's root to the one leaf whose line holds ``marker``."""
    lines = plan.splitlines()

    def depth(line: str) -> int:
        return len(line) - len(line.lstrip(" :+-|"))

    [at] = [i for i, line in enumerate(lines) if marker in line and "Scan" in line]
    count, level = 0, depth(lines[at])
    for line in reversed(lines[:at]):
        if depth(line) < level:
            level = depth(line)
            count += "Exchange" in line.split("[")[0]
    return count


def test_dirs_are_shuffled_once(spark) -> None:
    """Live copies, partition registrations and per-partition event times all join the dirs on one key: with no
    join broadcast by size, the dirs pass through exactly one exchange (they were shuffled once per join)."""
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        plan = run(spark, mixed_cluster())._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
    assert _exchanges_above(plan, "fingerprint#") == 1, plan
