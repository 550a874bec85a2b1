"""The object operations of the remote executor over fsspec: head, list a segment's keys, server-side copy, verify,
delete. Every read goes to the store (the filesystem's listing cache is dropped first): a cached answer could hide
a concurrent upload.

Keys are relative to the tier's ``location`` (:class:`~pipelines.remote_tier.object_listing.RemoteLocation`).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import dataclass
from typing import Any

from pipelines.remote_tier.object_listing import RemoteLocation, modified_ms, normalize_etag, open_location

__all__ = ["ObjectChanged", "ObjectInfo", "TierStore", "copy_verdict"]

_CHUNK = 8 << 20


class ObjectChanged(Exception):
    """A conditional delete was refused by the store: the object is no longer the one with that ETag."""


def _precondition_failed(exc: BaseException) -> bool:
    cause = exc.__cause__ or exc
    response = getattr(cause, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") == "PreconditionFailed"


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    size: int
    etag: str | None
    last_modified_ms: int


def _plain_md5(etag: str | None) -> bool:
    """An ETag that is the MD5 of the content (single-part upload or copy): 32 hex digits, no ``-N`` suffix."""
    return etag is not None and len(etag) == 32 and all(c in "0123456789abcdefABCDEF" for c in etag)


def _info(entry: dict[str, Any]) -> ObjectInfo | None:
    size = entry.get("size", entry.get("Size"))
    when = modified_ms(entry)
    if isinstance(size, bool) or not isinstance(size, int) or when is None:
        return None
    return ObjectInfo(size, normalize_etag(entry.get("ETag", entry.get("etag", entry.get("e_tag")))), when)


class TierStore:
    """One opened tier; the only place the remote executor touches objects."""

    def __init__(self, loc: RemoteLocation) -> None:
        self.loc = loc
        self.fs = loc.fs
        self.local = self.fs.protocol in ("file", ("file", "local"))

    @classmethod
    def open(cls, location: str, storage_options: dict[str, Any] | None = None) -> TierStore:
        return cls(open_location(location, storage_options))

    def _path(self, key: str) -> str:
        return self.loc.path(key)

    def _forget(self, path: str) -> None:
        self.fs.invalidate_cache(path)
        self.fs.invalidate_cache(posixpath.dirname(path))

    def head(self, key: str) -> ObjectInfo | None:
        """The object's size, ETag and last-modified time now; None when there is no such object."""
        path = self._path(key)
        self._forget(path)
        try:
            entry = self.fs.info(path)
        except FileNotFoundError:
            return None
        if entry.get("type") == "directory":
            return None
        info = _info(entry)
        if info is None:
            raise OSError(f"the store gives no size or last-modified time for {key!r}")
        return info

    def list_folder(self, folder: str) -> dict[str, ObjectInfo | None]:
        """Every object directly in ``folder`` (relative, no trailing ``/``), by key; None: the listing gives no size
        or time for it."""
        path = self._path(folder)
        self._forget(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return {}
        finally:
            self._forget(path)
        out: dict[str, ObjectInfo | None] = {}
        for entry in entries:
            rel = self.loc.relative(entry["name"])
            if rel is not None and entry.get("type") != "directory":
                out[rel] = _info(entry)
        return out

    def copy(self, src: str, dst: str) -> None:
        """Server-side copy ``src`` to ``dst`` (same store), replacing ``dst``."""
        target = self._path(dst)
        if not getattr(self.fs, "auto_mkdir", True) or self.local:
            self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        self.fs.copy(self._path(src), target)
        self._forget(target)

    def delete(self, key: str, etag: str | None = None) -> None:
        """Delete ``key``; on S3 with ``etag`` only if it still has that ETag (``If-Match``: raises
        :class:`ObjectChanged` otherwise). Other stores have no conditional delete: the caller's last look is all."""
        path = self._path(key)
        call = getattr(self.fs, "call_s3", None)
        if etag is not None and call is not None:
            bucket, _, name = path.partition("/")
            try:
                call("delete_object", Bucket=bucket, Key=name, IfMatch=f'"{etag}"')
            except OSError as exc:
                if _precondition_failed(exc):
                    raise ObjectChanged(f"{key!r} no longer has ETag {etag}: the store refused the delete") from None
                raise
        else:
            self.fs.rm_file(path)
        self._forget(path)

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Write ``key`` only if no object has that name; True when this call created it. S3: one PUT with
        ``If-None-Match: *``; local disk: ``O_CREAT | O_EXCL``; other stores: a look, then a write (not atomic)."""
        path = self._path(key)
        call = getattr(self.fs, "call_s3", None)
        try:
            if call is not None:
                bucket, _, name = path.partition("/")
                try:
                    call("put_object", Bucket=bucket, Key=name, Body=data, IfNoneMatch="*")
                except OSError as exc:
                    if _precondition_failed(exc):
                        return False
                    raise
            elif self.local:
                os.makedirs(posixpath.dirname(path), exist_ok=True)
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    os.fsync(f.fileno())
            elif self.head(key) is not None:
                return False
            else:
                self.fs.pipe_file(path, data)
        finally:
            self._forget(path)
        return True

    def read_head(self, key: str, limit: int) -> bytes:
        """At most ``limit`` bytes from the start of ``key``."""
        with self.fs.open(self._path(key), "rb") as f:
            return f.read(limit)

    def digest(self, key: str) -> str:
        """sha256 of the object's bytes, streamed."""
        h = hashlib.sha256()
        with self.fs.open(self._path(key), "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        return h.hexdigest()

    def versioning(self) -> str | None:
        """``Enabled``/``Suspended`` for a versioned S3 bucket (a delete then keeps a noncurrent version), else None.
        A store that cannot say is taken as not versioned, and the report says so."""
        bucket = self.loc.root.split("/", 1)[0]
        call = getattr(self.fs, "call_s3", None)
        if call is None:
            return None
        answer = call("get_bucket_versioning", Bucket=bucket)
        status = answer.get("Status")
        return str(status) if status else None


def copy_verdict(store: TierStore, src: str, src_info: ObjectInfo, dst: str) -> tuple[str | None, dict[str, Any]]:
    """Whether the object at ``dst`` is a verified copy of ``src`` (whose listed facts are ``src_info``): (None,
    facts) when it is; (why not, facts) otherwise. Same size, and the same ETag when both are plain MD5 ETags; else
    the same sha256 of the bytes (a multipart ETag changes on copy; a local file has none)."""
    got = store.head(dst)
    if got is None:
        return f"the copy {dst!r} is not there", {}
    facts: dict[str, Any] = {"size": got.size, "etag": got.etag}
    if got.size != src_info.size:
        return f"the copy {dst!r} has {got.size} bytes, the original {src_info.size}", facts
    if _plain_md5(src_info.etag) and _plain_md5(got.etag):
        if src_info.etag != got.etag:
            return f"the copy {dst!r} has ETag {got.etag}, the original {src_info.etag}", facts
        return None, facts
    ours, theirs = store.digest(src), store.digest(dst)
    facts["sha256"] = theirs
    if ours != theirs:
        return f"the copy {dst!r} has sha256 {theirs[:16]}…, the original {ours[:16]}…", facts
    return None, facts
