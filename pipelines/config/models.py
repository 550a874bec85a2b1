"""Typed configuration, validated at load (pydantic, frozen, unknown keys rejected).

Files are passed by explicit path (``--config FILE``); nothing is searched for in ``$HOME`` or the cwd.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipelines.config.duration import parse_duration_ms
from pipelines.config.fleet import BrokersFromConfig
from pipelines.config.kafka_client import KafkaClientConfig
from pipelines.config.metrics_config import MetricsConfig
from pipelines.config.remote_tier import RemoteTierConfig

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


#: ``host:port[,host:port...][/chroot]``, as Kafka's ``zookeeper.connect`` (IPv6 hosts in brackets).
ZOOKEEPER_CONNECT = re.compile(r"(?:[^,/:\s]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}(?:,(?:[^,/:\s]+|\[[0-9A-Fa-f:.]+\]):\d{1,5})*"
                               r"(?:/[^\s/]+(?:/[^\s/]+)*)?")


class ZooKeeperTlsConfig(_Strict):
    """TLS to ZooKeeper's secure client port (kazoo's ``use_ssl``); files are PEM."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password_env: str | None = Field(default=None, description="environment variable holding the key password")
    verify_certs: bool = True
    check_hostname: bool = True


class ZooKeeperAuthConfig(_Strict):
    """``digest``: ZooKeeper's digest ACL scheme (addauth); ``DIGEST-MD5``/``GSSAPI``: SASL (pure-sasl)."""

    mechanism: Literal["digest", "DIGEST-MD5", "GSSAPI"]
    username: str | None = None
    password_env: str | None = Field(default=None, description="environment variable holding the password")
    service: str | None = Field(default=None, description="GSSAPI service name (default zookeeper)")
    principal: str | None = Field(default=None, description="GSSAPI client principal")

    @model_validator(mode="after")
    def _credentials(self) -> ZooKeeperAuthConfig:
        if self.mechanism != "GSSAPI" and not (self.username and self.password_env):
            raise ValueError(f"zookeeper_auth mechanism {self.mechanism} needs username and password_env")
        return self


class MetadataConfig(_Strict):
    kind: Literal["metadata_log", "topics_describe", "admin", "zookeeper", "none"] = "metadata_log"
    source: str | None = Field(default=None, description="URL of __cluster_metadata-0 (or a snapshot/segment), a"
                               " kafka-topics --describe output file, or a `metadata dump-zk` file")
    storage_options: dict[str, Any] = Field(default_factory=dict)
    bootstrap_servers: str | None = None
    kafka_client: KafkaClientConfig | None = Field(default=None, description="kind admin: TLS/SASL settings of the"
                                                   " admin client (secrets by environment variable)")
    zookeeper_connect: str | None = Field(default=None, description="host:port[,host:port...][/chroot] of a live"
                                          " ZooKeeper (read-only)")
    zookeeper_timeout_ms: int = Field(default=15_000, ge=1, description="connect and request timeout")
    zookeeper_tls: ZooKeeperTlsConfig | None = None
    zookeeper_auth: ZooKeeperAuthConfig | None = None

    _durations = field_validator("zookeeper_timeout_ms", mode="before")(_duration)

    @field_validator("zookeeper_connect")
    @classmethod
    def _connect(cls, v: str | None) -> str | None:
        if v is not None and not ZOOKEEPER_CONNECT.fullmatch(v):
            raise ValueError(f"zookeeper_connect {v!r} is not host:port[,host:port...][/chroot]")
        return v

    @model_validator(mode="after")
    def _source_given(self) -> MetadataConfig:
        if self.kind in ("metadata_log", "topics_describe") and not self.source:
            raise ValueError(f"metadata.source is required when metadata.kind is {self.kind}")
        if self.kind == "admin" and not self.bootstrap_servers:
            raise ValueError("metadata.bootstrap_servers is required when metadata.kind is admin")
        if self.kafka_client is not None and self.kind != "admin":
            raise ValueError("metadata.kafka_client configures the admin client: it needs metadata.kind admin")
        if self.kind == "zookeeper" and bool(self.source) == bool(self.zookeeper_connect):
            raise ValueError("metadata.kind zookeeper needs exactly one of zookeeper_connect (a live ZooKeeper) or"
                             " source (a `metadata dump-zk` file)")
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
    stuck_topic_deletion_ms: int = Field(default=3_600_000, ge=0, description="ZooKeeper mode: a topic queued for"
                                         " deletion longer than this is reported stuck_topic_deletion")

    _durations = field_validator("file_delete_delay_ms", "delete_margin_ms", "grace_ms", "stuck_topic_deletion_ms",
                                 mode="before")(_duration)

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


#: ``--older-than`` can never go below this (a purge deletes for good).
PURGE_RETENTION_FLOOR_MS = 3_600_000


class ExecutorConfig(_Strict):
    quarantine_dir_name: str = Field(default=".logdir-gc-quarantine", description="created beside each log dir, on"
                                     " the same filesystem, never inside it; a plain directory name")
    state_dir: str | None = Field(default=None, description="journal and locks; default <quarantine>/../.logdir-gc")
    purge_retention_ms: int = Field(default=7 * 86_400_000)
    purge_retention_floor_ms: int = Field(default=PURGE_RETENTION_FLOOR_MS, description="no purge (not even with "
                                          "--older-than) deletes an item quarantined more recently; at least 1 h")
    purge_bytes_per_second: int | None = Field(default=None, ge=1)
    purge_files_per_second: int | None = Field(default=None, ge=1)
    prestart_time_budget_ms: int = Field(default=300_000)
    require_signatures: bool = Field(default=True, description="apply only plans with enough valid signed approvals"
                                     " (checked against allowed_signers); false: the warehouse audit decides, with a"
                                     " warning at every apply")
    allowed_signers: str | None = Field(default=None, description="OpenSSH allowed_signers file of the approvers'"
                                        " keys on this host; owned by root or the Kafka user, writable by no one else")
    revoked_keys: str | None = Field(default=None, description="OpenSSH revoked keys file (key list or KRL)")
    kafka_user: str | None = Field(default=None, description="user name or uid that may own the trust files besides"
                                   " root; default: the user the executor runs as")
    ssh_keygen: str = Field(default="/usr/bin/ssh-keygen", description="absolute path of the ssh-keygen that checks"
                            " signatures (never looked up through PATH); owned and writable like allowed_signers")

    _durations = field_validator("purge_retention_ms", "purge_retention_floor_ms", "prestart_time_budget_ms",
                                 mode="before")(_duration)

    @field_validator("quarantine_dir_name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if not v or v in (".", "..") or "/" in v or "\0" in v or v != v.strip():
            raise ValueError(f"{v!r} must be a plain directory name (created beside each log dir)")
        return v

    @field_validator("purge_retention_floor_ms")
    @classmethod
    def _purge_floor(cls, v: int) -> int:
        if v < PURGE_RETENTION_FLOOR_MS:
            raise ValueError(f"must be at least {PURGE_RETENTION_FLOOR_MS // 60000} minutes")
        return v

    @model_validator(mode="after")
    def _retention_above_floor(self) -> ExecutorConfig:
        if self.purge_retention_ms < self.purge_retention_floor_ms:
            raise ValueError("executor.purge_retention_ms is below executor.purge_retention_floor_ms")
        return self

    @field_validator("ssh_keygen")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not v.startswith("/") or "\0" in v:
            raise ValueError(f"{v!r} must be an absolute path (ssh-keygen is never looked up through PATH)")
        return v

    @field_validator("kafka_user", mode="before")
    @classmethod
    def _uid_as_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class SigningConfig(_Strict):
    service_key: str | None = Field(default=None, description="key file the plan job signs each proposal with, as"
                                    " the plan's author (a .pub file when the key is in ssh-agent)")
    allowed_signers: str | None = Field(default=None, description="the REVIEWERS' OpenSSH allowed_signers file: with"
                                        " executor.require_signatures, plans list/show, the state machine, the review"
                                        " notebook and the metrics count a decision only if its signature verifies"
                                        " under it; default executor.allowed_signers")
    revoked_keys: str | None = Field(default=None, description="the reviewers' revoked keys (key list or KRL); default"
                                     " executor.revoked_keys when allowed_signers is not set here")


class SparkConfig(_Strict):
    master: str | None = Field(default=None, description="None: the spark-submit session, else local[*]")
    conf: dict[str, str] = Field(default_factory=dict)


class AppConfig(_Strict):
    cluster: str = Field(min_length=1, description="a name for the cluster; plans and tables are keyed by it")
    warehouse: str = Field(description="root of the Delta tables: <warehouse>/<table name>")
    plans_dir: str | None = Field(default=None, description="where plan JSON/Markdown files go; default"
                                  " <warehouse>/_plans")
    warehouse_storage_options: dict[str, str] = Field(
        default_factory=dict, description="object-store options for warehouse and plans_dir (e.g. AWS_ENDPOINT_URL,"
        " AWS_REGION, AWS_PROFILE); they win over the standard AWS variables, which are enough on their own")
    brokers: tuple[BrokerConfig, ...] = ()
    brokers_from: BrokersFromConfig | None = Field(default=None, description="derive brokers from the controller"
                                                   " metadata's broker ids and URL templates (pipelines.config.fleet)")
    metadata: MetadataConfig = MetadataConfig(kind="none")
    detect: DetectConfig = DetectConfig()
    policy: PolicyConfig = PolicyConfig()
    executor: ExecutorConfig = ExecutorConfig()
    signing: SigningConfig = SigningConfig()
    spark: SparkConfig = SparkConfig()
    metrics: MetricsConfig = MetricsConfig()
    remote_tier: RemoteTierConfig | None = Field(default=None, description="a KIP-405 remote tier to list and"
                                                 " classify after detect (pipelines.config.remote_tier)")

    @model_validator(mode="after")
    def _unique_brokers(self) -> AppConfig:
        ids = [b.broker_id for b in self.brokers]
        if len(ids) != len(set(ids)):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"brokers: broker_id {', '.join(map(str, twice))} appears more than once (each broker_id "
                             "may appear only once)")
        if self.brokers_from is not None and self.metadata.kind == "none":
            raise ValueError("brokers_from needs a controller metadata source (metadata.kind) to read broker ids from")
        return self
