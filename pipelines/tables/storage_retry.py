"""Transient object-store failures: bounded retries with backoff, then one clear error.

Each engine's client already retries a request a few times (bounded in ``object_store``); this layer re-runs a
whole table operation when the store stayed unreachable or throttling (connection refused or reset, timeouts,
HTTP 500/503, ``SlowDown``), a few times with exponential backoff, then raises
:class:`~pipelines.errors.StorageUnavailable`: one line naming the store and the last reason, secrets redacted.
Anything else (a missing table, a commit conflict, a wrong engine) passes through untouched.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from typing import TypeVar

from pipelines.errors import StorageUnavailable
from pipelines.tables.backoff import RetryPolicy

__all__ = ["STORAGE_RETRY", "is_transient", "one_line", "retry_transient"]

T = TypeVar("T")

#: Whole-operation retries after the client's own ones: about 1 + 2 + 4 s of backoff at most.
STORAGE_RETRY = RetryPolicy(attempts=4, base_delay_s=1.0, max_delay_s=4.0)

_TRANSIENT = re.compile(
    r"error sending request|connection refused|connection reset|timed out|broken pipe|unable to execute http request|"
    r"failed to connect|service ?unavailable|slow ?down|throttl|too many requests|\b429\b|\b503\b|\b500 internal|"
    r"internalerror|AWSClientIOException|SdkClientException|NoHttpResponseException|UnknownHostException|"
    r"ConnectException|TimeoutException",
    re.IGNORECASE,
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not see: the store unreachable, slow or throttling."""
    if isinstance(exc, FileNotFoundError | PermissionError | StorageUnavailable):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return bool(_TRANSIENT.search(_text_of(exc)))


def _store_refusal(exc: BaseException) -> bool:
    """True for the object-store client's own error (delta-rs raises a bare ``OSError`` without errno), as opposed
    to a local file error (an ``OSError`` subclass, or one with an errno) or any other exception."""
    return type(exc) is OSError and exc.errno is None


def _text_of(exc: BaseException) -> str:
    text = str(exc)
    java = getattr(exc, "java_exception", None)  # Py4JJavaError: the Java side holds the useful message
    if java is not None:
        with contextlib.suppress(Exception):  # the gateway itself may be gone
            text = f"{java.getClass().getName()}: {java.getMessage()} {text[:2000]}"
    return text


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The error's message as one short line (delta-rs nests causes over several lines with arrows)."""
    text = _ANSI.sub("", _text_of(exc))
    parts = [p.strip(" ↳\t") for p in text.splitlines()]
    joined = " ".join(p for p in parts if p and not p.startswith("at "))
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def retry_transient(operation: Callable[[], T], *, where: str, redact: Callable[[str], str] = lambda s: s,
                    policy: RetryPolicy = STORAGE_RETRY, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``operation``; re-run it after a transient store failure, ``policy.attempts`` times in all.

    Raises:
        StorageUnavailable: still failing after the last attempt (``where`` names the store).
        Any non-transient error at once.
    """
    started = time.monotonic()
    for attempt in range(policy.attempts):
        try:
            return operation()
        except Exception as exc:
            if not is_transient(exc):
                if _store_refusal(exc):  # e.g. no credentials: no retry can help, and a traceback hides why
                    raise StorageUnavailable(redact(f"the object store at {where} failed the request (not "
                                                    f"retried): {one_line(exc)}")) from None
                raise
            if attempt + 1 == policy.attempts:
                raise StorageUnavailable(redact(
                    f"object store unreachable or throttling at {where} after {policy.attempts} attempts over "
                    f"{time.monotonic() - started:.1f}s: {one_line(exc)}")) from None
            sleep(max(policy.delay(attempt), policy.base_delay_s / 2))
    raise AssertionError("unreachable")  # pragma: no cover
