"""Typed configuration, validated at load (pydantic, frozen, unknown keys rejected).

Files are passed by explicit path (``--config FILE``); nothing is searched for in ``$HOME`` or the cwd.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipelines.config.duration import parse_duration_ms
from pipelines.config.fleet import BrokersFromConfig

#: The grace period can never be configured below this (cf. Iceberg's 24 h floor for orphan-file removal).
MIN_GRACE_FLOOR_MS = 3_600_000


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _duration(v: Any) -> int:
    return parse_duration_ms(v) if isinstance(v, str | int) else v


class BrokerConfig(_Strict):
    broker_id: int = Field(ge=0)
    log_dirs: tuple[str, ...] = Field(min_length=1, description="fsspec URLs or plain paths of the broker's log dirs")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options, e.g. sftp host/port")
    inventory: str | None = Field(default=None, description="URL of a `logdir-gc inventory` file to ingest instead")


class MetadataConfig(_Strict):
    kind: Literal["metadata_log", "topics_describe", "admin", "none"] = "metadata_log"
    source: str | None = Field(default=None, description="URL of __cluster_metadata-0 (or a snapshot/segment), or a"
                               " kafka-topics --describe output file")
    storage_options: dict[str, Any] = Field(default_factory=dict)
    bootstrap_servers: str | None = None

    @model_validator(mode="after")
    def _source_given(self) -> MetadataConfig:
        if self.kind in ("metadata_log", "topics_describe") and not self.source:
            raise ValueError(f"metadata.source is required when metadata.kind is {self.kind}")
        if self.kind == "admin" and not self.bootstrap_servers:
            raise ValueError("metadata.bootstrap_servers is required when metadata.kind is admin")
        return self


DEFAULT_PROTECTED = (
    "__consumer_offsets", "__transaction_state", "__cluster_metadata", "__share_group_state", "_schemas",
)


class DetectConfig(_Strict):
    protected_topic_patterns: tuple[str, ...] = Field(
        default=DEFAULT_PROTECTED,
        description="regexes (full match) of topics never planned; internal topics always are",
    )
    file_delete_delay_ms: int = Field(default=60_000, description="broker log.segment.delete.delay.ms when the"
                                      " controller image has no config for it")
    delete_margin_ms: int = Field(default=3_600_000, description="-delete dirs older than delay + margin are stuck")
    grace_ms: int = Field(default=86_400_000, description="garbage must be this old (metadata event time) to plan")

    _durations = field_validator("file_delete_delay_ms", "delete_margin_ms", "grace_ms", mode="before")(_duration)

    @field_validator("grace_ms")
    @classmethod
    def _floor(cls, v: int) -> int:
        if v < MIN_GRACE_FLOOR_MS:
            raise ValueError(f"grace must be at least {MIN_GRACE_FLOOR_MS // 60000} minutes (floor)")
        return v


class PolicyConfig(_Strict):
    approvals_required: int = Field(default=1, ge=1)
    approver_must_differ_from_author: bool = True
    plan_expiry_ms: int = Field(default=7 * 86_400_000)
    max_plan_bytes: int | None = None
    max_plan_items: int | None = None
    max_broker_bytes: int | None = None
    max_broker_items: int | None = None
    protected_topic_patterns: tuple[str, ...] = ()
    min_grace_ms: int = Field(default=86_400_000)

    _durations = field_validator("plan_expiry_ms", "min_grace_ms", mode="before")(_duration)

    @field_validator("min_grace_ms")
    @classmethod
    def _floor(cls, v: int) -> int:
        if v < MIN_GRACE_FLOOR_MS:
            raise ValueError(f"policy.min_grace_ms must be at least {MIN_GRACE_FLOOR_MS // 60000} minutes (floor)")
        return v


class ExecutorConfig(_Strict):
    quarantine_dir_name: str = Field(default=".logdir-gc-quarantine", description="created beside each log dir, on"
                                     " the same filesystem, never inside it")
    state_dir: str | None = Field(default=None, description="journal and locks; default <quarantine>/../.logdir-gc")
    purge_retention_ms: int = Field(default=7 * 86_400_000)
    purge_bytes_per_second: int | None = Field(default=None, ge=1)
    purge_files_per_second: int | None = Field(default=None, ge=1)
    prestart_time_budget_ms: int = Field(default=300_000)

    _durations = field_validator("purge_retention_ms", "prestart_time_budget_ms", mode="before")(_duration)


class SparkConfig(_Strict):
    master: str | None = Field(default=None, description="None: the spark-submit session, else local[*]")
    conf: dict[str, str] = Field(default_factory=dict)


class AppConfig(_Strict):
    cluster: str = Field(min_length=1, description="a name for the cluster; plans and tables are keyed by it")
    warehouse: str = Field(description="root of the Delta tables: <warehouse>/<table name>")
    plans_dir: str | None = Field(default=None, description="where plan JSON/Markdown files go; default"
                                  " <warehouse>/_plans")
    brokers: tuple[BrokerConfig, ...] = ()
    brokers_from: BrokersFromConfig | None = Field(default=None, description="derive brokers from the controller"
                                                   " metadata's broker ids and URL templates (pipelines.config.fleet)")
    metadata: MetadataConfig = MetadataConfig(kind="none")
    detect: DetectConfig = DetectConfig()
    policy: PolicyConfig = PolicyConfig()
    executor: ExecutorConfig = ExecutorConfig()
    spark: SparkConfig = SparkConfig()

    @model_validator(mode="after")
    def _unique_brokers(self) -> AppConfig:
        ids = [b.broker_id for b in self.brokers]
        if len(ids) != len(set(ids)):
            raise ValueError("brokers: each broker_id may appear only once")
        if self.brokers_from is not None and self.metadata.kind == "none":
            raise ValueError("brokers_from needs a controller metadata source (metadata.kind) to read broker ids from")
        return self
