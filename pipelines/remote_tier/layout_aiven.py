"""Object keys of Aiven's tiered-storage-for-apache-kafka (``ObjectKeyFactory``).

Layout, relative to the bucket (or storage root) plus the plugin's ``key.prefix``::

    <topic>-<topicId>/<partition>/<startOffset, 20 digits>-<segmentId>.<suffix>

with suffix ``log`` (the segment, chunked and maybe compressed/encrypted), ``indexes`` (all the segment's indexes
in one object, since Oct 2023: before any release) and ``rsm-manifest`` (JSON, uploaded last). The prefix is a plain
string glued in front (it need not end in ``/``). An Iceberg mode with another layout exists and is not supported.
"""

from __future__ import annotations

from pipelines.remote_tier.keys import (
    RemoteKeyError,
    RemoteObjectKey,
    parse_partition,
    parse_segment_file,
    parse_topic,
    uuid_from_right,
)

__all__ = ["AIVEN_SUFFIXES", "MANIFEST", "parse_aiven_key"]

MANIFEST = "rsm-manifest"
AIVEN_SUFFIXES = frozenset({"log", "indexes", MANIFEST})


def parse_aiven_key(relative_key: str) -> RemoteObjectKey:
    """Parse a key with the plugin prefix already removed.

    Raises:
        RemoteKeyError: not exactly three ``/``-separated parts of the documented form.
    """
    parts = relative_key.split("/")
    if len(parts) != 3:
        raise RemoteKeyError(f"aiven key {relative_key!r} is not <topic>-<topicId>/<partition>/<segment file>")
    topic_dir, partition_text, file_name = parts
    topic, topic_id = uuid_from_right(topic_dir, "aiven topic folder")
    topic = parse_topic(topic, "aiven topic folder")
    partition = parse_partition(partition_text, "aiven partition folder")
    start_offset, segment_id, suffix = parse_segment_file(file_name, AIVEN_SUFFIXES, "aiven segment object")
    return RemoteObjectKey(topic, topic_id, partition, segment_id, start_offset, suffix)
