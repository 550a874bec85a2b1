"""Load and validate a YAML config; every failure is one ConfigError line naming the problem.

The file is read under the ``config`` size limit (:mod:`pipelines.kafka.bounded_read`) and composed by
:class:`BoundedLoader`, which refuses a document nested deeper than :data:`MAX_DEPTH` levels, with more than
:data:`MAX_ALIASES` aliases, or whose aliases (and ``<<`` merges) expand to more than :data:`MAX_NODES` nodes: an
alias bomb is refused while it is composed, before anything expands it, and no recursion limit is ever reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError
from pipelines.kafka.bounded_read import read_regular_file

MAX_DEPTH = 64
"""Nesting levels of mappings and sequences (the config itself nests 4)."""
MAX_ALIASES = 1000
"""Alias references (``*name``) in one document."""
MAX_NODES = 100_000
"""Nodes of the document once every alias is expanded (a config has a few hundred)."""


class ConfigTooComplex(yaml.YAMLError):
    """A YAML document beyond :data:`MAX_DEPTH`, :data:`MAX_ALIASES` or :data:`MAX_NODES`."""


class BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that counts, while composing, the nesting depth, the aliases and the expanded size."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._weights: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise ConfigTooComplex(f"more than {MAX_ALIASES} aliases{_line(self.peek_event())}")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ConfigTooComplex(f"nested deeper than {MAX_DEPTH} levels{_line(self.peek_event())}")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        weight = self._weight(node)
        if weight > MAX_NODES:
            raise ConfigTooComplex(f"aliases expand to more than {MAX_NODES} nodes{_line(node)}")
        return node

    def _weight(self, node: yaml.Node) -> int:
        """Nodes under ``node`` with aliases expanded (each child's weight is known: it was composed first)."""
        known = self._weights.get(id(node))
        if known is not None:
            return known
        weight = 1
        if isinstance(node, yaml.SequenceNode):
            weight += sum(self._weights.get(id(child), 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            weight += sum(self._weights.get(id(k), 1) + self._weights.get(id(v), 1) for k, v in node.value)
        self._weights[id(node)] = weight
        return weight


def _line(where: object) -> str:
    mark = getattr(where, "start_mark", None)
    return f" at line {mark.line + 1}" if mark is not None else ""


def load_yaml(text: str) -> Any:
    """One YAML document through :class:`BoundedLoader`. Raises ``yaml.YAMLError`` (``ConfigTooComplex`` too)."""
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


#: pydantic's words for the problems a config meets, in an operator's words.
_PLAIN = {"extra_forbidden": "unknown key (conf/example.yaml shows every key)", "missing": "required key is missing"}


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = _PLAIN.get(err["type"], err["msg"].removeprefix("Value error, "))
    return f"{where}: {msg}" if where else msg  # a whole-config rule's message names its keys itself


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``line L, column C: problem`` of a YAML error, as the file's reader counts (from 1)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


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
        # a FIFO named as the config never blocks; a file above the config limit is refused unread
        data = load_yaml(read_regular_file(str(p), "config").decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except ConfigTooComplex as exc:
        raise ConfigError(f"{p}: refused: YAML {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML ({_yaml_problem(exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of keys (cluster:, warehouse:, ...) at the top level, "
                          f"found {'nothing' if data is None else type(data).__name__}")
    data.update(overrides or {})
    return config_from_dict(data, origin=str(p))
