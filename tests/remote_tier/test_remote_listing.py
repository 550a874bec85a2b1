"""Listing a remote tier through fsspec: moto's real S3 server (both layouts) and a LocalTieredStorage file tree."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import ClassVar

import pytest
from remote_builders import uid

from pipelines.remote_tier.listing import ListedObject
from pipelines.remote_tier.object_listing import (
    ListingProblem,
    list_location,
    list_prefix,
    listing_rows,
    open_location,
    topic_prefixes,
)
from tests.objectstore.conftest import Bucket, aws, bucket, moto  # noqa: F401 - the object-store fixtures
from tests.objectstore.s3_servers import aws_env

AIVEN_PREFIX = "kc1-"
ROOT = "tier"


def aiven_keys(topics: int = 2, partitions: int = 2, segments: int = 2) -> list[str]:
    """Keys relative to the location: ``<prefix><topic>-<id>/<partition>/<offset>-<segment>.<kind>``."""
    keys = []
    n = 0
    for t in range(topics):
        tid = uid(t)
        for p in range(partitions):
            for s in range(segments):
                n += 1
                sid = uid(1000 + n)
                for kind in ("log", "indexes", "rsm-manifest"):
                    keys.append(f"{AIVEN_PREFIX}topic-{t}-{tid}/{p}/{s * 100:020d}-{sid}.{kind}")
    return keys


def local_keys() -> list[str]:
    keys = []
    for p in range(2):
        sid = uid(500 + p)
        for kind in ("log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint"):
            keys.append(f"kafka-tiered-storage/orders-{p}-{uid(7)}/{0:020d}-{sid}.{kind}")
    return keys


HOSTILE_INSIDE = [
    f"{AIVEN_PREFIX}loose-object",  # at the area's level, in no topic folder
    f"{AIVEN_PREFIX}topic-0-{uid(0)}/0/not-a-segment.log",
    f"{AIVEN_PREFIX}topic-0-{uid(0)}/0/deeper/{0:020d}-{uid(9)}.log",
    f"{AIVEN_PREFIX}topic-0-{uid(0)}/0/{0:020d}-{uid(9)}.log with space+plus",
]
OUTSIDE = ["other/app.bin", f"kc2-topic-9-{uid(9)}/0/{0:020d}-{uid(9)}.log"]


def fill(store: Bucket, keys: list[str], root: str = ROOT) -> None:
    for i, key in enumerate(keys):
        store.put(f"{root}/{key}" if root else key, b"x" * (10 + i))


def boto_listing(store: Bucket, root: str = ROOT) -> dict[str, dict]:
    pages = store.server.client().get_paginator("list_objects_v2").paginate(Bucket=store.name, Prefix=root + "/")
    return {o["Key"][len(root) + 1:]: o for page in pages for o in page.get("Contents", [])}


def test_aiven_layout_listed_prefix_by_prefix_on_s3(aws: Bucket) -> None:  # noqa: F811
    keys = aiven_keys()
    fill(aws, keys + HOSTILE_INSIDE + OUTSIDE)
    loc = open_location(f"s3://{aws.name}/{ROOT}")
    prefixes = topic_prefixes(loc, "aiven", AIVEN_PREFIX)
    assert prefixes == [f"{AIVEN_PREFIX}topic-0-{uid(0)}/", f"{AIVEN_PREFIX}topic-1-{uid(1)}/"]

    items = list(list_location(loc, "aiven", AIVEN_PREFIX))
    truth = boto_listing(aws)
    assert sorted(i.key for i in items) == sorted(keys + HOSTILE_INSIDE)  # nothing outside the area
    for item in items:
        assert isinstance(item, ListedObject)
        o = truth[item.key]
        assert item.size == o["Size"]
        assert item.etag == o["ETag"].strip('"')
        assert item.last_modified_ms == (o["LastModified"] - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) \
            // dt.timedelta(milliseconds=1)

    rows = list(listing_rows(items, "aiven", AIVEN_PREFIX))
    good = [r for r in rows if r.error is None]
    assert sorted(r.key for r in good) == sorted(keys)
    assert {r.key for r in rows if r.error is not None} == set(HOSTILE_INSIDE)
    assert {r.object_kind for r in good} == {"log", "indexes", "rsm-manifest"}
    assert {r.topic for r in good} == {"topic-0", "topic-1"}


def test_one_prefix_lists_only_that_prefix(aws: Bucket) -> None:  # noqa: F811
    keys = aiven_keys()
    fill(aws, keys)
    loc = open_location(f"s3://{aws.name}/{ROOT}")
    first = topic_prefixes(loc, "aiven", AIVEN_PREFIX)[0]
    listed = [o.key for o in list_prefix(loc, first)]
    assert listed == sorted(k for k in keys if k.startswith(first))
    assert not loc.fs.dircache  # the prefix's listing is not kept


def test_storage_options_win_over_the_environment(bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The warehouse's conventions: ``warehouse_storage_options`` (here the endpoint and keys) reach s3fs."""
    fill(bucket, aiven_keys(1, 1, 1))
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    env = aws_env(bucket.server.endpoint)
    options = {"endpoint": env["AWS_ENDPOINT_URL"], "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
               "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"], "region": env["AWS_REGION"]}
    loc = open_location(f"s3://{bucket.name}/{ROOT}", options, env={})
    assert len(list(list_location(loc, "aiven", AIVEN_PREFIX))) == 3


def test_local_tiered_storage_layout_on_s3(aws: Bucket) -> None:  # noqa: F811
    keys = local_keys()
    fill(aws, [*keys, "kafka-tiered-storage/stray.txt"], root="rsm")
    loc = open_location(f"s3://{aws.name}/rsm")
    assert topic_prefixes(loc, "local_tiered_storage") == sorted({k.rsplit("/", 1)[0] + "/" for k in keys})
    rows = list(listing_rows(list_location(loc, "local_tiered_storage"), "local_tiered_storage"))
    assert sorted(r.key for r in rows if r.error is None) == sorted(keys)
    assert [r.key for r in rows if r.error is not None] == ["kafka-tiered-storage/stray.txt"]


@pytest.mark.parametrize("as_url", [True, False], ids=["file-url", "path"])
def test_local_tiered_storage_tree(tmp_path: Path, as_url: bool) -> None:
    """``rsm.config.dir`` as LocalTieredStorage leaves it: files, plus an emptied partition folder."""
    keys = local_keys()
    for key in keys:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(b"abc")
    os.utime(tmp_path / keys[0], (1_700_000_000.5, 1_700_000_000.5))
    (tmp_path / "kafka-tiered-storage" / f"deleted-0-{uid(8)}").mkdir()
    loc = open_location(tmp_path.as_uri() if as_url else str(tmp_path))
    assert len(topic_prefixes(loc, "local_tiered_storage")) == 3
    rows = list(listing_rows(list_location(loc, "local_tiered_storage"), "local_tiered_storage"))
    assert sorted(r.key for r in rows) == sorted(keys) and all(r.error is None for r in rows)
    assert {r.key: r.last_modified_ms for r in rows}[keys[0]] == 1_700_000_000_500
    assert {r.partition for r in rows} == {0, 1}


def test_an_entry_without_size_or_time_is_an_error_row_never_a_guess() -> None:
    class FakeFs:
        dircache: ClassVar[dict] = {}

        def _strip_protocol(self, name: str) -> str:
            return name

        def find(self, path: str, detail: bool) -> dict:
            return {f"{path}/a": {"name": f"{path}/a", "type": "file", "size": 3},
                    f"{path}/b": {"name": f"{path}/b", "type": "file", "LastModified": "soon", "size": 3},
                    f"{path}/c": {"name": f"{path}/c", "type": "file"},
                    "elsewhere/d": {"name": "elsewhere/d", "type": "file", "size": 1, "mtime": 1.0}}

        def invalidate_cache(self, path: str) -> None:
            pass

    from pipelines.remote_tier.object_listing import RemoteLocation

    items = list(list_prefix(RemoteLocation(FakeFs(), "root", "x://root"), "t/"))
    assert all(isinstance(i, ListingProblem) for i in items)
    rows = list(listing_rows(items, "aiven"))
    assert [r.error is not None for r in rows] == [True] * 4
    assert all(r.segment is None for r in rows)


@pytest.mark.parametrize("bad", ["../x/", "/abs/", "no-slash"])
def test_a_prefix_outside_the_location_is_refused(tmp_path: Path, bad: str) -> None:
    loc = open_location(str(tmp_path))
    with pytest.raises(ValueError, match="not a folder relative"):
        list(list_prefix(loc, bad))


def test_a_filesystem_root_is_not_a_location() -> None:
    with pytest.raises(ValueError, match="filesystem root"):
        open_location("/")
