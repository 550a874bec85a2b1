"""The ``remote_tier:`` section: where a KIP-405 remote tier lives, how its keys are laid out, and what may be planned.

Unset (the default), the pipeline never looks at a remote tier. Set, ``logdir-gc run`` lists the tier after detect,
replays ``__remote_log_metadata`` and classifies every remote segment (``remote_objects``, ``remote_log_segments``,
``remote_findings``). Nothing is planned unless ``owned_prefix`` is set: keys carry no cluster id and two clusters
may share a bucket, so the operator must say which part of ``location`` this cluster owns.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipelines.config.kafka_client import KafkaClientConfig

__all__ = ["QUARANTINE_FOLDER", "REMOTE_SCHEMES", "RemoteMetadataConfig", "RemoteTierConfig"]

QUARANTINE_FOLDER = ".logdir-gc-quarantine/"
"""Default quarantine folder, relative to ``location``."""
REMOTE_SCHEMES = frozenset({"", "file", "s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "memory"})
"""URL schemes a ``location`` may have ("" is a plain local path)."""
_S3 = frozenset({"s3", "s3a"})
_SERVERS = re.compile(r"[^,\s]+:\d{1,5}(?:,[^,\s]+:\d{1,5})*")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _relative_folder(value: str, what: str) -> str:
    """A folder relative to ``location``: no leading ``/``, no ``.``/``..`` component, no NUL; ends in ``/``."""
    if "\0" in value or value.startswith("/") or "://" in value:
        raise ValueError(f"{what} {value!r} must be relative to remote_tier.location")
    parts = value.rstrip("/").split("/")
    if any(p in (".", "..") for p in parts) or "" in parts:
        raise ValueError(f"{what} {value!r} has an empty, '.' or '..' component")
    return value.rstrip("/") + "/"


class RemoteMetadataConfig(_Strict):
    """Where ``__remote_log_metadata`` is read from; neither key set: the replicas the crawl's brokers hold."""

    source: str | None = Field(default=None, description="a directory (path or fsspec URL) holding copied "
                               "__remote_log_metadata-N replica directories")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options for source")
    bootstrap_servers: str | None = Field(default=None, description="host:port[,host:port...] to consume the topic"
                                          " from a live cluster")
    kafka_client: KafkaClientConfig = Field(default_factory=KafkaClientConfig, description="TLS/SASL settings of"
                                            " the live consumer (secrets by environment variable)")

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers(cls, v: str | None) -> str | None:
        if v is not None and not _SERVERS.fullmatch(v):
            raise ValueError(f"bootstrap_servers {v!r} is not host:port[,host:port...]")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> RemoteMetadataConfig:
        if self.source and self.bootstrap_servers:
            raise ValueError("give at most one of source and bootstrap_servers")
        if not self.bootstrap_servers and "kafka_client" in self.model_fields_set:
            raise ValueError("kafka_client configures the live consumer: it needs bootstrap_servers")
        return self


class RemoteTierConfig(_Strict):
    """``remote_tier:``; see docs/tiered-storage.md."""

    layout: Literal["aiven", "local_tiered_storage"] = Field(description="the RemoteStorageManager plugin's key"
                                                             " layout")
    location: str = Field(min_length=1, description="the plugin's root: LocalTieredStorage's rsm.config.dir, or the"
                          " bucket[/folder] Aiven writes to (s3://, gs://, abfss://, file:// or a path)")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="for s3:// the warehouse's spellings"
                                            " (endpoint, region, aws_access_key_id...) over the AWS_* variables;"
                                            " other schemes: their fsspec options")
    owned_prefix: str | None = Field(default=None, description="the folder of location this cluster owns (relative);"
                                     " unset: nothing remote is planned")
    quarantine_prefix: str = Field(default="", description="where the remote executor quarantines objects; default"
                                   " <location>/.logdir-gc-quarantine/")
    metadata: RemoteMetadataConfig = RemoteMetadataConfig()
    prefix: str = Field(default="", description="Aiven's key.prefix (glued in front of the topic folder)")
    inventory_manifest: str | None = Field(default=None, description="URL of an S3 Inventory manifest.json of the"
                                           " location's bucket, read instead of listing the bucket")
    inventory_data_root: str | None = Field(default=None, description="where the report's data files are when they"
                                            " are not in the manifest's destination bucket (a copy)")
    plan_untracked: bool = Field(default=False, description="segments no metadata record names may be planned"
                                 " (only with a complete metadata topic)")
    read_manifests: bool = Field(default=True, description="layout aiven: read the .rsm-manifest of each plannable"
                                 " segment as a second witness (one ranged GET each); false only for a run that"
                                 " cannot read the bucket's objects")

    @field_validator("location")
    @classmethod
    def _location(cls, v: str) -> str:
        if "\0" in v or v != v.strip():
            raise ValueError(f"location {v!r} has surrounding spaces or a NUL")
        parsed = urlparse(v)
        if parsed.scheme.lower() not in REMOTE_SCHEMES:
            raise ValueError(f"location {v!r}: scheme {parsed.scheme!r} is not one of "
                             f"{', '.join(sorted(s for s in REMOTE_SCHEMES if s))} (or a plain path)")
        if parsed.scheme.lower() in _S3 | {"gs", "gcs"} and not parsed.netloc:
            raise ValueError(f"location {v!r} names no bucket")
        if ".." in parsed.path.split("/"):
            raise ValueError(f"location {v!r} has a '..' component")
        return v.rstrip("/") if len(v.rstrip("/")) > len(parsed.scheme) + 3 else v

    @field_validator("owned_prefix")
    @classmethod
    def _owned(cls, v: str | None) -> str | None:
        if v == "":
            raise ValueError("owned_prefix must name a folder of location (the remote executor refuses an empty"
                             " one); to claim everything, point location one folder up")
        return None if v is None else _relative_folder(v, "owned_prefix")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if "\0" in v or v.startswith("/") or ".." in v.split("/"):
            raise ValueError(f"prefix {v!r} must be a key prefix relative to location (no leading '/', no '..')")
        return v

    @model_validator(mode="before")
    @classmethod
    def _default_quarantine(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("quarantine_prefix") and isinstance(data.get("location"), str):
            data = {**data, "quarantine_prefix": data["location"].rstrip("/") + "/" + QUARANTINE_FOLDER}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RemoteTierConfig:
        if self.layout == "local_tiered_storage" and self.prefix:
            raise ValueError("prefix is Aiven's key.prefix; layout local_tiered_storage has none (its root is"
                             " rsm.config.dir)")
        if self.inventory_manifest is not None and urlparse(self.location).scheme.lower() not in _S3:
            raise ValueError("inventory_manifest lists an s3:// bucket; location is not one")
        if urlparse(self.quarantine_prefix).scheme.lower() != urlparse(self.location).scheme.lower():
            raise ValueError("quarantine_prefix must be on location's store (a server-side copy moves objects there)")
        return self

    def relative_quarantine(self) -> str | None:
        """The quarantine folder relative to ``location`` (ending in ``/``), or None when it lies elsewhere."""
        root = self.location.rstrip("/") + "/"
        q = self.quarantine_prefix.rstrip("/") + "/"
        return q[len(root):] if q.startswith(root) and len(q) > len(root) else None
