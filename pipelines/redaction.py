"""Secrets kept out of everything the tool records or prints: config values at any depth, passwords in URLs.

A config carries credentials in three shapes: a value under a credential's name at any depth of a mapping
(``storage_options: {client_kwargs: {aws_secret_access_key: ...}}``, lists included), the password of a URL
(``sftp://user:pw@host/path``, any scheme), and a credential in a URL's query (``?sig=...``). :func:`redact_config`
masks all three in a copy of a config value (``crawl_runs.config_json``); :func:`redact_text` masks URL passwords
and query credentials in free text, plus any known secret value (an error message that quotes an option);
:func:`secret_values` lists the secret values of a config value for it.

Names are matched loosely on purpose (a harmless value masked is better than a credential shown): anything with
``secret``, ``token``, ``passw``, ``passphrase``, ``pwd``, ``credential``, ``private``, ``signature``,
``authorization``, ``sas``, ``account_key``, ``access_key`` or ``apikey`` in it, and ``key`` itself or any
name ending in ``_key`` / ``_key_id`` / ``.key`` (``key``, ``api_key``, ``aws_access_key_id``). Names of key
*files* (``key_filename``, ``client_keys``, ``known_hosts``) are paths, not secrets, and stay visible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["MASK", "is_secret_name", "redact_config", "redact_text", "secret_values"]

MASK = "***"

_SECRET_NAME = re.compile(
    r"secret|token|passw|passphrase|pwd|credential|private|signature|authorization|sas|account_?key|access_?key"
    r"|apikey|(?:^|[^a-z])key(?:_?id)?$", re.IGNORECASE)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:]*):(?P<password>[^\s/?#@]*)@")
_QUERY = re.compile(r"(?P<head>[?&;](?P<name>[^=&;#\s]+)=)(?P<value>[^&;#\s]*)")


def is_secret_name(name: str) -> bool:
    """True for an option name whose value is a credential (at any depth of a config)."""
    return bool(_SECRET_NAME.search(name))


def _url_passwords(text: str) -> Iterable[str]:
    for m in _USERINFO.finditer(text):
        if m["password"]:
            yield m["password"]
            yield unquote(m["password"])
    for m in _QUERY.finditer(text):
        if is_secret_name(m["name"]) and m["value"]:
            yield m["value"]
            yield unquote(m["value"])


def secret_values(value: Any, *, under_secret: bool = False) -> set[str]:
    """Every secret string in ``value``: values under a credential's name (at any depth), URL passwords and query
    credentials in any string."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for k, v in value.items():
            found |= secret_values(v, under_secret=under_secret or is_secret_name(str(k)))
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            found |= secret_values(v, under_secret=under_secret)
    elif isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if under_secret and text:
            found.add(text)
        found.update(p for p in _url_passwords(text) if p)
    elif under_secret and value is not None and not isinstance(value, bool):
        found.add(str(value))
    return found


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL passwords, query credentials and every value of ``secrets`` (4+ characters) masked."""
    text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    text = _QUERY.sub(lambda m: m["head"] + (MASK if is_secret_name(m["name"]) and m["value"] else m["value"]),
                      text)
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_config(value: Any) -> Any:
    """A copy of ``value`` (mappings, lists, strings) with every credential masked: values under a credential's
    name at any depth become ``***`` (a nested mapping or list under one included), URL passwords and query
    credentials in strings are masked."""
    if isinstance(value, Mapping):
        return {k: (MASK if is_secret_name(str(k)) and v is not None and v != "" else redact_config(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_config(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
