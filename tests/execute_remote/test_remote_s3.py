"""The remote executor on moto's standalone S3 server: ETags, a key reused after delete, restore byte for byte, and
a versioned bucket's noncurrent bytes."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from remote_world import SEGMENTS, RemoteWorld, build_remote_world

from pipelines.errors import ExecutorBusy
from pipelines.execute import faults
from pipelines.execute_remote.apply import apply_remote
from pipelines.execute_remote.restore_purge import restore_remote
from pipelines.execute_remote.tier_lease import TierLease
from tests.objectstore.conftest import Bucket, aws, bucket, moto  # noqa: F401 - the object-store fixtures

LATER = timedelta(days=2)  # objects written now are past the host's 24 h grace floor then


def _world(tmp_path: Path, aws: Bucket) -> RemoteWorld:  # noqa: F811
    return build_remote_world(tmp_path, f"s3://{aws.name}/tier")


def _apply(w: RemoteWorld, **kw):
    return apply_remote(w.config, w.store, w.plan.plan_id, tools=w.tools, now=datetime.now(timezone.utc) + LATER,
                        **kw)


def _skips(report) -> dict[str, str]:
    return {i.item_id: i.rule for i in report.items if i.action in ("skipped", "failed")}


def test_apply_and_restore_on_s3_are_byte_identical_and_etags_are_kept(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    before = {k: aws.read(k) for k in aws.keys("tier/")}
    etags = {k.key: k.etag for i in w.plan.items for k in i.keys or ()}
    assert all(e and len(e) == 32 for e in etags.values())  # the crawl listed real ETags
    report = _apply(w, execute=True)
    assert report.count("quarantined") == 2, report.items
    assert not aws.keys("tier/clusterA/")
    for key, data in w.originals.items():
        assert aws.read(f"tier/{w.quarantine(key)}") == data
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert not r.failed and len(r.restored) == 2
    assert {k: aws.read(k) for k in aws.keys("tier/")} == before
    assert {k.key: w.tools.tier.head(k.key).etag for i in w.plan.items for k in i.keys or ()} == etags


def test_a_key_whose_etag_changed_since_the_crawl_is_skipped(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    victim = sorted(w.originals)[0]
    aws.put(f"tier/{victim}", b"Z" * len(w.originals[victim]))  # same size, other bytes: another ETag
    report = _apply(w, execute=True)
    assert sorted(_skips(report).values()) == ["changed"] and report.count("quarantined") == 1
    assert aws.read(f"tier/{victim}") == b"Z" * len(w.originals[victim])


def test_a_key_reused_after_delete_is_skipped_even_with_the_same_bytes(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    victim = sorted(w.originals)[0]
    listed = next(k.last_modified_ms for i in w.plan.items for k in i.keys or () if k.key == victim)
    while time.time() * 1000 < listed + 1000:  # S3 times are whole seconds: re-upload in a later second
        time.sleep(0.1)
    client = aws.server.client()
    client.delete_object(Bucket=aws.name, Key=f"tier/{victim}")
    aws.put(f"tier/{victim}", w.originals[victim])  # same size and ETag; a new object (newer last-modified)
    report = _apply(w, execute=True)
    assert sorted(_skips(report).values()) == ["changed"]
    assert aws.read(f"tier/{victim}") == w.originals[victim]


def test_a_key_the_executor_deleted_that_reappears_is_never_deleted_again(tmp_path: Path, aws: Bucket,  # noqa: F811
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    w = _world(tmp_path, aws)

    class Crash(BaseException):
        pass

    def kill(pid: int, sig: int) -> None:
        raise Crash

    faults._seen.clear()
    monkeypatch.setenv(faults.ENV_POINT, "delete.done:1")
    monkeypatch.setattr(faults.os, "kill", kill)
    with pytest.raises(Crash):
        _apply(w, execute=True)
    monkeypatch.delenv(faults.ENV_POINT)
    gone = [k for k in w.originals if not aws.keys(f"tier/{k}")]
    assert len(gone) == 1
    aws.put(f"tier/{gone[0]}", b"a new object under a reused key")
    report = _apply(w, execute=True)
    assert "changed" in _skips(report).values()
    assert aws.read(f"tier/{gone[0]}") == b"a new object under a reused key"


def test_a_versioned_bucket_reports_the_deleted_bytes_as_noncurrent(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    aws.server.client().put_bucket_versioning(Bucket=aws.name, VersioningConfiguration={"Status": "Enabled"})
    w = _world(tmp_path, aws)
    report = _apply(w, execute=True)
    assert report.count("quarantined") == len(SEGMENTS)
    assert any("noncurrent" in p and f"{report.bytes_quarantined:,} bytes" in p for p in report.problems)


def test_an_unversioned_bucket_says_nothing_of_noncurrent_versions(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    report = _apply(w, execute=True)
    assert report.count("quarantined") == len(SEGMENTS)
    assert not [p for p in report.problems if "noncurrent" in p]


def test_a_copy_whose_etag_differs_keeps_the_original(tmp_path: Path, aws: Bucket,  # noqa: F811
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    w = _world(tmp_path, aws)
    real = w.tools.tier.copy

    def damaging(src: str, dst: str) -> None:
        real(src, dst)
        data = aws.read(f"tier/{dst}")
        aws.put(f"tier/{dst}", bytes([data[0] ^ 1]) + data[1:])

    monkeypatch.setattr(w.tools.tier, "copy", damaging)
    report = _apply(w, execute=True)
    assert set(_skips(report).values()) == {"copy_unverified"}
    assert all(aws.read(f"tier/{k}") == v for k, v in w.originals.items())


def test_restore_refuses_a_quarantined_copy_whose_etag_changed(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    _apply(w, execute=True)
    changed = sorted(w.originals)[0]
    data = w.originals[changed]
    aws.put(f"tier/{w.quarantine(changed)}", bytes([data[0] ^ 1]) + data[1:])  # same size, another ETag
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.failed) == 1 and "[copy_changed]" in next(iter(r.failed.values()))
    assert not aws.keys(f"tier/{changed}")


def test_an_original_replaced_after_the_last_look_is_kept_by_the_conditional_delete(
        tmp_path: Path, aws: Bucket, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    w = _world(tmp_path, aws)
    victim = sorted(w.originals)[0]
    real = w.tools.tier.head

    def head_then_replace(key: str):
        info = real(key)
        if key == victim and info is not None:
            aws.put(f"tier/{victim}", b"replaced between the last look and the delete")
        return info

    monkeypatch.setattr(w.tools.tier, "head", head_then_replace)
    report = _apply(w, execute=True)
    assert set(_skips(report).values()) == {"changed"}
    assert aws.read(f"tier/{victim}") == b"replaced between the last look and the delete"


def test_purge_deletes_only_the_verified_copies_on_s3(tmp_path: Path, aws: Bucket,  # noqa: F811
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.execute_remote.restore_purge import purge_remote

    w = _world(tmp_path, aws)
    _apply(w, execute=True)
    first, second = sorted(w.plan.items, key=lambda i: i.item_id)
    replaced = f"tier/{w.quarantine(min(k.key for k in first.keys or ()))}"
    real = w.tools.tier.head

    def head_then_replace(key: str):
        info = real(key)
        if f"tier/{key}" == replaced and info is not None:
            aws.put(replaced, b"written into the quarantine after the check")
        return info

    monkeypatch.setattr(w.tools.tier, "head", head_then_replace)
    floor = w.config.executor.purge_retention_floor_ms
    later = datetime.now(timezone.utc) + timedelta(milliseconds=floor + 60_000)
    report = purge_remote(w.config, older_than_ms=floor, execute=True, tools=w.tools, now=later)
    assert list(report.failed) == [f"{w.plan.plan_id}/{first.item_id}"] and "[copy_changed]" in \
        report.failed[f"{w.plan.plan_id}/{first.item_id}"]
    assert [i.item_id for i in report.items] == [second.item_id]
    assert aws.read(replaced) == b"written into the quarantine after the check"
    assert not [k for k in aws.keys("tier/.logdir-gc-quarantine/") if str(second.segment_id) in k]


def test_two_remote_executors_on_one_bucket_cannot_both_hold_its_lease(tmp_path: Path, aws: Bucket) -> None:  # noqa: F811
    """The lease is one conditional PUT (``If-None-Match: *``): the second executor is refused until the first is
    done, whatever host it runs on."""
    w = _world(tmp_path, aws)
    with TierLease(w.tools.tier, w.tools.target, "apply"):
        with pytest.raises(ExecutorBusy, match=r"\[tier_lease\]"), TierLease(w.tools.tier, w.tools.target, "purge"):
            pass
        assert w.tools.tier.create_exclusive("probe", b"1") and not w.tools.tier.create_exclusive("probe", b"2")
    with TierLease(w.tools.tier, w.tools.target, "restore"):  # released: the next one takes it
        pass
