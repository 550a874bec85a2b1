"""Load and validate a YAML config; every failure is one ConfigError line naming the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError
from pipelines.kafka.listing import read_regular_file


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    return f"{where}: {err['msg']}"


def config_from_dict(data: dict[str, Any], *, origin: str = "config") -> AppConfig:
    try:
        return AppConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: {_first_error(exc)}") from None


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> AppConfig:
    """Read ``path`` (YAML), apply top-level ``overrides`` and validate.

    Raises:
        ConfigError: unreadable file, invalid YAML, or a value that fails validation.
    """
    p = Path(path)
    try:
        data = yaml.safe_load(read_regular_file(str(p)).decode("utf-8"))  # a FIFO named as the config never blocks
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    data.update(overrides or {})
    return config_from_dict(data, origin=str(p))
