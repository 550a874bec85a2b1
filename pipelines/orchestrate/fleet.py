"""Fill in the brokers of a ``brokers_from`` config from the controller metadata's broker ids."""

from __future__ import annotations

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.errors import ConfigError
from pipelines.metadata import MetadataImage
from pipelines.orchestrate.controller import ControllerView, load_controller_view


def broker_ids(image: MetadataImage) -> set[int]:
    """Registered brokers (fenced ones too: their disks still hold data) and every broker named in a replica set."""
    ids = set(image.brokers)
    for topic in image.topics.by_id.values():
        for partition in topic.partitions.values():
            ids.update(partition.replicas)
            ids.update(partition.adding_replicas)
    return ids


def with_fleet(config: AppConfig, view: ControllerView | None = None) -> tuple[AppConfig, ControllerView | None]:
    """``config`` with one broker per id the metadata knows (``brokers_from``), and the view it loaded for that.

    Without ``brokers_from`` the config and ``view`` come back as they are (nothing is loaded).

    Raises:
        ConfigError: the metadata names no broker at all.
    """
    template = config.brokers_from
    if template is None:
        return config, view
    view = view or load_controller_view(config.metadata)
    ids = broker_ids(view.image)
    if not ids:
        raise ConfigError(f"brokers_from: the controller metadata ({view.source}) names no broker")
    listed = {b.broker_id for b in config.brokers}
    derived = [BrokerConfig.model_validate(template.broker(b)) for b in sorted(ids - listed)]
    brokers = tuple(sorted((*config.brokers, *derived), key=lambda b: b.broker_id))
    return config.model_copy(update={"brokers": brokers}), view
