"""The Arrow listing path (keys parsed an array at a time, inventory files filtered in Arrow) gives exactly the rows
of the pure path (parse_key per key, the inventory's row reader), on generated keys and lying inventories."""

from __future__ import annotations

import io
import json
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier import arrow_keys
from pipelines.remote_tier.arrow_keys import KEY_COLUMNS, parse_keys
from pipelines.remote_tier.keys import RemoteKeyError
from pipelines.remote_tier.listing import ListedObject, parse_key
from pipelines.remote_tier.object_listing import ListingProblem, listing_rows
from pipelines.remote_tier.s3_inventory import (
    InventoryError,
    InventoryStats,
    inventory_batches,
    open_inventory,
    read_inventory_file,
)
from pipelines.remote_tier.spark_listing import folder_batches, objects_batch, rows_batch

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
TOPIC_CHARS = "abcXYZ019._-"
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1


def uuid_texts() -> st.SearchStrategy[str]:
    canonical = st.builds(Uuid, st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 64) - 1)).map(str)
    return st.one_of(
        canonical, canonical,
        st.text(B64, min_size=22, max_size=22),  # mostly not canonical (last character)
        st.text(B64 + "+/=é", min_size=20, max_size=24),
    )


def topics() -> st.SearchStrategy[str]:
    return st.one_of(st.text(TOPIC_CHARS, min_size=1, max_size=12), st.sampled_from([".", "..", "", "a" * 249,
                     "a" * 250, "t/x", "té", "t x", "a-" + "A" * 22]))


def partitions() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(0, 40).map(str), st.sampled_from([str(INT32_MAX), str(INT32_MAX + 1), "00", "01",
                     "-1", "+1", "", "1" * 11, "\u0663", "9999999999"]))


def offsets() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(0, INT64_MAX).map(lambda n: f"{n:020d}"),
                     st.sampled_from([f"{INT64_MAX + 1:020d}", "9" * 20, "0" * 19, "0" * 21, "\u0663" * 20]))


def keys(layout: str) -> st.SearchStrategy[str]:
    suffixes = ["log", "indexes", "rsm-manifest"] if layout == "aiven" else [
        "log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint"]
    suffix = st.one_of(st.sampled_from(suffixes), st.sampled_from(["", "LOG", "log/", "indexes.x", "manifest"]))
    head = st.sampled_from(["kc1-", "kc1-", "kc1-", "kc2-", ""]) if layout == "aiven" else \
        st.sampled_from(["kafka-tiered-storage/"] * 3 + ["kafka-tiered-storage", ""])
    sep = st.sampled_from(["-", "-", "-", "_", "--"])

    def key(h: str, topic: str, tid: str, part: str, off: str, s1: str, sid: str, suf: str, extra: str) -> str:
        name = f"{off}{s1}{sid}.{suf}"
        folder = f"{topic}-{tid}/{part}" if layout == "aiven" else f"{topic}-{part}-{tid}"
        return f"{h}{folder}/{name}{extra}"

    return st.builds(key, head, topics(), uuid_texts(), partitions(), offsets(), sep, uuid_texts(), suffix,
                     st.sampled_from(["", "", "", "/", "/x"]))


def pure(key: str, layout: str, prefix: str) -> tuple[object, ...]:
    try:
        k = parse_key(key, layout, prefix)
    except RemoteKeyError as exc:
        return (None, None, None, None, None, None, str(exc))
    return (k.topic, str(k.topic_id), k.partition, str(k.segment_id), k.start_offset, k.kind, None)


@pytest.mark.parametrize(("layout", "prefix"), [("aiven", "kc1-"), ("local_tiered_storage", "")])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_arrow_parse_equals_the_pure_parser_on_any_key(layout: str, prefix: str, data: st.DataObject) -> None:
    batch = data.draw(st.lists(keys(layout), min_size=1, max_size=40))
    columns = parse_keys(pa.array(batch, pa.string()), layout, prefix)
    got = list(zip(*(c.to_pylist() for c in columns), strict=True))
    assert got == [pure(k, layout, prefix) for k in batch]


def lying_keys(layout: str) -> list[str]:
    """Keys one step outside the exact form, each at a bound the expression or its checks must hold."""
    tid, sid, off = str(Uuid(1, 2)), str(Uuid(3, 4)), f"{0:020d}"

    def key(topic: str = "t", t: str = tid, part: str = "0", o: str = off, s: str = sid, suf: str = "log") -> str:
        if layout == "aiven":
            return f"kc1-{topic}-{t}/{part}/{o}-{s}.{suf}"
        return f"kafka-tiered-storage/{topic}-{part}-{t}/{o}-{s}.{suf}"

    return [key(), key(part=str(INT32_MAX)), key(part=str(INT32_MAX + 1)), key(part="9999999999"), key(part="01"),
            key(o=f"{INT64_MAX:020d}"), key(o=f"{INT64_MAX + 1:020d}"), key(o="9" * 20), key(t=tid[:-1] + "B"),
            key(s=sid[:-1] + "x"), key(topic="."), key(topic=".."), key(topic="a" * 249), key(topic="a" * 250),
            key(topic="a-"), key(part="\u0663"), key(o="\u0663" * 20), key(suf="rsm-manifest"), key(suf="bak"),
            key() + "/", key()[:-1]]


@pytest.mark.parametrize(("layout", "prefix"), [("aiven", "kc1-"), ("local_tiered_storage", "")])
def test_arrow_parse_equals_the_pure_parser_at_every_bound(layout: str, prefix: str) -> None:
    batch = lying_keys(layout)
    columns = parse_keys(pa.array(batch), layout, prefix)
    got = list(zip(*(c.to_pylist() for c in columns), strict=True))
    assert got == [pure(k, layout, prefix) for k in batch]
    assert sum(e is None for *_, e in got) >= 5


@pytest.mark.parametrize(("layout", "prefix"), [("aiven", "kc1-"), ("local_tiered_storage", "")])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_well_formed_keys_never_reach_the_pure_parser(layout: str, prefix: str, data: st.DataObject) -> None:
    """The expression itself admits every key of the exact form (else the equality above would prove nothing of it)."""
    ids = st.builds(Uuid, st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 64) - 1)).map(str)
    topic = st.text(TOPIC_CHARS, min_size=1, max_size=12).filter(lambda t: t not in (".", ".."))
    part = st.integers(0, INT32_MAX)
    off = st.integers(0, INT64_MAX)
    suffix = st.sampled_from(["log", "indexes", "rsm-manifest"] if layout == "aiven" else ["log", "txnindex"])
    rows = data.draw(st.lists(st.tuples(topic, ids, part, off, ids, suffix), min_size=1, max_size=20))
    batch = [(f"kc1-{t}-{tid}/{p}/" if layout == "aiven" else f"kafka-tiered-storage/{t}-{p}-{tid}/")
             + f"{o:020d}-{sid}.{s}" for t, tid, p, o, sid, s in rows]
    with mock.patch.object(arrow_keys, "_with_pure_parses", side_effect=AssertionError("a key fell back")):
        columns = parse_keys(pa.array(batch), layout, prefix)
    assert columns[KEY_COLUMNS.index("error")].null_count == len(batch)
    assert list(zip(*(c.to_pylist() for c in columns), strict=True)) == [pure(k, layout, prefix) for k in batch]


# -- inventory files ---------------------------------------------------------------------------------------------

BUCKET = "tier-bucket"
SCHEMA = pa.schema([("bucket", pa.string()), ("key", pa.string()), ("is_latest", pa.bool_()),
                    ("is_delete_marker", pa.bool_()), ("size", pa.int64()),
                    ("last_modified_date", pa.timestamp("ms", tz="UTC")), ("e_tag", pa.string())])
GOOD = f"tier/kc1-orders-{Uuid(1, 2)}/0/{0:020d}-{Uuid(3, 4)}.log"


def row(key: str = GOOD, **over: object) -> dict:
    return {"bucket": BUCKET, "key": key, "is_latest": True, "is_delete_marker": False, "size": 7,
            "last_modified_date": 1_700_000_000_000, "e_tag": "abc0", **over}


LYING_ROWS = [
    row(), row(f"tier/kc1-orders-{Uuid(1, 2)}/0/{5:020d}-{Uuid(3, 5)}.indexes", e_tag='"quoted-1"'),
    row(is_latest=False), row(is_delete_marker=True), row(bucket=None), row(is_latest=None, is_delete_marker=None),
    row("elsewhere/x.log"), row("tier/.logdir-gc-quarantine/p1/x.log"), row("tier/kc1-folder/", size=0),
    row("tier/kc1-folder/", size=3), row("tier/kc1-bad-key.log", e_tag=" spaced "), row(e_tag='"'),
    row(e_tag='""'), row(e_tag=None), row(e_tag=""), row("tier/kc1-tópic-" + str(Uuid(1, 2)) + "/0/x"),
    row(GOOD[:-3] + "rsm-manifest", last_modified_date=-5), row("tier/kc2-other/0/x.log"),
]
BAD_ROWS = [row(size=-1), row(size=None), row(key=""), row(last_modified_date=None), row(bucket="another"),
            row(key=None)]


def inventory(tmp: Path, rows: list[dict]) -> tuple[object, str]:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), out, row_group_size=4)
    (tmp / "data").mkdir(exist_ok=True)
    (tmp / "data" / "part-0.parquet").write_bytes(out.getvalue())
    manifest = tmp / "manifest.json"
    manifest.write_text(json.dumps({"sourceBucket": BUCKET, "destinationBucket": "arn:aws:s3:::inv",
                                    "fileFormat": "Parquet", "fileSchema": "message s3.inventory {}",
                                    "files": [{"key": "data/part-0.parquet"}]}))
    report = open_inventory(str(manifest), f"s3://{BUCKET}/tier", "aiven", "kc1-", data_root=str(tmp))
    return report, "data/part-0.parquet"


def both_ways(report: object, key: str) -> tuple[tuple, tuple]:
    """(objects, error, stats) read by the row reader and by the Arrow reader."""
    results = []
    for arrow in (False, True):
        stats, objects, error = InventoryStats(), [], None
        try:
            if arrow:
                for b in inventory_batches(report, key, stats=stats, batch_rows=5, exclude=".logdir-gc-quarantine/"):
                    objects += [ListedObject(*r.values()) for r in b.to_pylist()]
            else:
                objects += read_inventory_file(report, key, stats=stats, batch_rows=5,
                                               exclude=".logdir-gc-quarantine/")
        except InventoryError as exc:
            error = str(exc)
        results.append((objects, error, stats))
    return results[0], results[1]


def test_an_inventory_of_lying_rows_reads_the_same_both_ways(tmp_path: Path) -> None:
    report, key = inventory(tmp_path, LYING_ROWS * 2)
    rows, arrow = both_ways(report, key)
    assert arrow == rows
    # kept: good, quoted, latest unknown, folder of 3 bytes, bad key, ETags '"', '""', null, '', tópic, time -5
    assert rows[1] is None and len(rows[0]) == 2 * 11
    assert rows[2].outside and rows[2].not_current and rows[2].folder_markers


@pytest.mark.parametrize("bad", range(len(BAD_ROWS)))
@pytest.mark.parametrize("at", [0, 3, 7])
def test_a_bad_row_stops_both_readers_after_the_same_rows_with_the_same_error(tmp_path: Path, bad: int, at: int
                                                                               ) -> None:  # fmt: skip
    rows = [*LYING_ROWS[:at], row(is_latest=False, size=-1), BAD_ROWS[bad], *LYING_ROWS]
    report, key = inventory(tmp_path, rows)
    by_rows, by_arrow = both_ways(report, key)
    assert by_arrow == by_rows
    assert by_rows[1] is not None and ("row " in by_rows[1] or "bucket 'another'" in by_rows[1])


def test_objects_batch_equals_the_rows_of_the_pure_path(tmp_path: Path) -> None:
    report, key = inventory(tmp_path, LYING_ROWS)
    listed = list(read_inventory_file(report, key))
    expected = pa.Table.from_batches([rows_batch(list(listing_rows(listed, "aiven", "kc1-")), "c", "r")])
    got = pa.Table.from_batches([objects_batch(b, "aiven", "kc1-", "c", "r")
                                 for b in inventory_batches(report, key, batch_rows=4)])
    assert got.to_pylist() == expected.to_pylist()
    assert got.schema == expected.schema
    assert {r["error"] is None for r in got.to_pylist()} == {True, False}


def test_a_folders_batches_hold_the_rows_of_the_pure_path() -> None:
    """The fsspec listing tasks' rows: objects parsed in Arrow, problems (no size, no time) as before."""
    tid, sid = Uuid(1, 2), Uuid(3, 4)
    good = [f"kc1-orders-{tid}/{p}/{o:020d}-{sid}.{s}" for p in (0, 1) for o in (0, 7) for s in ("log", "indexes")]
    listed = [ListedObject(k, n, n * 1000 - 3, f'"e{n}"' if n % 2 else None) for n, k in enumerate(
        [*good, *lying_keys("aiven"), "other/x.log", "kc1-orders-x/0/"])]
    listed += [ListingProblem(good[0], "the listing gives no size"), ListingProblem("kc1-junk", "no time", 5)]
    expected = rows_batch(list(listing_rows(listed, "aiven", "kc1-")), "c", "r").to_pylist()
    got = [r for b in folder_batches(listed, "aiven", "kc1-", "c", "r") for r in b.to_pylist()]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert len(got) == len(listed)
