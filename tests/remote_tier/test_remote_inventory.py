"""Reading a remote tier's listing from an S3 Inventory report (CSV and Parquet, as AWS writes them) on moto's S3."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from remote_builders import uid
from test_remote_listing import AIVEN_PREFIX, HOSTILE_INSIDE, OUTSIDE, ROOT, aiven_keys, fill

from pipelines.remote_tier.object_listing import list_location, listing_rows, open_location
from pipelines.remote_tier.s3_inventory import (
    MAX_MANIFEST_BYTES,
    InventoryError,
    InventoryStats,
    parse_manifest,
    read_inventory,
)
from tests.objectstore.conftest import Bucket, aws, bucket, moto  # noqa: F401 - the object-store fixtures

CSV_SCHEMA = ("Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size", "LastModifiedDate", "ETag",
              "StorageClass")
REPORT = "inventory/src/cfg"


def current_objects(store: Bucket) -> list[dict]:
    pages = store.server.client().get_paginator("list_objects_v2").paginate(Bucket=store.name)
    return [o for page in pages for o in page.get("Contents", []) if not o["Key"].startswith("inventory/")]


def csv_line(store: Bucket, o: dict, *, latest: str = "true", marker: str = "false") -> list[str]:
    # AWS URL-encodes CSV keys (space as "+"); the date is ISO 8601 with milliseconds; the ETag bare
    modified = o["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.") + f"{o['LastModified'].microsecond // 1000:03d}Z"
    return [store.name, quote_plus(o["Key"], safe=""), "v1", latest, marker, str(o["Size"]), modified,
            o["ETag"].strip('"'), "STANDARD"]


def write_manifest(store: Bucket, fmt: str, files: list[str], schema: str, source: str | None = None) -> str:
    doc = {"sourceBucket": source or store.name, "destinationBucket": f"arn:aws:s3:::{store.name}",
           "version": "2016-11-30", "creationTimestamp": "1514944800000", "fileFormat": fmt, "fileSchema": schema,
           "files": [{"key": k, "size": 1, "MD5checksum": "0" * 32} for k in files]}
    key = f"{REPORT}/2026-11-28T00-00Z/manifest.json"
    store.put(key, json.dumps(doc, indent=2).encode())
    return f"s3://{store.name}/{key}"


def csv_inventory(store: Bucket, lines: list[list[str]], parts: int = 2) -> str:
    files = []
    for n in range(parts):
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(lines[n::parts])
        key = f"{REPORT}/data/part-{n}.csv.gz"
        store.put(key, gzip.compress(out.getvalue().encode()))
        files.append(key)
    return write_manifest(store, "CSV", files, ", ".join(CSV_SCHEMA))


def parquet_inventory(store: Bucket, objects: list[dict], extra: list[dict] | None = None) -> str:
    rows = [{"bucket": store.name, "key": o["Key"], "version_id": "v1", "is_latest": True, "is_delete_marker": False,
             "size": o["Size"], "last_modified_date": o["LastModified"], "e_tag": o["ETag"].strip('"'),
             "storage_class": "STANDARD"} for o in objects] + (extra or [])
    schema = pa.schema([("bucket", pa.string()), ("key", pa.string()), ("version_id", pa.string()),
                        ("is_latest", pa.bool_()), ("is_delete_marker", pa.bool_()), ("size", pa.int64()),
                        ("last_modified_date", pa.timestamp("ms", tz="UTC")), ("e_tag", pa.string()),
                        ("storage_class", pa.string())])
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out, row_group_size=3)
    key = f"{REPORT}/data/part-0.parquet"
    store.put(key, out.getvalue())
    return write_manifest(store, "Parquet", [key], "message s3.inventory { required binary bucket (UTF8); "
                          "required binary key (UTF8); optional int64 size; ... }")


def live_rows(store: Bucket) -> list:
    loc = open_location(f"s3://{store.name}/{ROOT}")
    return sorted(listing_rows(list_location(loc, "aiven", AIVEN_PREFIX), "aiven", AIVEN_PREFIX),
                  key=lambda r: r.key)


def inventory_rows(store: Bucket, manifest: str, stats: InventoryStats | None = None) -> list:
    items = read_inventory(manifest, f"s3://{store.name}/{ROOT}", "aiven", AIVEN_PREFIX, stats=stats, batch_rows=4)
    return sorted(listing_rows(items, "aiven", AIVEN_PREFIX), key=lambda r: r.key)


@pytest.mark.parametrize("seed", range(6))
def test_inventory_and_live_listing_give_the_same_rows(aws: Bucket, seed: int) -> None:  # noqa: F811
    """Property: for any bucket content, the CSV and the Parquet inventory of it give the live listing's rows."""
    rng = random.Random(seed)
    population = aiven_keys(rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3))
    keys = rng.sample(population, k=rng.randint(1, len(population)))
    keys += rng.sample(HOSTILE_INSIDE, k=rng.randint(0, len(HOSTILE_INSIDE)))
    keys += [f"{AIVEN_PREFIX}t+plus-{uid(3)}/0/{0:020d}-{uid(4)}.log"]  # a literal "+" is %2B in the CSV
    fill(aws, keys + OUTSIDE)
    objects = current_objects(aws)
    live = live_rows(aws)
    assert {r.key for r in live} == set(keys)

    stats = InventoryStats()
    assert inventory_rows(aws, csv_inventory(aws, [csv_line(aws, o) for o in objects]), stats) == live
    assert (stats.kept, stats.outside) == (len(keys), len(OUTSIDE))
    assert inventory_rows(aws, parquet_inventory(aws, objects)) == live


def test_csv_keys_are_url_decoded(aws: Bucket) -> None:  # noqa: F811
    good = aiven_keys(1, 1, 1)
    fill(aws, good)
    lines = [csv_line(aws, o) for o in current_objects(aws)]
    assert all("%2F" in line[1] for line in lines)  # "/" arrives encoded
    lines.append([aws.name, quote_plus(f"{ROOT}/{AIVEN_PREFIX}a b"), "v1", "true", "false", "5",
                  "2026-01-02T03:04:05.678Z", "e", "STANDARD"])
    assert lines[-1][1].endswith("a+b")  # a space arrives as "+"
    rows = inventory_rows(aws, csv_inventory(aws, lines))
    assert sorted(r.key for r in rows if r.error is None) == sorted(good)
    [bad] = [r for r in rows if r.error is not None]
    assert (bad.key, bad.size, bad.last_modified_ms) == (f"{AIVEN_PREFIX}a b", 5, 1767323045678)


def test_noncurrent_versions_and_delete_markers_are_not_objects(aws: Bucket) -> None:  # noqa: F811
    fill(aws, aiven_keys(1, 1, 1))
    objects = current_objects(aws)
    lines = [csv_line(aws, o) for o in objects]
    lines += [csv_line(aws, objects[0], latest="false"), csv_line(aws, objects[1], marker="true")]
    lines[-1][5] = ""  # a delete marker has no size
    stats = InventoryStats()
    assert len(inventory_rows(aws, csv_inventory(aws, lines), stats)) == 3
    assert stats.not_current == 2


@pytest.mark.parametrize(("data", "message"), [
    (b"\x1f\x8b not json", "not a JSON document"),
    (b"[1, 2]", "not a JSON object"),
    (b" " * (MAX_MANIFEST_BYTES + 1), "larger than"),
    (json.dumps({"sourceBucket": "b", "destinationBucket": "arn:aws:s3:::d", "fileFormat": "ORC",
                 "fileSchema": "struct<bucket:string>", "files": [{"key": "x.orc"}]}).encode(), "ORC is not supported"),
    (json.dumps({"sourceBucket": "b", "destinationBucket": "d", "fileFormat": "CSV", "fileSchema": "Bucket, Key",
                 "files": [{"key": "x"}]}).encode(), "lacks Size, LastModifiedDate"),
    (json.dumps({"sourceBucket": "b", "destinationBucket": "d", "fileFormat": "CSV",
                 "fileSchema": "Bucket, Key, Size, LastModifiedDate", "files": [{"key": "../x"}]}).encode(),
     "no usable key"),
    (json.dumps({"sourceBucket": "b", "destinationBucket": "d", "fileFormat": "JSON", "fileSchema": "x",
                 "files": [{"key": "x"}]}).encode(), "is not CSV or Parquet"),
    (("[" * 100_000 + "]" * 100_000).encode(), "not a JSON document"),
], ids=["binary", "array", "too-large", "orc", "no-size", "dotdot", "json-format", "deep"])
def test_bad_manifests_are_one_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(InventoryError, match=message) as info:
        parse_manifest(data)
    assert "\n" not in str(info.value)


def test_a_manifest_on_s3_too_large_is_refused_unread(aws: Bucket) -> None:  # noqa: F811
    key = f"{REPORT}/big/manifest.json"
    aws.put(key, b" " * (MAX_MANIFEST_BYTES + 10))
    with pytest.raises(InventoryError, match="larger than"):
        list(read_inventory(f"s3://{aws.name}/{key}", f"s3://{aws.name}/{ROOT}", "aiven"))


def test_damaged_csv_rows_stop_the_read_with_one_clear_error(aws: Bucket) -> None:  # noqa: F811
    fill(aws, aiven_keys(1, 1, 1))
    objects = current_objects(aws)
    base = [csv_line(aws, o) for o in objects]
    for damage, message in [(lambda ls: ls[1].pop(), "8 columns, fileSchema names 9"),
                            (lambda ls: ls[1].__setitem__(5, "-3"), "not a byte count"),
                            (lambda ls: ls[1].__setitem__(6, "yesterday"), "no readable LastModifiedDate"),
                            (lambda ls: ls[1].__setitem__(1, "%FF%FE"), "not URL-encoded UTF-8"),
                            (lambda ls: ls[1].__setitem__(0, "another-bucket"), "a row of bucket 'another-bucket'")]:
        lines = [list(line) for line in base]
        damage(lines)
        with pytest.raises(InventoryError, match=message):
            inventory_rows(aws, csv_inventory(aws, lines, parts=1))


def test_a_data_file_that_is_not_gzip_or_parquet_is_one_clear_error(aws: Bucket) -> None:  # noqa: F811
    aws.put(f"{REPORT}/data/bad.csv.gz", b"plain text, not gzip")
    manifest = write_manifest(aws, "CSV", [f"{REPORT}/data/bad.csv.gz"], ", ".join(CSV_SCHEMA))
    with pytest.raises(InventoryError, match="unreadable gzip'd CSV"):
        inventory_rows(aws, manifest)
    aws.put(f"{REPORT}/data/bad.parquet", b"PAR1 garbage PAR1")
    manifest = write_manifest(aws, "Parquet", [f"{REPORT}/data/bad.parquet"], "message s3.inventory {}")
    with pytest.raises(InventoryError, match="unreadable Parquet"):
        inventory_rows(aws, manifest)
    manifest = write_manifest(aws, "CSV", [f"{REPORT}/data/missing.csv.gz"], ", ".join(CSV_SCHEMA))
    with pytest.raises(InventoryError, match=r"missing\.csv\.gz"):
        inventory_rows(aws, manifest)


def test_parquet_rows_without_size_are_one_clear_error(aws: Bucket) -> None:  # noqa: F811
    fill(aws, aiven_keys(1, 1, 1))
    objects = current_objects(aws)
    extra = [{"bucket": aws.name, "key": f"{ROOT}/x", "is_latest": True, "is_delete_marker": False, "size": None,
              "last_modified_date": objects[0]["LastModified"]}]
    with pytest.raises(InventoryError, match="row 4: no key, size"):
        inventory_rows(aws, parquet_inventory(aws, objects, extra))


def test_an_inventory_of_another_bucket_is_refused(aws: Bucket) -> None:  # noqa: F811
    """Another bucket's report would list another tier's (maybe another cluster's) objects as this one's."""
    fill(aws, aiven_keys(1, 1, 1))
    manifest = write_manifest(aws, "CSV", [], ", ".join(CSV_SCHEMA), source="other-bucket")
    aws.put(manifest.split("/", 3)[3], json.dumps({**json.loads(aws.read(manifest.split("/", 3)[3])),
                                                    "files": [{"key": "k"}]}).encode())
    with pytest.raises(InventoryError, match="an inventory of bucket 'other-bucket'"):
        inventory_rows(aws, manifest)
    with pytest.raises(InventoryError, match="lists an s3:// bucket"):
        list(read_inventory(manifest, "gs://b/x", "aiven"))
