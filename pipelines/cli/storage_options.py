"""``--storage-option KEY=VALUE`` (repeatable), shared by the commands that open fsspec URLs."""

from __future__ import annotations

import click


def storage_options(pairs: tuple[str, ...]) -> dict[str, str]:
    """``("username=kafka", "port=2222")`` → ``{"username": "kafka", "port": "2222"}``; a pair without ``=`` is a
    usage error naming the option."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--storage-option")
        options[key] = value
    return options
