"""The one canonical statement a proposal, approval or rejection signs.

A statement is a few ``key=value`` lines in a fixed order under a fixed header, UTF-8, ending in a newline. It is
signed as bytes under the SSHSIG namespace :data:`NAMESPACE`, so a signature made for git, for a file, or for any
other tool can never be presented as an approval here (and the other way round). What the executor acts on is
bound through ``content_hash``: the sha256 over every plan item with its preconditions, which the executor
recomputes from the plan it reads. Nothing outside the statement counts.

Parsing is strict: the text must be exactly what :meth:`Statement.render` writes for the parsed fields, so two
different byte strings never mean the same statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

#: SSHSIG namespace of every signature this tool makes or accepts (``ssh-keygen -Y sign -n``).
NAMESPACE = "kafka-logdir-gc-plan@v1"
HEADER = "kafka-logdir-gc signed plan statement v1"
ACTIONS = ("propose", "approve", "reject")
#: Field order of the canonical text.
FIELDS = ("action", "cluster", "cluster_id", "plan_id", "content_hash", "brokers", "expires_at", "signer",
          "signed_at")

_TIME = "%Y-%m-%dT%H:%M:%SZ"
#: A principal as it appears in allowed_signers: no comma, space, quote or pattern character.
PRINCIPAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
_ID = re.compile(r"[\x21-\x7e]{1,256}")  # printable ASCII, no space: plan ids, cluster ids
_NAME = re.compile(r"[\x21-\x7e]([\x20-\x7e]{0,254}[\x21-\x7e])?")  # a cluster name may contain inner spaces
_HASH = re.compile(r"sha256:[0-9a-f]{64}")


class StatementError(ValueError):
    """Text that is not a canonical statement, or a field that cannot be signed."""


def format_time(at: datetime) -> str:
    """UTC, whole seconds (``2024-06-01T12:00:00Z``)."""
    if at.tzinfo is None:
        raise StatementError("statement times must be timezone-aware")
    return at.astimezone(timezone.utc).strftime(_TIME)


def _parse_time(key: str, text: str) -> datetime:
    try:
        return datetime.strptime(text, _TIME).replace(tzinfo=timezone.utc)
    except ValueError:
        raise StatementError(f"{key}: {text!r} is not a UTC time like 2024-06-01T12:00:00Z") from None


@dataclass(frozen=True, slots=True)
class Statement:
    """What one person (or service) signs about one plan."""

    action: str
    cluster: str
    cluster_id: str
    plan_id: str
    content_hash: str
    brokers: tuple[int, ...]
    expires_at: datetime
    signer: str
    signed_at: datetime

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise StatementError(f"action {self.action!r} is not one of {', '.join(ACTIONS)}")
        if not _NAME.fullmatch(self.cluster):
            raise StatementError(f"cluster {self.cluster!r} must be 1-256 printable ASCII characters")
        for key in ("cluster_id", "plan_id"):
            if not _ID.fullmatch(getattr(self, key)):
                raise StatementError(f"{key} {getattr(self, key)!r} must be 1-256 printable characters, no spaces")
        if not _HASH.fullmatch(self.content_hash):
            raise StatementError(f"content_hash {self.content_hash!r} is not sha256:<64 hex digits>")
        if not PRINCIPAL.fullmatch(self.signer):
            raise StatementError(f"signer {self.signer!r} is not a principal name (letters, digits, . _ @ + -)")
        if not self.brokers or list(self.brokers) != sorted(set(self.brokers)) or min(self.brokers) < 0:
            raise StatementError(f"brokers {self.brokers!r} must be distinct non-negative ids in ascending order")
        for key in ("expires_at", "signed_at"):
            at = getattr(self, key)
            if at.tzinfo is None or at.microsecond:
                raise StatementError(f"{key} must be a timezone-aware time in whole seconds")

    def render(self) -> str:
        """The canonical text (what is signed)."""
        values = {
            "action": self.action, "cluster": self.cluster, "cluster_id": self.cluster_id, "plan_id": self.plan_id,
            "content_hash": self.content_hash, "brokers": ",".join(str(b) for b in self.brokers),
            "expires_at": format_time(self.expires_at), "signer": self.signer,
            "signed_at": format_time(self.signed_at),
        }
        return HEADER + "\n" + "".join(f"{k}={values[k]}\n" for k in FIELDS)

    def to_bytes(self) -> bytes:
        return self.render().encode("ascii")

    def to_dict(self) -> dict[str, object]:
        return {"action": self.action, "cluster": self.cluster, "cluster_id": self.cluster_id,
                "plan_id": self.plan_id, "content_hash": self.content_hash, "brokers": list(self.brokers),
                "expires_at": format_time(self.expires_at), "signer": self.signer,
                "signed_at": format_time(self.signed_at)}

    @classmethod
    def parse(cls, text: str) -> Statement:
        """The statement ``text`` is the canonical rendering of. Raises StatementError otherwise."""
        lines = text.split("\n")
        if len(lines) != len(FIELDS) + 2 or lines[0] != HEADER or lines[-1] != "":
            raise StatementError(f"not a canonical statement: expected the header and {len(FIELDS)} fields")
        values: dict[str, str] = {}
        for key, line in zip(FIELDS, lines[1:-1], strict=True):
            name, sep, value = line.partition("=")
            if name != key or not sep:
                raise StatementError(f"not a canonical statement: expected field {key!r}, found {line[:40]!r}")
            values[key] = value
        try:
            brokers = tuple(int(b) for b in values["brokers"].split(","))
        except ValueError:
            raise StatementError(f"brokers: {values['brokers']!r} is not a comma-separated list of ids") from None
        statement = cls(
            action=values["action"], cluster=values["cluster"], cluster_id=values["cluster_id"],
            plan_id=values["plan_id"], content_hash=values["content_hash"], brokers=brokers,
            expires_at=_parse_time("expires_at", values["expires_at"]), signer=values["signer"],
            signed_at=_parse_time("signed_at", values["signed_at"]),
        )
        if statement.render() != text:
            raise StatementError("not a canonical statement: the text differs from its canonical rendering")
        return statement
