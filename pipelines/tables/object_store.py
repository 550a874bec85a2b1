"""How each engine reaches a warehouse in an object store: one set of settings, three spellings.

A warehouse URL such as ``s3://bucket/prefix`` is opened by delta-spark (through Hadoop's s3a connector), by
delta-rs (``storage_options``) and by fsspec/s3fs (plan files, inventories, metadata-log copies). Users set the
standard AWS variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, or ``AWS_PROFILE`` with the shared config/credentials files) and, when
needed, the config's ``warehouse_storage_options``, which win over the environment. :func:`warehouse_storage`
turns them into what each engine expects:

* delta-rs: ``AWS_*`` storage options (``AWS_ALLOW_HTTP`` for an ``http://`` endpoint, bounded client retries);
* Hadoop s3a: ``fs.s3a.*`` settings (endpoint, region, path-style addressing for a custom endpoint, bounded
  retries, which credential provider to use). Secrets go to s3a only when they were given in
  ``warehouse_storage_options``, and then only into the running session's Hadoop configuration (never into
  SparkConf, which the Spark UI and event logs show); credentials from the environment are read by s3a's own
  environment provider, a profile by its profile provider;
* s3fs: ``key``/``secret``/``token``/``profile`` and ``client_kwargs`` (endpoint, region).

Other schemes (``abfss://``, ``gs://``) follow the same pattern: ``warehouse_storage_options`` go to delta-rs and
fsspec as given (their own key names), and Spark reads its ``spark.conf`` entries (``spark.hadoop.fs.azure...``).
Every secret value is collected in :attr:`WarehouseStorage.secrets` so errors can be redacted before anyone
prints them.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

__all__ = ["S3_SCHEMES", "WarehouseStorage", "redact", "warehouse_storage"]

S3_SCHEMES = frozenset({"s3", "s3a"})

#: Accepted spellings (lower-case) → the canonical option name.
_ALIASES: dict[str, str] = {
    "aws_endpoint_url": "AWS_ENDPOINT_URL", "aws_endpoint": "AWS_ENDPOINT_URL", "endpoint_url": "AWS_ENDPOINT_URL",
    "endpoint": "AWS_ENDPOINT_URL",
    "aws_access_key_id": "AWS_ACCESS_KEY_ID", "access_key_id": "AWS_ACCESS_KEY_ID",
    "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY", "secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "aws_session_token": "AWS_SESSION_TOKEN", "session_token": "AWS_SESSION_TOKEN", "aws_token": "AWS_SESSION_TOKEN",
    "aws_region": "AWS_REGION", "region": "AWS_REGION", "aws_default_region": "AWS_REGION",
    "aws_profile": "AWS_PROFILE", "profile": "AWS_PROFILE",
    "aws_allow_http": "AWS_ALLOW_HTTP", "allow_http": "AWS_ALLOW_HTTP",
    "aws_virtual_hosted_style_request": "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
    "virtual_hosted_style_request": "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
}
_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
_SECRET_KEY = re.compile(r"secret|token|password|passphrase|account_key|sas|credential|private", re.IGNORECASE)

#: Bounded client-side retries: an unreachable or throttling store fails within seconds, then the table layer
#: retries the whole operation a few times with backoff (``pipelines.tables.storage_retry``).
_DELTA_RS_DEFAULTS = {"max_retries": "3", "retry_timeout": "20s", "connect_timeout": "5s", "timeout": "60s"}
_S3A_DEFAULTS = {
    "fs.s3a.attempts.maximum": "3",
    "fs.s3a.retry.limit": "3",
    "fs.s3a.retry.interval": "500ms",
    "fs.s3a.retry.throttle.limit": "5",
    "fs.s3a.retry.throttle.interval": "500ms",
    "fs.s3a.connection.establish.timeout": "15s",  # s3a's floor
    "fs.s3a.connection.timeout": "60s",
    # s3:// and s3a:// name the same tables in both engines (delta-rs only knows s3://).
    "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
}


@dataclass(frozen=True)
class WarehouseStorage:
    """Engine settings for one warehouse URL. ``repr`` never shows a secret."""

    url: str
    scheme: str
    delta_rs: Mapping[str, str] = field(default_factory=dict, repr=False)
    fsspec: Mapping[str, Any] = field(default_factory=dict, repr=False)
    hadoop: Mapping[str, str] = field(default_factory=dict, repr=False)
    hadoop_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def is_object_store(self) -> bool:
        return self.scheme not in ("", "file")

    @property
    def endpoint(self) -> str | None:
        return self.delta_rs.get("AWS_ENDPOINT_URL")

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def configure_spark(self, spark: Any) -> None:
        """Set the s3a settings (and secrets given in the config) on a running session's Hadoop configuration.

        Runtime settings, so this also works under spark-submit where the session already exists; the Hadoop
        configuration travels with each job to the executors.

        Raises:
            ConfigError: an S3 warehouse and a session that would commit through Delta's single-driver S3 log store
                nobody chose (``commit_log_store.check_log_store``).
        """
        from pipelines.tables.commit_log_store import check_log_store

        check_log_store(dict(spark.sparkContext.getConf().getAll()), self.scheme, self.url)
        if not self.hadoop and not self.hadoop_secrets:
            return
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in {**self.hadoop, **self.hadoop_secrets}.items():
            conf.set(key, value)


def redact(text: str, secrets: tuple[str, ...] | list[str]) -> str:
    """``text`` with every secret value replaced by ``***``."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def is_secret_option(key: str) -> bool:
    """True for option names that hold a credential (their values are redacted everywhere)."""
    return key.upper() in _CREDENTIALS[1:] or bool(_SECRET_KEY.search(key))


def _canonical(options: Mapping[str, Any]) -> dict[str, str]:
    return {_ALIASES.get(k.lower(), k): str(v) for k, v in options.items() if v is not None}


def _profile_settings(profile: str, env: Mapping[str, str]) -> dict[str, str]:
    """Region, endpoint and static keys of ``profile`` from the shared AWS config and credentials files."""
    home = Path(env.get("HOME") or Path.home())
    config_file = Path(env.get("AWS_CONFIG_FILE") or home / ".aws" / "config")
    credentials_file = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials")
    out: dict[str, str] = {}
    for path, section in ((config_file, profile if profile == "default" else f"profile {profile}"),
                          (credentials_file, profile)):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        if parser.has_section(section):
            for key, value in parser.items(section):
                canonical = _ALIASES.get(key.lower())
                if canonical and value:
                    out.setdefault(canonical, value)
    return out


def _from_environment(env: Mapping[str, str]) -> dict[str, str]:
    keys = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE")  # later names win
    found = {k: env[k] for k in keys if env.get(k)}
    if "AWS_ENDPOINT_URL_S3" in found:  # the S3-specific variable wins over the general one
        found["AWS_ENDPOINT_URL"] = found.pop("AWS_ENDPOINT_URL_S3")
    return _canonical(found)


def warehouse_storage(url: str, overrides: Mapping[str, Any] | None = None,
                      env: Mapping[str, str] | None = None) -> WarehouseStorage:
    """The settings each engine needs to open ``url`` (the environment, then ``overrides`` on top).

    A local path gets empty settings. For ``s3://``: explicit keys in ``overrides`` win; otherwise
    ``AWS_PROFILE`` (from ``overrides`` or the environment) names a profile whose region, endpoint and keys are
    read from the shared files; otherwise the environment's keys are used.
    """
    env = os.environ if env is None else env
    scheme = urlparse(url).scheme.lower()
    if len(scheme) <= 1:  # a path (or a Windows drive letter)
        return WarehouseStorage(url, "")
    given = _canonical(overrides or {})
    secrets = tuple(v for k, v in given.items() if is_secret_option(k))
    if scheme not in S3_SCHEMES:
        return WarehouseStorage(url, scheme, delta_rs=given, fsspec=dict(given), secrets=secrets)

    environment = _from_environment(env)
    profile = given.get("AWS_PROFILE") or environment.get("AWS_PROFILE")
    from_profile = _profile_settings(profile, env) if profile else {}
    merged = {**from_profile, **environment, **given}  # the SDKs' order: explicit, then environment, then profile
    # credentials come as a set from one place, never a key id from one and a secret from another
    sources = [given, from_profile, environment] if "AWS_PROFILE" in given else [given, environment, from_profile]
    source = next((s for s in sources if s.get("AWS_ACCESS_KEY_ID")), {})
    for key in _CREDENTIALS:
        merged.pop(key, None)
        if key in source:
            merged[key] = source[key]
    secrets = tuple(merged[k] for k in _CREDENTIALS[1:] if merged.get(k)) + secrets
    profile_keys = profile if source is from_profile and from_profile else None
    return WarehouseStorage(
        url, scheme,
        delta_rs=_delta_rs_options(merged),
        fsspec=_s3fs_options(merged),
        hadoop=_s3a_settings(merged, profile_keys, from_config=given),
        hadoop_secrets=_s3a_secrets(given),
        secrets=secrets,
    )


def _delta_rs_options(merged: Mapping[str, str]) -> dict[str, str]:
    options = {**_DELTA_RS_DEFAULTS, **{k: v for k, v in merged.items() if not k.startswith("fs.")}}
    endpoint = merged.get("AWS_ENDPOINT_URL")
    if endpoint and endpoint.lower().startswith("http://"):
        options.setdefault("AWS_ALLOW_HTTP", "true")
    return options


def _s3fs_options(merged: Mapping[str, str]) -> dict[str, Any]:
    client: dict[str, Any] = {}
    if merged.get("AWS_ENDPOINT_URL"):
        client["endpoint_url"] = merged["AWS_ENDPOINT_URL"]
    if merged.get("AWS_REGION"):
        client["region_name"] = merged["AWS_REGION"]
    options: dict[str, Any] = {"client_kwargs": client, "config_kwargs": {
        "connect_timeout": 5, "read_timeout": 60, "retries": {"max_attempts": 3, "mode": "standard"}}}
    for ours, theirs in (("AWS_ACCESS_KEY_ID", "key"), ("AWS_SECRET_ACCESS_KEY", "secret"),
                         ("AWS_SESSION_TOKEN", "token")):
        if merged.get(ours):
            options[theirs] = merged[ours]
    if merged.get("AWS_PROFILE") and "key" not in options:
        options["profile"] = merged["AWS_PROFILE"]
    return options


def _s3a_settings(merged: Mapping[str, str], profile: str | None, *, from_config: Mapping[str, str]
                  ) -> dict[str, str]:
    """``profile``: the profile the credentials come from (s3a's profile provider reads them itself)."""
    settings = dict(_S3A_DEFAULTS)
    endpoint = merged.get("AWS_ENDPOINT_URL")
    if endpoint:
        settings["fs.s3a.endpoint"] = endpoint
        settings["fs.s3a.connection.ssl.enabled"] = str(not endpoint.lower().startswith("http://")).lower()
    virtual_hosted = merged.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() == "true"
    settings["fs.s3a.path.style.access"] = str(bool(endpoint) and not virtual_hosted).lower()
    if merged.get("AWS_REGION"):
        settings["fs.s3a.endpoint.region"] = merged["AWS_REGION"]
    if any(k in from_config for k in _CREDENTIALS[:2]):
        provider = ("org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider" if "AWS_SESSION_TOKEN" in from_config
                    else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        settings["fs.s3a.aws.credentials.provider"] = provider
    elif profile:
        settings["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.auth.ProfileAWSCredentialsProvider"
        settings["fs.s3a.auth.profile.name"] = profile
    for key, value in from_config.items():  # Hadoop keys in warehouse_storage_options go to s3a as they are
        if key.startswith("fs.") and not is_secret_option(key):
            settings[key] = value
    return settings


def _s3a_secrets(given: Mapping[str, str]) -> dict[str, str]:
    """Keys s3a cannot find by itself: those written in the config (a profile's are read by its provider)."""
    names = {"AWS_ACCESS_KEY_ID": "fs.s3a.access.key", "AWS_SECRET_ACCESS_KEY": "fs.s3a.secret.key",
             "AWS_SESSION_TOKEN": "fs.s3a.session.token"}
    out = {names[k]: v for k, v in given.items() if k in names}
    out.update({k: v for k, v in given.items() if k.startswith("fs.s3a.") and is_secret_option(k)})
    return out
