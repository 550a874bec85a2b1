"""What the remote executor may touch, from ITS OWN config (never from the plan): the tier, the owned prefix and the
quarantine folder.

Built from the host's ``remote_tier:`` section (:func:`target_from_config`) or from plain arguments. Every key is
relative to ``location``; the quarantine folder must lie in the same store (a server-side copy moves objects there)
and must neither contain nor lie inside ``owned_prefix`` (a quarantined copy could otherwise be planned and deleted
as an original, or an original be taken for a quarantined copy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError
from pipelines.plan.remote_items import key_problem

__all__ = ["RemoteTarget", "target_from_config"]

QUARANTINE_FOLDER = ".logdir-gc-quarantine/"


def _folder(value: str, what: str) -> str:
    parts = value.rstrip("/").split("/")
    if not value.strip("/") or value.startswith("/") or "\0" in value or "://" in value \
            or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"remote_tier.{what} {value!r} is not a clean folder relative to remote_tier.location")
    return value.rstrip("/") + "/"


@dataclass(frozen=True)
class RemoteTarget:
    """The tier as this host's config describes it."""

    location: str
    layout: str
    owned_prefix: str
    quarantine_folder: str = QUARANTINE_FOLDER
    prefix: str = ""
    storage_options: dict[str, Any] = field(default_factory=dict)
    metadata_source: str | None = None
    metadata_storage_options: dict[str, Any] = field(default_factory=dict)
    metadata_live: Any = None
    """``remote_tier.metadata`` when it names ``bootstrap_servers``: the executor re-reads the live topic."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "owned_prefix", _folder(self.owned_prefix, "owned_prefix"))
        object.__setattr__(self, "quarantine_folder", _folder(self.quarantine_folder, "quarantine_prefix"))
        q, o = self.quarantine_folder, self.owned_prefix
        if q.startswith(o) or o.startswith(q):
            raise ConfigError(f"remote_tier.quarantine_prefix {q!r} and owned_prefix {o!r} overlap: a quarantined "
                              "copy could be taken for an original")

    def key_problem(self, key: str) -> str | None:
        """Why ``key`` may not be touched as an original (outside the owned prefix, unclean, quarantined)."""
        return key_problem(key, self.owned_prefix, self.quarantine_folder)

    def quarantine_key(self, plan_id: str, key: str) -> str:
        """``<quarantine folder>/<plan_id>/<key>``; the plan id must be one clean component."""
        if not plan_id or "/" in plan_id or plan_id in (".", "..") or "\0" in plan_id:
            raise ConfigError(f"plan id {plan_id!r} cannot name a quarantine folder")
        return f"{self.quarantine_folder}{plan_id}/{key}"


def target_from_config(app: AppConfig) -> RemoteTarget:
    """The host's ``remote_tier:`` as a :class:`RemoteTarget`. Raises ConfigError when it is missing or has no
    ``owned_prefix`` (the remote executor never acts without one)."""
    tier = getattr(app, "remote_tier", None)
    if tier is None:
        raise ConfigError("the config has no remote_tier section: the remote executor needs its location, layout "
                          "and owned_prefix")
    if not getattr(tier, "owned_prefix", None):
        raise ConfigError("[owned_prefix] remote_tier.owned_prefix is not set: the remote executor touches nothing "
                          "without it (two clusters may share a bucket)")
    location = str(tier.location).rstrip("/")
    quarantine = str(getattr(tier, "quarantine_prefix", "") or "")
    if "://" in quarantine or quarantine.startswith("/"):
        if not quarantine.startswith(location + "/"):
            raise ConfigError(f"remote_tier.quarantine_prefix {quarantine!r} is not inside remote_tier.location "
                              f"{location!r}")
        quarantine = quarantine[len(location) + 1:]
    metadata = getattr(tier, "metadata", None)
    return RemoteTarget(location=location, layout=str(tier.layout), owned_prefix=str(tier.owned_prefix),
                        quarantine_folder=quarantine or QUARANTINE_FOLDER, prefix=str(getattr(tier, "prefix", "")),
                        storage_options=dict(getattr(tier, "storage_options", {}) or {}),
                        metadata_source=getattr(metadata, "source", None),
                        metadata_storage_options=dict(getattr(metadata, "storage_options", {}) or {}),
                        metadata_live=metadata if getattr(metadata, "bootstrap_servers", None) else None)
