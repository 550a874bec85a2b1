"""Loading the executor's config only from a file that root or the executor's own user alone can change."""

from __future__ import annotations

from pipelines.cli.workflow_options import load_app
from pipelines.config.models import AppConfig


def load_host_app(config_path: str | None, warehouse: str | None, *, need_config: bool = True) -> AppConfig:
    """:func:`~pipelines.cli.workflow_options.load_app` after vetting the config file
    (:func:`~pipelines.execute.host_files.vet_config_file`: PolicyViolation ``[host_config_permissions]``)."""
    from pipelines.execute.host_files import vet_config_file

    if config_path:
        vet_config_file(config_path)
    return load_app(config_path, warehouse, need_config=need_config)
