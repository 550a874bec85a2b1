"""The ``__remote_log_metadata`` partition of a topic partition's events (``RemoteLogMetadataTopicPartitioner``).

Kafka hashes ``Objects.hash(topicId.lsb, topicId.msb, partition)`` (Java's ``Arrays.hashCode`` over a Long, a Long and
an Integer), writes that int big-endian into 4 bytes, takes Kafka's ``murmur2`` of them, clears the sign bit
(``Utils.toPositive``) and reduces modulo the metadata topic's partition count. So a segment that no record names
can still be told which metadata partition should have named it, and whether that partition was read whole.
"""

from __future__ import annotations

from pipelines.kafka.uuid import Uuid

__all__ = ["metadata_partition", "murmur2", "topic_partition_hash"]

_M32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_MIX = 0x5BD1E995


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (MurmurHash2, 32-bit, seed 0x9747b28c) as an unsigned 32-bit value."""
    length = len(data)
    h = (_SEED ^ length) & _M32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _MIX) & _M32
        k ^= k >> 24
        k = (k * _MIX) & _M32
        h = ((h * _MIX) & _M32) ^ k
    rest = length % 4
    if rest:
        if rest == 3:
            h ^= data[whole + 2] << 16
        if rest >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _MIX) & _M32
    h ^= h >> 13
    h = (h * _MIX) & _M32
    h ^= h >> 15
    return h


def _long_hash(u: int) -> int:
    return (u ^ (u >> 32)) & _M32


def topic_partition_hash(topic_id: Uuid, partition: int) -> int:
    """Java's ``Objects.hash(topicId.lsb, topicId.msb, partition)`` as an unsigned 32-bit value."""
    h = 1
    for part in (_long_hash(topic_id.lsb), _long_hash(topic_id.msb), partition & _M32):
        h = (31 * h + part) & _M32
    return h


def metadata_partition(topic_id: Uuid, partition: int, num_partitions: int) -> int:
    """The metadata partition Kafka writes the events of ``(topic_id, partition)`` to."""
    if num_partitions <= 0:
        raise ValueError("the metadata topic has at least one partition")
    raw = topic_partition_hash(topic_id, partition).to_bytes(4, "big")
    return (murmur2(raw) & 0x7FFFFFFF) % num_partitions
