"""Controller metadata image and replay (pure Python, no Spark), after Kafka's ``metadata/image``."""

from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import (
    EMPTY,
    BrokerImage,
    ConfigsImage,
    MetadataImage,
    MetadataProvenance,
    PartitionImage,
    ReplayProblem,
    TopicImage,
    TopicsImage,
)
from pipelines.metadata.image_delta import MetadataDelta, raise_on_fault
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.metadata_log_source import FileUse, ReplayResult, load_metadata
from pipelines.metadata.rows import event_rows, event_table, image_rows, image_tables
from pipelines.metadata.topics_describe import parse_topics_describe

__all__ = [
    "EMPTY",
    "BrokerImage",
    "ConfigsImage",
    "FileUse",
    "MetadataDelta",
    "MetadataEvent",
    "MetadataImage",
    "MetadataLoader",
    "MetadataProvenance",
    "PartitionImage",
    "ReplayProblem",
    "ReplayResult",
    "TopicImage",
    "TopicsImage",
    "event_rows",
    "event_table",
    "image_rows",
    "image_tables",
    "load_metadata",
    "parse_topics_describe",
    "raise_on_fault",
]
