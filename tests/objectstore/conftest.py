"""Fixtures of the object-store tests: one moto server for the session, a fresh bucket per test."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.objectstore.s3_servers import MotoServer, aws_env

_BUCKETS = itertools.count()


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto's standalone S3 server on 127.0.0.1 (a separate process), stopped after the session."""
    pytest.importorskip("moto.server", reason="moto[server] not installed (pip install -e '.[dev]')")
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.stop()


@dataclass(frozen=True)
class Bucket:
    server: MotoServer
    name: str

    @property
    def warehouse(self) -> str:
        return f"s3://{self.name}/wh"

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        """The process environment with only the standard AWS variables added (no config for the store)."""
        return {**os.environ, **aws_env(endpoint or self.server.endpoint)}

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.server.client().get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def read(self, key: str) -> bytes:
        return self.server.client().get_object(Bucket=self.name, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self.server.client().put_object(Bucket=self.name, Key=key, Body=data)


@pytest.fixture
def bucket(moto: MotoServer) -> Bucket:
    return Bucket(moto, moto.create_bucket(f"klgc-{next(_BUCKETS)}-{os.getpid()}"))


@pytest.fixture
def aws(bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """``bucket``, with the standard AWS variables set in this process (delta-rs and s3fs read them)."""
    for key, value in aws_env(bucket.server.endpoint).items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    return bucket


def upload_tree(bucket: Bucket, root: Path, prefix: str) -> str:
    """Copy a local directory into the bucket under ``prefix``; returns its ``s3://`` URL."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        bucket.put(f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())
    return f"s3://{bucket.name}/{prefix}"
