"""meta.properties: java.util.Properties syntax, v0/v1 semantics, Kafka-style writer."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.kafka.java_properties import MalformedProperties, java_date, load_properties, store_properties
from pipelines.kafka.meta_properties import read_meta_properties, write_meta_properties
from pipelines.kafka.uuid import Uuid

MOMENT = datetime(2024, 10, 24, 12, 0, 0, tzinfo=timezone.utc)
DIR_ID = Uuid.from_string("yYuMrFRVQVSX0VVQPcMSrA")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1\nb:2\nc 3\n", {"a": "1", "b": "2", "c": "3"}),
        ("# comment\n! also\n\n   \na = 1 \n", {"a": "1 "}),  # leading blanks of the value go, trailing stay
        ("  key   =   value", {"key": "value"}),
        ("key = = value", {"key": "= value"}),  # only one separator is eaten
        ("key  :value", {"key": "value"}),  # blank then ':' is one separator
        ("k\\=x=v", {"k=x": "v"}),
        ("k\\ x v", {"k x": "v"}),
        ("k=a\\\n    b\\\n c", {"k": "abc"}),  # continuations drop the next line's leading blanks
        ("k=a\\\\\nx=y", {"k": "a\\", "x": "y"}),  # even backslashes: no continuation
        ("k=a\\", {"k": "a"}),  # a dangling backslash at EOF is dropped
        ("k=a\\\n", {"k": "a"}),
        ("k=a\\\n\nb=c", {"k": "a", "b": "c"}),  # an empty continuation line ends the value
        ("k=a\\\n# not a comment", {"k": "a# not a comment"}),
        ("k=\\u0041\\t\\n\\r\\f\\q", {"k": "A\t\n\r\fq"}),
        ("k=v\r\nx=y\rz=w", {"k": "v", "x": "y", "z": "w"}),
        ("k=1\nk=2", {"k": "2"}),
        ("empty=\nnovalue", {"empty": "", "novalue": ""}),
        ("#k=v", {}),
        ("  #k=v", {}),
        ("\\\n#c\nx=1", {"x": "1"}),  # the continued line starts empty: '#' there begins a comment
    ],
)
def test_java_properties_load(text: str, expected: dict[str, str]) -> None:
    assert load_properties(text) == expected


def test_bytes_are_latin1() -> None:
    assert load_properties("k=é".encode()) == {"k": "Ã©"}  # Properties.load(InputStream) reads ISO-8859-1


@pytest.mark.parametrize("text", ["k=\\u12", "k=\\uZZZZ", "\\u00=x"])
def test_bad_unicode_escape(text: str) -> None:
    with pytest.raises(MalformedProperties):
        load_properties(text)


def test_java_date() -> None:
    assert java_date(MOMENT) == "Thu Oct 24 12:00:00 UTC 2024"


def test_writer_style() -> None:
    data = write_meta_properties(
        version=1, cluster_id="EpwKlK0lR6qKZW0cGwZz8w", node_id=3, directory_id=DIR_ID, moment=MOMENT
    )
    assert data == (
        b"#\n#Thu Oct 24 12:00:00 UTC 2024\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\n"
        b"directory.id=yYuMrFRVQVSX0VVQPcMSrA\nnode.id=3\nversion=1\n"
    )
    v0 = write_meta_properties(version=0, cluster_id=None, node_id=7, moment=MOMENT)
    assert b"broker.id=7\n" in v0 and b"node.id" not in v0 and b"cluster.id" not in v0


def test_v1() -> None:
    mp = read_meta_properties(
        b"#\n#Wed Jun 18 14:08:53 GMT 2025\ncluster.id=5L6g3nShT-eMCtK--X86sw\n"
        b"directory.id=NuGZI-m8bJ7swnEKaplGaw\nnode.id=1\nversion=1\n"
    )
    assert (mp.version, mp.cluster_id, mp.node_id) == (1, "5L6g3nShT-eMCtK--X86sw", 1)
    assert str(mp.directory_id) == "NuGZI-m8bJ7swnEKaplGaw"
    assert mp.problems == () and mp.kafka_would_accept


def test_v0_uses_broker_id() -> None:
    mp = read_meta_properties(b"version=0\nbroker.id=2\ncluster.id=JYMDBaA1Q3St4WsjB7OfvQ\n")
    assert (mp.version, mp.node_id, mp.directory_id) == (0, 2, None)
    assert mp.kafka_would_accept


def _codes(data: bytes) -> list[str]:
    return [p.code for p in read_meta_properties(data).problems]


@pytest.mark.parametrize(
    ("data", "codes", "accepted"),
    [
        (b"broker.id=1\n", ["meta_properties_no_version"], True),
        (
            b"version=2\nnode.id=1\ncluster.id=x\n",
            ["meta_properties_bad_version", "meta_properties_cluster_id_not_uuid"],
            False,
        ),
        (b"version=one\n", ["meta_properties_bad_version"], False),
        (b"version=1\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\n", ["meta_properties_missing_node_id"], False),
        (b"version=1\nnode.id=1\n", ["meta_properties_missing_cluster_id"], False),
        (b"version=1\nnode.id=x\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\n", ["meta_properties_bad_int"], False),
        (b"version=1\nnode.id=1\ncluster.id=\n", ["meta_properties_empty_cluster_id"], True),
        (b"version=1\nnode.id=1\ncluster.id=test-cluster-id\n", ["meta_properties_cluster_id_not_uuid"], True),
        (
            b"version=1\nnode.id=1\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\ndirectory.id=not-a-uuid\n",
            ["meta_properties_bad_directory_id"],
            False,
        ),
        (
            b"version=1\nnode.id=1\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\n",
            ["meta_properties_reserved_directory_id"],
            False,
        ),
        (b"version=0\nfoo=bar\n", ["meta_properties_unknown_keys"], True),
        (b"k=\\u12", ["meta_properties_unparseable"], False),
    ],
)
def test_problems_not_crashes(data: bytes, codes: list[str], accepted: bool) -> None:
    mp = read_meta_properties(data)
    assert [p.code for p in mp.problems] == codes
    assert mp.kafka_would_accept is accepted


def test_bad_directory_id_keeps_other_fields() -> None:
    mp = read_meta_properties(b"version=1\nnode.id=4\ncluster.id=EpwKlK0lR6qKZW0cGwZz8w\ndirectory.id=zzz\n")
    assert (mp.node_id, mp.cluster_id, mp.directory_id) == (4, "EpwKlK0lR6qKZW0cGwZz8w", None)
    assert mp.raw["directory.id"] == "zzz"


PRINTABLE = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\t\n\r\f"))


@given(st.dictionaries(PRINTABLE.filter(bool), PRINTABLE, max_size=8))
def test_store_load_round_trip(props: dict[str, str]) -> None:
    assert load_properties(store_properties(sorted(props.items()), moment=MOMENT)) == props


@given(
    version=st.sampled_from([0, 1]),
    node=st.integers(0, 2**31 - 1),
    cluster=st.binary(min_size=16, max_size=16).map(lambda b: str(Uuid.from_bytes(b))),
    directory=st.binary(min_size=16, max_size=16).map(Uuid.from_bytes).filter(lambda u: not u.is_reserved_directory_id),
)
def test_meta_round_trip(version: int, node: int, cluster: str, directory: Uuid) -> None:
    mp = read_meta_properties(
        write_meta_properties(version=version, cluster_id=cluster, node_id=node, directory_id=directory)
    )
    assert (mp.version, mp.node_id, mp.cluster_id, mp.directory_id) == (version, node, cluster, directory)
    assert mp.kafka_would_accept
