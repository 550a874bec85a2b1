"""Load the controller's view of the cluster from whatever the config names as its metadata source."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec

from pipelines.config.models import MetadataConfig
from pipelines.errors import ConfigError
from pipelines.metadata import EMPTY, MetadataEvent, MetadataImage, load_metadata, parse_topics_describe
from pipelines.metadata.admin_source import image_from_admin


@dataclass(frozen=True)
class ControllerView:
    """The image the pipeline classifies against, the events it saw, and where it came from."""

    image: MetadataImage
    events: tuple[MetadataEvent, ...]
    source: str
    notes: tuple[str, ...] = ()


def load_controller_view(metadata: MetadataConfig) -> ControllerView:
    """Replay or parse the configured source.

    ``kind: admin`` asks the live cluster (``pipelines.metadata.admin_source``): no events, as with topics describe.
    ``kind: none`` gives an empty, INCOMPLETE image: every topic id is then unknown and nothing is planned.

    Raises:
        ConfigError: the kind is not supported here, or ``admin`` without kafka-python installed.
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
    if metadata.kind == "admin":
        assert metadata.bootstrap_servers is not None
        image = image_from_admin(metadata.bootstrap_servers)
        notes = ("admin API: current state only, no metadata events", *image.incomplete_reasons)
        return ControllerView(image, (), image.provenance.source, notes)
    if metadata.kind == "none":
        empty = EMPTY.with_completeness(False, ("no controller metadata source configured",))
        return ControllerView(empty, (), "none", ("no controller metadata source configured",))
    raise ConfigError(f"metadata.kind {metadata.kind!r} is not supported by this command yet")
