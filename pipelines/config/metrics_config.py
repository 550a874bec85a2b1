"""The ``metrics:`` section: where Prometheus text files go and where runs push them (see ``pipelines.metrics``)."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

_JOB = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class MetricsConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    dir: str | None = Field(default=None, description="where each Spark run writes logdir_gc_run_<cluster>_<run id>"
                            ".prom (path or fsspec URL); default <warehouse>/_metrics")
    pushgateway_url: str | None = Field(default=None, description="http(s)://host:port of a Prometheus Pushgateway "
                                        "each Spark run pushes to; unset: no push")
    pushgateway_job: str = Field(default="logdir_gc", description="the Pushgateway job label")
    push_timeout_s: float = Field(default=10.0, gt=0, le=300, description="seconds before a push is given up")
    textfile_dir: str | None = Field(default=None, description="on the broker host: node_exporter's "
                                     "--collector.textfile.directory; the executor writes "
                                     "logdir_gc_executor_<cluster>_<broker>.prom there; unset: not written")

    @field_validator("pushgateway_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"must be an http:// or https:// URL with a host, got {v!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"must not carry a query or fragment, got {v!r}")
        return v.rstrip("/")

    @field_validator("pushgateway_job")
    @classmethod
    def _job_name(cls, v: str) -> str:
        if not _JOB.match(v):
            raise ValueError(f"must be letters, digits and underscores (not starting with a digit), got {v!r}")
        return v

    @field_validator("textfile_dir")
    @classmethod
    def _local_dir(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if "://" in v or not posixpath.isabs(v):
            raise ValueError(f"must be an absolute local directory (node_exporter reads local files), got {v!r}")
        return v
