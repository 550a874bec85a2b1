"""``brokers_from``: a fleet's broker list derived from the controller metadata instead of written out.

Every broker id the controller metadata knows (registered brokers, and brokers named in any replica set) becomes
one broker whose log-dir URLs (and inventory URL) come from templates with a ``{broker_id}`` placeholder::

    brokers_from:
      log_dirs: ["sftp://kafka-{broker_id}.example/var/lib/kafka/data"]
      storage_options: {username: kafka-gc, key_filename: /etc/logdir-gc/id_ed25519}

Brokers listed under ``brokers`` keep their own entry (for the odd host); the template fills in the rest.
"""

from __future__ import annotations

import string
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PLACEHOLDER = "broker_id"


def _placeholders(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"template {template!r}: {exc}") from None


def _check_template(template: str) -> str:
    unknown = _placeholders(template) - {PLACEHOLDER}
    if unknown:
        raise ValueError(f"template {template!r}: only {{{PLACEHOLDER}}} can be replaced, not "
                         + ", ".join(f"{{{name}}}" for name in sorted(unknown)))
    return template


class BrokersFromConfig(BaseModel):
    """Templates for every broker the controller metadata knows (see module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    log_dirs: tuple[str, ...] = Field(min_length=1, description="log-dir URL templates with {broker_id}")
    inventory: str | None = Field(default=None, description="URL template of each broker's `logdir-gc inventory`"
                                  " file; the crawl reads it instead of listing")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options, the same for all")

    @field_validator("log_dirs")
    @classmethod
    def _log_dirs(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_template(t) for t in v)

    @field_validator("inventory")
    @classmethod
    def _inventory(cls, v: str | None) -> str | None:
        if v is not None and PLACEHOLDER not in _placeholders(_check_template(v)):
            raise ValueError(f"template {v!r} must contain {{{PLACEHOLDER}}}: each broker writes its own inventory")
        return v

    @model_validator(mode="after")
    def _one_url_per_broker(self) -> BrokersFromConfig:
        if self.inventory is None:
            shared = [t for t in self.log_dirs if PLACEHOLDER not in _placeholders(t)]
            if shared:
                raise ValueError(f"log-dir template {shared[0]!r} has no {{{PLACEHOLDER}}}: every broker would crawl"
                                 " the same URL (allowed only with an inventory template)")
        return self

    def broker(self, broker_id: int) -> dict[str, Any]:
        """The ``brokers[]`` entry of one broker id."""
        return {
            "broker_id": broker_id,
            "log_dirs": [t.format(broker_id=broker_id) for t in self.log_dirs],
            "storage_options": dict(self.storage_options),
            "inventory": self.inventory.format(broker_id=broker_id) if self.inventory else None,
        }

