"""The canonical statement: one text per meaning, every field checked."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.signing.statement import HEADER, NAMESPACE, Statement, StatementError

AT = datetime(2024, 6, 1, 12, 0, 0, tzinfo=timezone.utc)
BASE = Statement(action="approve", cluster="prod eu", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", plan_id="20240601-ab12",
                 content_hash="sha256:" + "0f" * 32, brokers=(1, 4), expires_at=AT.replace(day=8), signer="alice",
                 signed_at=AT)


def test_the_text_is_fixed() -> None:
    assert BASE.render() == (
        f"{HEADER}\naction=approve\ncluster=prod eu\ncluster_id=MkU3OEVBNTcwNTJENDM2Qg\nplan_id=20240601-ab12\n"
        f"content_hash=sha256:{'0f' * 32}\nbrokers=1,4\nexpires_at=2024-06-08T12:00:00Z\nsigner=alice\n"
        "signed_at=2024-06-01T12:00:00Z\n")
    assert NAMESPACE == "kafka-logdir-gc-plan@v1"


@given(brokers=st.sets(st.integers(0, 10_000), min_size=1, max_size=20),
       action=st.sampled_from(["propose", "approve", "reject"]),
       signer=st.from_regex(r"[a-z][a-z0-9._@+-]{0,20}", fullmatch=True))
def test_render_and_parse_round_trip(brokers: set[int], action: str, signer: str) -> None:
    statement = dataclasses.replace(BASE, brokers=tuple(sorted(brokers)), action=action, signer=signer)
    assert Statement.parse(statement.render()) == statement


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("brokers=1,4", "brokers=4,1"),
    lambda t: t.replace("brokers=1,4", "brokers=1,4,4"),
    lambda t: t.replace("brokers=1,4", "brokers=01,4"),
    lambda t: t.replace("signer=alice\n", "signer=alice \n"),
    lambda t: t.replace("\n", "\r\n"),
    lambda t: t + "extra=1\n",
    lambda t: t.rstrip("\n"),
    lambda t: t.replace("action=approve\ncluster=prod eu\n", "cluster=prod eu\naction=approve\n"),
    lambda t: t.replace("T12:00:00Z", "T12:00:00+00:00", 1),
    lambda t: t.replace(HEADER, HEADER.replace("v1", "v2")),
    lambda t: t.replace("action=approve", "action=delete"),
    lambda t: t.replace("content_hash=sha256:", "content_hash=SHA256:"),
])
def test_any_other_text_is_refused(edit) -> None:
    with pytest.raises(StatementError):
        Statement.parse(edit(BASE.render()))


@pytest.mark.parametrize("change", [
    {"signer": "alice,bob"}, {"signer": "*"}, {"signer": ""}, {"plan_id": "a b"}, {"cluster": " lead"},
    {"cluster": "x\ny"}, {"brokers": ()}, {"brokers": (-1,)}, {"expires_at": AT.replace(tzinfo=None)},
    {"signed_at": AT.replace(microsecond=5)},
])
def test_fields_that_cannot_be_signed_are_refused(change: dict) -> None:
    with pytest.raises(StatementError):
        dataclasses.replace(BASE, **change)
