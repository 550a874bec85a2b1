"""Load the controller's view of the cluster from whatever the config names as its metadata source."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec

from pipelines.config.models import MetadataConfig
from pipelines.errors import ConfigError
from pipelines.metadata import EMPTY, MetadataEvent, MetadataImage, load_metadata, parse_topics_describe


@dataclass(frozen=True)
class ControllerView:
    """The image the pipeline classifies against, the events it saw, and where it came from."""

    image: MetadataImage
    events: tuple[MetadataEvent, ...]
    source: str
    notes: tuple[str, ...] = ()


def load_controller_view(metadata: MetadataConfig) -> ControllerView:
    """Replay or parse the configured source.

    ``kind: none`` gives an empty, INCOMPLETE image: every topic id is then unknown and nothing is planned.

    Raises:
        ConfigError: the kind is not supported here (``admin`` needs a live cluster client).
        FileNotFoundError: the source does not exist.
    """
    if metadata.kind == "metadata_log":
        assert metadata.source is not None
        result = load_metadata(metadata.source, metadata.storage_options or None)
        return ControllerView(result.image, result.events, metadata.source, result.notes + result.errors)
    if metadata.kind == "topics_describe":
        assert metadata.source is not None
        with fsspec.open(metadata.source, "rt", encoding="utf-8", **metadata.storage_options) as f:
            text = f.read()
        image, problems = parse_topics_describe(text, complete=True)
        return ControllerView(image, (), metadata.source, problems)
    if metadata.kind == "none":
        empty = EMPTY.with_completeness(False, ("no controller metadata source configured",))
        return ControllerView(empty, (), "none", ("no controller metadata source configured",))
    raise ConfigError(f"metadata.kind {metadata.kind!r} is not supported by this command yet")
