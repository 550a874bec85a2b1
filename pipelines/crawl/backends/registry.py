"""Listing backends by URL scheme: a dict of ``module:attribute`` targets, imported on first use.

Every target is a function ``list_log_dir(url, storage_options=None, *, only=None, fanout_above=None) -> Listing``
(``only``: descend into just these partition dirs; ``fanout_above``: with more partition dirs than this, list the
root only and let the caller fan out). Schemes without
an entry use the generic fsspec backend. ``register_backend`` refuses to replace an entry unless told to.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:  # not at run time: the compiled inventory writer asks for backend_name without the listing types
    from pipelines.crawl.listing import Listing


class ListLogDir(Protocol):
    def __call__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        only: Collection[str] | None = None,
        fanout_above: int | None = None,
    ) -> Listing: ...


GENERIC = "generic"
_REGISTRY: dict[str, str] = {
    "local": "pipelines.crawl.backends.local:list_log_dir",
    "file": "pipelines.crawl.backends.local:list_log_dir",
    "sftp": "pipelines.crawl.backends.sftp:list_log_dir_any",
    "ssh": "pipelines.crawl.backends.sftp:list_log_dir_any",
    GENERIC: "pipelines.crawl.backends.generic:list_log_dir",
}
SUMMARIZING_BACKENDS = frozenset({"local", "file", "sftp", "ssh"})
"""Backends whose ``list_log_dir`` takes ``summarize=True`` (partition dirs summed up while listed: the local
compiled lister, the SFTP listing parser)."""
#: Read-only view of the registry.
BACKENDS: Mapping[str, str] = MappingProxyType(_REGISTRY)
_loaded: dict[str, Callable[..., Listing]] = {}


def register_backend(scheme: str, target: str, *, clobber: bool = False) -> None:
    """Add ``scheme`` → ``"module:attribute"``.

    Raises:
        ValueError: the scheme is taken by another target and ``clobber`` is False, or the target is malformed.
    """
    if ":" not in target:
        raise ValueError(f"backend target must be 'module:attribute', got {target!r}")
    existing = _REGISTRY.get(scheme)
    if existing is not None and existing != target and not clobber:
        raise ValueError(f"scheme {scheme!r} is already served by {existing}")
    _REGISTRY[scheme] = target
    _loaded.pop(scheme, None)


def scheme_of(url: str) -> str:
    """``local`` for plain paths (and Windows-style drive letters), else the URL scheme, lower case."""
    scheme = urlsplit(url).scheme.lower()
    return "local" if len(scheme) <= 1 else scheme


def local_path(url: str) -> str:
    """``file:///a/b`` or ``local:///a/b`` or ``/a/b`` → ``/a/b`` (no trailing slash): the local backend's path."""
    for prefix in ("file://", "local://"):
        if url.startswith(prefix):
            url = url[len(prefix) :]
            break
    return os.path.abspath(url)


def backend_name(url: str) -> str:
    scheme = scheme_of(url)
    return scheme if scheme in _REGISTRY else GENERIC


def backend_for(url: str) -> ListLogDir:
    """The listing function serving ``url`` (imported on first use)."""
    name = backend_name(url)
    fn = _loaded.get(name)
    if fn is None:
        module_name, attr = _REGISTRY[name].split(":")
        fn = getattr(importlib.import_module(module_name), attr)
        _loaded[name] = fn
    return fn  # type: ignore[return-value]
