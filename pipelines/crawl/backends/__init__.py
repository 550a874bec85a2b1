"""Listing backends (local ``os.scandir``, one-command SFTP, generic fsspec) behind a scheme registry."""

from pipelines.crawl.backends.registry import BACKENDS, backend_for, backend_name, register_backend, scheme_of

__all__ = ["BACKENDS", "backend_for", "backend_name", "register_backend", "scheme_of"]
