"""Object keys parsed a whole Arrow array at a time (the listing of 10M keys without a Python object per key).

:func:`parse_keys` gives the ``remote_objects`` columns a key decides (``topic``, ``topic_id``, ``partition``,
``segment_id``, ``start_offset``, ``object_kind``, ``error``) for an array of keys relative to ``location``. A key
is accepted by one regular expression per layout (RE2, in Arrow's C++) that admits only keys of the exact form the
pure parser (:func:`pipelines.remote_tier.listing.parse_key`) accepts: legal topic name, canonical 22-character
Uuid texts (their last character carries 2 bits and 4 zero bits: one of ``AQgw``), a partition without sign or
leading zero, a 20-digit offset, a known suffix; the topic's length and the int32 and int64 bounds are checked on the
captures. Every key the expression does not admit is handed to the pure parser, which is the reference: it gives the
error text, or the parse. So the fast path can only ever agree with the pure one;
tests/remote_tier/test_remote_arrow_keys.py checks that on generated and lying keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.remote_tier.keys import RemoteKeyError
from pipelines.remote_tier.listing import layout_prefix, parse_key

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KEY_COLUMNS", "parse_keys"]

KEY_COLUMNS = ("topic", "topic_id", "partition", "segment_id", "start_offset", "object_kind", "error")
"""The columns :func:`parse_keys` returns, in this order."""

_UUID = r"[A-Za-z0-9_-]{21}[AQgw]"
_TOPIC = r"[A-Za-z0-9._-]+"  # its length (at most 249) is checked on the capture: a bounded repeat slows RE2 2x
_PARTITION = r"0|[1-9][0-9]{0,9}"
_FILE = r"(?P<offset>[0-9]{20})-(?P<segment_id>" + _UUID + r")\.(?P<kind>{suffixes})"
_BODY = {
    "aiven": (r"^(?P<topic>" + _TOPIC + r")-(?P<topic_id>" + _UUID + r")/(?P<partition>" + _PARTITION + r")/"
              + _FILE + "$", ("log", "indexes", "rsm-manifest")),
    "local_tiered_storage": (r"^(?P<topic>" + _TOPIC + r")-(?P<partition>" + _PARTITION + r")-(?P<topic_id>"
                             + _UUID + r")/" + _FILE + "$",
                             ("log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint")),
}
_INT32_MAX = (1 << 31) - 1
_MAX_TOPIC = 249
_INT64_MAX_TEXT = f"{(1 << 63) - 1:020d}"


def _pattern(layout: str) -> str:
    body, suffixes = _BODY[layout]
    return body.replace("{suffixes}", "|".join(s.replace("-", r"\-") for s in suffixes))


def parse_keys(keys: pa.Array, layout: str, prefix: str = "") -> list[pa.Array]:
    """The :data:`KEY_COLUMNS` of ``keys`` (relative to ``location``; no nulls), as the pure parser gives them.

    Raises:
        ValueError: unknown layout, or a prefix for ``local_tiered_storage``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    head = layout_prefix(layout, prefix)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    keys = keys.cast(pa.string())
    inside = pc.starts_with(keys, head) if head else pc.is_valid(keys)
    rest = pc.utf8_slice_codeunits(keys, len(head))
    found = pc.extract_regex(rest, _pattern(layout))
    topic = pc.struct_field(found, "topic")
    offset_text = pc.struct_field(found, "offset")
    partition = pc.cast(pc.if_else(found.is_valid(), pc.struct_field(found, "partition"), "0"), pa.int64())
    ok = pc.and_kleene(pc.and_kleene(inside, found.is_valid()),
                       pc.and_(pc.and_(pc.and_(pc.not_equal(topic, "."), pc.not_equal(topic, "..")),
                                       pc.less_equal(pc.utf8_length(topic), _MAX_TOPIC)),
                               pc.and_(pc.less_equal(partition, _INT32_MAX),
                                       pc.less_equal(offset_text, _INT64_MAX_TEXT))))
    ok = pc.fill_null(ok, False)
    null_str = pa.scalar(None, pa.string())
    columns = [
        pc.if_else(ok, topic, null_str),
        pc.if_else(ok, pc.struct_field(found, "topic_id"), null_str),
        pc.if_else(ok, pc.cast(pc.if_else(ok, partition, 0), pa.int32()), pa.scalar(None, pa.int32())),
        pc.if_else(ok, pc.struct_field(found, "segment_id"), null_str),
        pc.if_else(ok, pc.cast(pc.if_else(ok, offset_text, "0"), pa.int64()), pa.scalar(None, pa.int64())),
        pc.if_else(ok, pc.struct_field(found, "kind"), null_str),
        pa.nulls(len(keys), pa.string()),
    ]
    if pc.all(ok).as_py() is not False:
        return columns
    return _with_pure_parses(columns, keys, ok, layout, prefix)


def _with_pure_parses(columns: list[pa.Array], keys: pa.Array, ok: pa.Array, layout: str, prefix: str
                      ) -> list[pa.Array]:  # fmt: skip
    """``columns`` with the rows the expression did not admit replaced by the pure parser's verdict."""
    import pyarrow as pa
    import pyarrow.compute as pc

    others = pc.invert(ok)
    values: list[list[object]] = [[] for _ in KEY_COLUMNS]
    for key in keys.filter(others).to_pylist():
        try:
            k = parse_key(key, layout, prefix)
        except RemoteKeyError as exc:
            parsed: tuple[object, ...] = (None, None, None, None, None, None, str(exc))
        else:
            parsed = (k.topic, str(k.topic_id), k.partition, str(k.segment_id), k.start_offset, k.kind, None)
        for column, value in zip(values, parsed, strict=True):
            column.append(value)
    return [pc.replace_with_mask(c, others, pa.array(v, c.type)) for c, v in zip(columns, values, strict=True)]
