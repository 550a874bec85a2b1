"""The crawl's fast paths against plain reference versions written here from the spec (facts sheet, Kafka's
``LogFileUtils`` names): ``classify_file`` without regexes for segments, the one-buffer fingerprint, and the
shortcut for plain partition dir names against the step-by-step parse."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st

from pipelines.kafka.logdir import fingerprint_entries
from pipelines.kafka.partition_name import parse_by_kafka_steps, parse_partition_dir_name
from pipelines.kafka.segment_files import classify_file

_REFERENCE_SEGMENT = re.compile(
    r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?"
)

DIGITS = st.text(st.sampled_from("0123456789"), min_size=19, max_size=21)
ODD_DIGITS = st.text(
    st.sampled_from("0123456789\u0663\u00b2x"), min_size=20, max_size=20
)  # Arabic-Indic 3, superscript 2
TAILS = st.sampled_from(
    [
        "",
        ".log",
        ".index",
        ".timeindex",
        ".txnindex",
        ".snapshot",
        ".log.deleted",
        ".index.swap",
        ".timeindex.cleaned",
        ".log.tmp",
        ".LOG",
        ".log.deleted.x",
        ".checkpoint",
        "\n",
        ".log\n",
    ]
)
NAMES = st.one_of(st.builds(str.__add__, st.one_of(DIGITS, ODD_DIGITS), TAILS), st.text(max_size=30))


@given(NAMES)
def test_segment_names_classify_like_the_reference_pattern(name: str) -> None:
    fn = classify_file(name)
    m = _REFERENCE_SEGMENT.fullmatch(name)
    if m is None:
        assert fn.kind != "segment"
    else:
        assert (fn.kind, fn.base_offset, fn.suffix, fn.state) == (
            "segment", int(m.group(1)), m.group(2), (m.group(3) or "")[1:],
        )  # fmt: skip
    assert classify_file(name) == fn  # cached or not, the same answer


def _reference_fingerprint(entries: list[tuple[str, int, int]]) -> str:
    h = hashlib.sha256()
    for name, size, mtime_ns in sorted(entries):
        h.update(name.encode("utf-8", "surrogateescape"))
        h.update(f"\0{size}\0{mtime_ns // 1_000_000_000}\n".encode("ascii"))
    return h.hexdigest()


FS_NAMES = st.one_of(
    st.text(min_size=1, max_size=12).filter(lambda s: not any(0xD800 <= ord(c) < 0xE000 for c in s)),
    st.binary(min_size=1, max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


@given(st.lists(st.tuples(FS_NAMES, st.integers(0, 1 << 40), st.integers(-(10**18), 4 * 10**18)), max_size=8))
def test_fingerprint_equals_the_per_entry_reference(entries: list[tuple[str, int, int]]) -> None:
    assert fingerprint_entries(entries) == _reference_fingerprint(entries)


DIR_NAMES = st.one_of(
    st.builds(
        "{}-{}{}".format,
        st.text(st.sampled_from("ab-._ \u00e9"), max_size=6) | st.sampled_from(["__cluster_metadata", "@metadata"]),
        st.text(st.sampled_from("0123456789+-\u0663"), max_size=11),
        st.sampled_from(["", ".abc-delete", "-stray", ".x-future"]),
    ),
    st.text(max_size=12),
)


@given(DIR_NAMES)
def test_plain_dir_names_parse_like_the_kafka_steps(name: str) -> None:
    """The shortcut for ``<topic>-<digits>`` names gives what Kafka's steps give, for every name."""
    assert parse_partition_dir_name(name) == parse_by_kafka_steps(name)
