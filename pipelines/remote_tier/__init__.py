"""The remote tier (KIP-405 tiered storage): object keys, ``__remote_log_metadata``, and the classes of remote segments.

Spark-free, like :mod:`pipelines.kafka`: keys of the supported plugin layouts (:mod:`.listing`), Aiven's manifest
(:mod:`.aiven_manifest`), the metadata topic's records (:mod:`.metadata_codec`), replicas (:mod:`.metadata_topic`),
replay (:mod:`.replay`) and classification (:mod:`.classify`); listing a tier through fsspec
(:mod:`.object_listing`) or from an S3 Inventory report (:mod:`.s3_inventory`).
"""

from pipelines.remote_tier.classify import (
    ALL_REMOTE_CLASSES,
    PLANNABLE_REMOTE_CLASSES,
    ControllerTopics,
    Lineage,
    RemoteFinding,
    classify_remote,
)
from pipelines.remote_tier.events import PartitionDeleteEvent, PartitionDeleteState, SegmentEvent, SegmentState
from pipelines.remote_tier.listing import LAYOUTS, ListedObject, RemoteObjectRow, parse_key, parse_listing
from pipelines.remote_tier.metadata_codec import RemoteMetadataRecord, decode_remote_record, encode_remote_record
from pipelines.remote_tier.metadata_topic import MetadataCoverage, PartitionRead, read_replica
from pipelines.remote_tier.object_listing import (
    ListingProblem,
    list_location,
    list_prefix,
    listing_rows,
    open_location,
    topic_prefixes,
)
from pipelines.remote_tier.replay import RemoteMetadataImage, ReplayedSegment, replay
from pipelines.remote_tier.s3_inventory import InventoryError, InventoryStats, read_inventory

__all__ = [
    "ALL_REMOTE_CLASSES",
    "LAYOUTS",
    "PLANNABLE_REMOTE_CLASSES",
    "ControllerTopics",
    "InventoryError",
    "InventoryStats",
    "Lineage",
    "ListedObject",
    "ListingProblem",
    "MetadataCoverage",
    "PartitionDeleteEvent",
    "PartitionDeleteState",
    "PartitionRead",
    "RemoteFinding",
    "RemoteMetadataImage",
    "RemoteMetadataRecord",
    "RemoteObjectRow",
    "ReplayedSegment",
    "SegmentEvent",
    "SegmentState",
    "classify_remote",
    "decode_remote_record",
    "encode_remote_record",
    "list_location",
    "list_prefix",
    "listing_rows",
    "open_location",
    "parse_key",
    "parse_listing",
    "read_inventory",
    "read_replica",
    "replay",
    "topic_prefixes",
]
