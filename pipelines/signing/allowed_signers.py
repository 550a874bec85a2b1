"""Reading OpenSSH's ``allowed_signers`` format, only to explain why ``ssh-keygen -Y verify`` refused a signature.

The decision is always ssh-keygen's. When it says no, the executor names the rule that failed (key not listed,
listed for other principals, namespace not permitted, outside ``valid-after``/``valid-before``) from this
reading of the same file, so the operator sees one precise line instead of "Could not verify signature".
Keys are compared as keys (:class:`~pipelines.signing.ssh_key.PublicKey`), not as base64 text; a ``cert-authority``
line lists the key of a certificate authority, which vouches for the keys it certifies.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pipelines.kafka.bounded_read import read_regular_file
from pipelines.signing.ssh_key import PublicKey, parse_key_blob

_KEY_TYPE = re.compile(r"(ssh-|ecdsa-|sk-|rsa-)[A-Za-z0-9@._-]+")
_TIME = re.compile(r"(\d{8})(\d{4}(\d{2})?)?(Z?)")


@dataclass(frozen=True, slots=True)
class SignerLine:
    """One line: who (principal patterns), with which options, for which key (base64 of the wire blob)."""

    line_no: int
    principals: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)
    key_base64: str = ""

    @property
    def cert_authority(self) -> bool:
        """The key is a certificate authority's: it vouches for certified keys, it does not sign itself."""
        return "cert-authority" in self.options

    def public_key(self) -> PublicKey | None:
        """The line's key, canonical; None when its base64 is not one key OpenSSH could read."""
        try:
            blob = parse_key_blob(base64.b64decode(self.key_base64, validate=True))
        except (binascii.Error, ValueError):
            return None
        return blob.key if blob.certificate is None else None

    def matches_principal(self, name: str) -> bool:
        return pattern_list_matches(self.principals, name)

    def permits_namespace(self, namespace: str) -> bool:
        allowed = self.options.get("namespaces")
        return allowed is None or pattern_list_matches(tuple(allowed.split(",")), namespace)

    def validity_problem(self, at: datetime) -> str | None:
        """Why the key is not valid at ``at`` according to this line, or None."""
        after, before = self.options.get("valid-after"), self.options.get("valid-before")
        if after is not None and (t := parse_openssh_time(after)) is not None and at < t:
            return f"the key is valid only after {after} (line {self.line_no})"
        if before is not None and (t := parse_openssh_time(before)) is not None and at > t:
            return f"the key expired: valid-before {before} (line {self.line_no})"
        return None


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.DOTALL)


def pattern_list_matches(patterns: tuple[str, ...], name: str) -> bool:
    """OpenSSH pattern-list semantics: ``*``/``?`` globs, a matching ``!pattern`` vetoes."""
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _glob(pattern[1:] if negated else pattern).fullmatch(name):
            if negated:
                return False
            matched = True
    return matched


def parse_openssh_time(text: str) -> datetime | None:
    """``YYYYMMDD[Z]`` or ``YYYYMMDDHHMM[SS][Z]``; without ``Z`` it is local time, as OpenSSH reads it."""
    m = _TIME.fullmatch(text)
    if not m:
        return None
    digits = m.group(1) + (m.group(2) or "")
    fmt = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}[len(digits)]
    try:
        naive = datetime.strptime(digits, fmt)
    except ValueError:
        return None
    return naive.replace(tzinfo=timezone.utc) if m.group(4) else naive.astimezone()


def split_fields(line: str) -> tuple[list[str], bool]:
    """Whitespace-separated fields (double quotes keep spaces inside a field), and whether a quote was left open."""
    fields: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch.isspace() and not quoted:
            if current:
                fields.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        fields.append("".join(current))
    return fields, quoted


def _options(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for option in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, _, value = option.partition("=")
        out[name.lower()] = value.strip('"') if value else ""
    return out


def read_signer_lines(path: Path) -> list[SignerLine]:
    """Every line that parses; comments, blanks and malformed lines are skipped (as ssh-keygen skips them)."""
    out: list[SignerLine] = []
    text = read_regular_file(str(path), kind="trust").decode("utf-8", errors="replace")  # bounded, never a FIFO
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields, _ = split_fields(line)
        if len(fields) < 3:
            continue
        principals, rest = tuple(fields[0].split(",")), fields[1:]
        options: dict[str, str] = {}
        if not _KEY_TYPE.fullmatch(rest[0]):
            options, rest = _options(rest[0]), rest[1:]
        if len(rest) >= 2 and _KEY_TYPE.fullmatch(rest[0]):
            out.append(SignerLine(no, principals, options, rest[1]))
    return out
