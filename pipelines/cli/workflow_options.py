"""Options shared by the plan and executor commands: ``--config FILE`` / ``--warehouse DIR`` and ``--json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


def workflow_options(fn: F) -> F:
    fn = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")(fn)
    fn = click.option("--warehouse", type=click.Path(file_okay=False), default=None,
                      help="Root of the Delta tables (overrides the config's warehouse).")(fn)
    fn = click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                      help="YAML config (conf/example.yaml shows every key).")(fn)
    return fn


def load_app(config_path: str | None, warehouse: str | None, *, need_config: bool = False) -> AppConfig:
    """The config, with ``--warehouse`` applied; without ``--config`` a minimal one (default policy)."""
    from pipelines.config.load import config_from_dict, load_config

    if config_path:
        return load_config(config_path, {"warehouse": warehouse} if warehouse else None)
    if need_config:
        raise ConfigError("this command needs --config FILE (brokers, log dirs and executor settings)")
    if not warehouse:
        raise ConfigError("give --config FILE or --warehouse DIR")
    return config_from_dict({"cluster": "-", "warehouse": warehouse}, origin="--warehouse")


def open_store(config: AppConfig) -> Any:
    """The delta-rs store of the config's warehouse (object-store settings from the environment and the config)."""
    from pipelines.tables.warehouse_store import warehouse_store

    return warehouse_store(config.warehouse, config.warehouse_storage_options)


def emit(as_json: bool, data: Any, text: str) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        click.echo(text, nl=not text.endswith("\n"))
