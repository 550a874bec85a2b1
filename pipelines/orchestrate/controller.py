"""Load the controller's view of the cluster from whatever the config names as its metadata source."""

from __future__ import annotations

from pipelines.config.models import MetadataConfig
from pipelines.metadata.source import ControllerView, load_view

__all__ = ["ControllerView", "load_controller_view"]


def load_controller_view(metadata: MetadataConfig) -> ControllerView:
    """Read the configured source (``pipelines.metadata.source``: one module per ``metadata.kind``).

    ``kind: admin`` asks the live cluster: no events, as with topics describe. ``kind: zookeeper`` reads a live
    ensemble or a dump. ``kind: none`` gives an empty, INCOMPLETE image: every topic id is then unknown and nothing
    is planned.

    Raises:
        ConfigError: a client library (kafka-python, kazoo) is not installed.
        FileNotFoundError: the source file does not exist.
        SourceUnavailable: ZooKeeper cannot be reached.
    """
    return load_view(metadata)
