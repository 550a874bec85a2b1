"""The content of the host's trust files, checked before any signature is: a damaged file fails closed.

``ssh-keygen -Y verify`` skips an ``allowed_signers`` or ``revoked_keys`` line it cannot parse, and it skips a line
that starts with a NUL byte. A ``revoked_keys`` file zero-filled by a crash therefore revokes nothing, and a key
line garbled on disk silently stops being revoked. So the executor reads both files first and refuses
(``[allowed_signers_invalid]`` / ``[revoked_keys_invalid]``) unless every line that is not blank or a ``#`` comment
is one ssh-keygen reads:

- ``allowed_signers``: ``principals [options] keytype base64 [comment]``, the options only ``cert-authority``,
  ``namespaces="..."``, ``valid-after="..."``, ``valid-before="..."`` (times as ssh-keygen(1) writes them);
- ``revoked_keys`` as a key list: ``keytype base64 [comment]``; as a KRL (it starts with ``SSHKRL\\n\\0``): a KRL
  that ``ssh-keygen -Q -l`` reads to its end.

No NUL byte, UTF-8 text. Each key's base64 must decode to a blob of its own type, and ssh-keygen itself (``-l``)
must read every key. An empty file is accepted: it is what ``touch`` makes, and an empty ``allowed_signers``
trusts nobody.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

from pipelines.kafka.listing import read_regular_file
from pipelines.plan.policy import refuse
from pipelines.signing.allowed_signers import parse_openssh_time, split_fields
from pipelines.signing.openssh import last_line, run

KRL_MAGIC = b"SSHKRL\n\0"
_KEY_TYPE = re.compile(r"(ssh-|ecdsa-|sk-|rsa-)[A-Za-z0-9@._-]+")
_FLAG_OPTIONS = frozenset({"cert-authority"})
_VALUE_OPTIONS = frozenset({"namespaces", "valid-after", "valid-before"})
_FINGERPRINT_LINE = re.compile(r" L(\d+) \([^()]*\)$")


class _Bad(ValueError):
    """One line that ssh-keygen would not read."""


def _text(path: Path, data: bytes, rule: str) -> str:
    nul = data.find(b"\0")
    if nul >= 0:
        raise refuse(rule, f"{path} holds NUL bytes (from byte {nul}): a damaged "
                           "file (zero-filled by a crash?); restore it from the source of truth")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(rule, f"{path} is not UTF-8 text (byte {exc.start}): a damaged file") from None


def _fields(line: str) -> list[str]:
    """``allowed_signers.split_fields``; an unclosed double quote is an error."""
    fields, unclosed = split_fields(line)
    if unclosed:
        raise _Bad("an unclosed double quote")
    return fields


def _key(key_type: str, b64: str) -> str:
    """``keytype base64`` after checking that the base64 decodes to a key blob of that type."""
    if not _KEY_TYPE.fullmatch(key_type):
        raise _Bad(f"{key_type[:40]!r} is not an SSH key type")
    try:
        blob = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(f"the {key_type} key is not valid base64") from None
    if len(blob) < 4 or blob[4:4 + struct.unpack(">I", blob[:4])[0]] != key_type.encode():
        raise _Bad(f"the base64 key is not a {key_type} key")
    return f"{key_type} {b64}"


def _options(text: str) -> None:
    for option in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, eq, value = option.partition("=")
        name = name.lower()
        if name in _FLAG_OPTIONS and not eq:
            continue
        if name not in _VALUE_OPTIONS or not eq:
            raise _Bad(f"unknown option {option[:40]!r}")
        value = value.strip('"')
        if name != "namespaces" and parse_openssh_time(value) is None:
            raise _Bad(f"{name} {value[:40]!r} is not a time ssh-keygen reads")


def _signer_key(line: str) -> str:
    fields = _fields(line)
    if len(fields) < 3:
        raise _Bad("expected: principals [options] keytype base64-key")
    rest = fields[1:]
    if not _KEY_TYPE.fullmatch(rest[0]):
        _options(rest[0])
        rest = rest[1:]
    if len(rest) < 2:
        raise _Bad("no key after the options")
    return _key(rest[0], rest[1])


def _listed_key(line: str) -> str:
    fields = line.split()
    if len(fields) < 2:
        raise _Bad("expected: keytype base64-key [comment]")
    return _key(fields[0], fields[1])


def _check_lines(path: Path, text: str, rule: str, ssh_keygen: str, parse: Callable[[str], str]) -> None:
    keys: dict[int, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            keys[no] = parse(line)
        except _Bad as exc:
            raise refuse(rule, f"{path} line {no}: {exc}; ssh-keygen would skip it") from None
    if keys:
        _keygen_reads_every_key(path, keys, rule, ssh_keygen)


def _keygen_reads_every_key(path: Path, keys: dict[int, str], rule: str, ssh_keygen: str) -> None:
    """``ssh-keygen -l`` over the keys, each tagged with its line number: a line it does not list is refused."""
    with tempfile.TemporaryDirectory(prefix="logdir-gc-trust-") as tmp:
        listing = Path(tmp) / "keys"
        listing.write_text("".join(f"{key} L{no}\n" for no, key in keys.items()), encoding="ascii")
        done = run(ssh_keygen, ["-l", "-f", str(listing)])
    read = {int(m.group(1)) for ln in done.stdout.decode("utf-8", "replace").splitlines()
            if (m := _FINGERPRINT_LINE.search(ln.strip()))}
    missing = sorted(set(keys) - read)
    if missing:
        raise refuse(rule, f"{path} line {missing[0]}: ssh-keygen cannot read the key "
                           f"({last_line(done.stderr)}); it would skip the line")


def check_allowed_signers(path: Path, ssh_keygen: str) -> None:
    """PolicyViolation ``[allowed_signers_invalid]`` unless every line of ``path`` is one ssh-keygen reads."""
    rule = "allowed_signers_invalid"
    data = read_regular_file(str(path), kind="trust")  # above the trust-file limit: FileTooLarge, unread
    _check_lines(path, _text(path, data, rule), rule, ssh_keygen, _signer_key)


def check_revoked_keys(path: Path, ssh_keygen: str) -> None:
    """PolicyViolation ``[revoked_keys_invalid]`` unless ``path`` is a KRL or a key list ssh-keygen reads whole."""
    rule = "revoked_keys_invalid"
    data = read_regular_file(str(path), kind="trust")
    if data.startswith(KRL_MAGIC):
        done = run(ssh_keygen, ["-Q", "-l", "-f", str(path)])
        if done.returncode != 0:
            raise refuse(rule, f"{path} is a damaged KRL: {last_line(done.stderr)}")
        return
    _check_lines(path, _text(path, data, rule), rule, ssh_keygen, _listed_key)
