"""The compiled partition counts of the summary (``_native_summary.c``) against their pure-Python twin
``summary.topic_counts_python``: the same figures for any image, and a decline (None) for values an image never
holds, which the twin then counts (or raises on) as before."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import native
from pipelines.metadata import summary
from pipelines.metadata.image import PartitionImage, TopicImage
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.summary import summarize, topic_counts, topic_counts_python
from tests.metadata.mdrecords import tid

COMPILED = native.load(summary.MODULE)
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="_native_summary not built (tests/test_native_build.py)")

REPLICAS = st.lists(st.integers(0, 5), max_size=4).map(tuple)


@st.composite
def partitions(draw: st.DrawFn, p: int) -> PartitionImage:
    replicas = draw(REPLICAS)
    return PartitionImage(p, replicas, draw(REPLICAS), draw(REPLICAS), draw(REPLICAS),
                          draw(st.integers(-3, 5)), 0, 0, ())


@st.composite
def topics(draw: st.DrawFn) -> list[TopicImage]:
    out = []
    for i in range(draw(st.integers(0, 6))):
        n = draw(st.integers(0, 5))
        parts = {p: draw(partitions(p)) for p in range(n)}
        out.append(TopicImage(tid(i), f"t{draw(st.integers(0, 3))}", MappingProxyType(parts)))
    return out


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(topics=topics())
def test_compiled_counts_equal_the_python_twin(topics: list[TopicImage]) -> None:
    assert COMPILED.topic_counts(topics) == topic_counts_python(topics)
    assert topic_counts(topics) == topic_counts_python(topics)


ODD: list[dict[str, Any]] = [
    {"replicas": [1, 2]}, {"isr": [1]}, {"adding_replicas": [3]}, {"removing_replicas": None},
    {"leader": True}, {"leader": 2**70}, {"leader": -(2**70)}, {"leader": 1.5},
]


@needs_compiled
@pytest.mark.parametrize("odd", ODD, ids=[next(iter(o)) + "=" + repr(next(iter(o.values()))) for o in ODD])
def test_compiled_counts_decline_what_an_image_never_holds(odd: dict[str, Any]) -> None:
    class Odd:  # a partition with one attribute of another type than an image's
        def __init__(self) -> None:
            self.replicas, self.isr, self.adding_replicas, self.removing_replicas, self.leader = (1, 2), (1,), (), (), 1
            self.__dict__.update(odd)

    topics = [TopicImage(tid(1), "t", MappingProxyType({0: Odd()}))]
    assert COMPILED.topic_counts(topics) is None
    assert COMPILED.topic_counts(tuple(topics)) is None  # not a list
    try:
        expected: Any = topic_counts_python(topics)
    except TypeError as exc:
        expected = type(exc)
    try:
        got: Any = topic_counts(topics)
    except TypeError as exc:
        got = type(exc)
    assert got == expected


@needs_compiled
def test_compiled_counts_pass_on_an_attribute_error() -> None:
    topics: list[Any] = [object()]
    assert COMPILED.topic_counts(topics) is None
    with pytest.raises(AttributeError):
        topic_counts(topics)


REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"


def test_every_real_metadata_log_summarizes_the_same_compiled_and_pure() -> None:
    logs = sorted(REAL.glob("**/__cluster_metadata-0"))
    if not logs:
        pytest.skip(f"real log dirs not present at {REAL}")
    for directory in logs:
        result = load_metadata(str(directory))
        compiled = summarize(result)
        with native.pure_python():
            assert summarize(result) == compiled, directory
