"""The plain-Python re-check, on its own: the hand-written expectations, the invariant, and a property test."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detect"))
from gc_cluster import DAY, NOW, Cluster, Part, uid
from mixed_cluster import D1, D2, EXPECTED, HEX, ORD, delete_copies_cluster, mixed_cluster

from pipelines.config.models import DetectConfig
from pipelines.detect import classes as C
from pipelines.detect.params import ASSIGNED_DELETE_REASON
from pipelines.kafka.uuid import LOST, UNASSIGNED, Uuid
from pipelines.plan.recheck import (
    ASSIGNED_REPLICA,
    DirFacts,
    assigned_here,
    classify,
    is_protected_dir,
    lists_broker,
    live_copies,
    recheck_item,
)

CONFIG = DetectConfig()


def facts_of(cluster: Cluster) -> list[DirFacts]:
    dir_ids = {(b, ld): d for b, dirs in cluster.brokers.items() for ld, d in dirs.items()}
    return [DirFacts.from_partition_dir(r, dir_ids[(r["broker_id"], r["log_dir"])]) for r in cluster.dirs]


def classify_all(cluster: Cluster) -> dict[tuple[int, str, str], str]:
    image, facts = cluster.image(), facts_of(cluster)
    copies = live_copies(facts)
    return {(f.broker_id, f.log_dir, f.dir_name): classify(f, image, copies=copies, config=CONFIG, now=cluster.now)[0]
            for f in facts}


def test_recheck_matches_the_hand_written_expectations() -> None:
    assert classify_all(mixed_cluster()) == {k: v[0] for k, v in EXPECTED.items()}


def test_incomplete_image_turns_unknown_ids_into_unknown() -> None:
    got = classify_all(mixed_cluster(complete=False))
    assert got[(2, "/e", "clicks-0")] == C.UNKNOWN
    assert got[(1, "/d1", "gone-0")] == C.UNKNOWN
    assert got[(1, "/d1", "orders-1")] == C.NOT_A_REPLICA


def test_protection_uses_the_controller_name_of_a_truncated_dir_name() -> None:
    c = Cluster().broker(1, ("/a", None)).topic("__internal-metrics", ORD, p0=Part((2,)))
    c.dir(1, "/a", f"__internal-metr-0.{HEX}-stray", kind="stray", topic="__internal-metr", partition=0,
          topic_id=ORD)
    c.dir(1, "/a", f"payments-0.{HEX}-stray", kind="stray", topic="payments", partition=0, topic_id=uid(77))
    image = c.image()
    [internal, payments] = facts_of(c)
    assert is_protected_dir(internal, image, CONFIG)
    assert not is_protected_dir(payments, image, CONFIG)
    assert is_protected_dir(payments, image, DetectConfig(protected_topic_patterns=("pay.*",)))


@pytest.mark.parametrize(
    ("directories", "log_dir", "assigned"),
    [
        ((D1,), "/d1", True),            # the assigned dir
        ((D2,), "/d1", True),            # broker-level: a copy in another dir is still the broker's replica
        ((str(UNASSIGNED),), "/d1", True),  # reserved ids decide nothing
        ((str(LOST),), "/d2", True),
        ((uid(555),), "/d1", True),      # a dir the broker did not register decides nothing
    ],
)
def test_assigned_here_respects_kip858_directories(directories, log_dir, assigned) -> None:
    c = Cluster().broker(1, ("/d1", D1), ("/d2", D2)).topic("t", ORD, p0=Part((1,), directories=directories))
    c.dir(1, log_dir, "t-0", topic_id=ORD)
    [f] = facts_of(c)
    assert (assigned_here(f, c.image()) is not None) is assigned


def test_recheck_item_refuses_an_assigned_replica_whatever_the_row_claims() -> None:
    c = Cluster().broker(1, ("/a", D1)).topic("t", ORD, p0=Part((2, 1), adding=(1,), removing=(2,)))
    c.dir(1, "/a", "t-0", topic_id=ORD)
    row = {**c.dirs[0], "class": C.DELETED_TOPIC, "evidence": '{"disk": {"partition_metadata_status": "ok"}}'}
    got, why = recheck_item(row, c.image(), D1, copies={}, config=CONFIG, now=NOW)
    assert got == ASSIGNED_REPLICA
    assert "broker 1" in why


@pytest.mark.parametrize(
    ("part", "member"),
    [
        (Part((1, 2)), True),
        (Part((2, 1), adding=(1,), removing=(2,)), True),   # reassignment onto broker 1 in flight
        (Part((1, 2), adding=(2,), removing=(1,)), True),   # ... and away from it: still listed until it completes
        (Part((2,), adding=(1,)), True),                    # adding only (not a state Kafka writes; the rule holds)
        (Part((2, 3)), False),
        (Part((2, 3), adding=(3,), removing=(2,)), False),
    ],
)
def test_one_membership_rule_for_live_future_and_delete_dirs(part: Part, member: bool) -> None:
    """assigned_here, the old -delete rule and the class rules all answer "is broker 1 listed" the same way."""
    c = Cluster().broker(1, ("/a", D1)).topic("t", ORD, p0=part)
    c.dir(1, "/a", "t-0", topic_id=ORD)
    c.dir(1, "/a", f"t-0.{HEX}-future", kind="future", topic_id=ORD)
    c.dir(1, "/a", f"t-0.{HEX}-delete", kind="delete", topic_id=ORD, mtime=NOW - 30 * DAY)
    image = c.image()
    assert lists_broker(image.topics.by_name["t"].partitions[0], 1) is member
    live, future, delete = facts_of(c)
    copies = live_copies([live])
    verdicts = {f.kind: classify(f, image, copies=copies, config=CONFIG, now=NOW) for f in (live, future, delete)}
    assert all((assigned_here(f, image) is not None) is member for f in (live, future, delete))
    assert (verdicts["live"][0] == C.OK) is member
    assert (verdicts["future"][0] == C.FUTURE_IN_PROGRESS) is member
    assert verdicts["delete"] == ((C.PENDING_DELETE, ASSIGNED_DELETE_REASON) if member else
                                  (C.STUCK_DELETE, verdicts["delete"][1]))


def test_old_delete_copies_of_assigned_replicas_by_id_or_by_name() -> None:
    c, expected = delete_copies_cluster()
    assert {(b, name): cls for (b, _, name), cls in classify_all(c).items()} == expected


def test_delete_delay_from_broker_config_in_the_image() -> None:
    c = Cluster().broker(1, ("/a", None), delete_delay_ms=5 * 86_400_000)
    c.dir(1, "/a", f"x-0.{HEX}-delete", kind="delete", topic_id=ORD, mtime=NOW - 2 * DAY)
    assert classify_all(c) == {(1, "/a", f"x-0.{HEX}-delete"): C.PENDING_DELETE}
    c.now = NOW + 4 * DAY
    assert classify_all(c) == {(1, "/a", f"x-0.{HEX}-delete"): C.STUCK_DELETE}


# -- property: whatever happened to the cluster, an assigned replica is never garbage ----------------------------

BROKERS = (1, 2, 3)
DIRS = {1: (("/a", uid(901)), ("/b", uid(902))), 2: (("/a", uid(903)),), 3: (("/a", uid(904)), ("/b", uid(905)))}


@st.composite
def histories(draw):
    """A few topics, then random deletes, recreations, reassignments and JBOD moves; dirs left where they were."""
    c = Cluster(complete=draw(st.booleans()))
    for b in BROKERS:
        c.broker(b, *DIRS[b])
    live: dict[str, tuple[str, dict[int, Part]]] = {}
    disk: list[tuple[int, str, str, str, int, str]] = []  # broker, log_dir, kind, topic, partition, topic_id
    next_id = iter(range(1, 10_000))
    for t in range(draw(st.integers(1, 3))):
        name, tid = f"t{t}", uid(next(next_id))
        parts = {}
        for p in range(draw(st.integers(1, 3))):
            replicas = tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))])
            dirs = tuple(draw(st.sampled_from([*(d for _, d in DIRS[r]), str(UNASSIGNED)])) for r in replicas)
            parts[p] = Part(replicas, directories=dirs)
            for r in replicas:
                where = next((ld for ld, d in DIRS[r] if d in dirs), DIRS[r][0][0])
                disk.append((r, where, "live", name, p, tid))
        live[name] = (tid, parts)
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(sorted(live)))
        tid, parts = live[name]
        action = draw(st.sampled_from(["delete", "recreate", "reassign", "jbod", "copy", "future", "stray", "extra"]))
        p = draw(st.sampled_from(sorted(parts)))
        part = parts[p]
        if action == "delete":
            del live[name]
            if not live:
                live[name] = (uid(next(next_id)), {0: Part((1,))})
        elif action == "recreate":
            live[name] = (uid(next(next_id)), {0: Part(tuple(draw(st.permutations(BROKERS))[:2]))})
        elif action == "reassign":
            target = tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 3))])
            if draw(st.booleans()):  # in flight
                adding = tuple(b for b in target if b not in part.replicas)
                removing = tuple(b for b in part.replicas if b not in target)
                parts[p] = Part(target + removing, adding=adding, removing=removing)
            else:
                parts[p] = Part(target)
        elif action == "jbod":
            r = part.replicas[0]
            new_dir = draw(st.sampled_from(DIRS[r]))
            dirs = list(part.directories or [str(UNASSIGNED)] * len(part.replicas))
            dirs[0] = new_dir[1]
            parts[p] = Part(part.replicas, part.adding, part.removing, tuple(dirs))
            disk.append((r, new_dir[0], "live", name, p, tid))
        elif action == "copy":  # a second live copy on a JBOD broker, whatever the assignment says
            r = draw(st.sampled_from(part.replicas))
            disk.append((r, draw(st.sampled_from(DIRS[r]))[0], "live", name, p, tid))
        elif action in ("future", "stray"):
            b = draw(st.sampled_from(BROKERS))
            disk.append((b, draw(st.sampled_from(DIRS[b]))[0], action, name, p, tid))
        else:
            b = draw(st.sampled_from(BROKERS))
            disk.append((b, draw(st.sampled_from(DIRS[b]))[0], "live", name, draw(st.integers(0, 4)), tid))
    for name, (tid, parts) in live.items():
        c.topic(name, tid, **{f"p{p}": part for p, part in parts.items()})
    seen = set()
    for b, ld, kind, name, p, tid in disk:
        dir_name = f"{name}-{p}" if kind == "live" else f"{name}-{p}.{HEX}-{kind}"
        if (b, ld, dir_name) not in seen:
            seen.add((b, ld, dir_name))
            c.dir(b, ld, dir_name, kind=kind, topic=name, partition=p, topic_id=tid, mtime=NOW - timedelta(days=3))
    return c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_recheck_never_calls_an_assigned_replica_garbage(cluster: Cluster) -> None:
    image, facts = cluster.image(), facts_of(cluster)
    copies = live_copies(facts)
    for f in facts:
        cls, _ = classify(f, image, copies=copies, config=CONFIG, now=cluster.now)
        if cls not in C.GARBAGE_CLASSES or f.kind == "delete":
            continue
        part = image.topics.partition(Uuid.from_string(f.topic_id), f.partition)
        # a planned class never names a replica the controller assigns to this broker, whatever its log dir
        assert part is None or (f.broker_id not in part.replicas and f.broker_id not in part.adding_replicas), (f, cls)
