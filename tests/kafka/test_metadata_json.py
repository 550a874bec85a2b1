"""``record_json`` against its reference ``json.dumps(to_json_dict(record))``, on every record type and version."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import struct_strategy, with_defaults

from pipelines.kafka.metadata_codec import MetadataRecord, decode_metadata_record, encode_metadata_record, to_json_dict
from pipelines.kafka.metadata_json import record_json
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.metadata_schema import METADATA_RECORD_TYPES

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kraft-cluster"

TYPE_VERSIONS = [(spec.api_key, v) for spec in METADATA_RECORD_TYPES.values()
                 for v in range(spec.versions[0], spec.versions[1] + 1)]


@st.composite
def records(draw: st.DrawFn) -> MetadataRecord:
    api_key, version = draw(st.sampled_from(TYPE_VERSIONS))
    spec = METADATA_RECORD_TYPES[api_key]
    fields = with_defaults(spec.fields, draw(struct_strategy(spec.fields, version)))
    return MetadataRecord(api_key, version, spec.name, fields)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_record_json_equals_the_reference(record: MetadataRecord) -> None:
    decoded = decode_metadata_record(encode_metadata_record(record))  # what a dump really hands over
    assert record_json(decoded) == json.dumps(to_json_dict(decoded))


def test_every_record_of_the_real_cluster_fixture() -> None:
    logs = sorted(FIXTURE.rglob("__cluster_metadata-0/*.log"))
    assert logs
    seen = 0
    for log in logs:
        for entry in iter_metadata_log(log):
            if not entry.is_control:
                assert record_json(entry.record) == json.dumps(to_json_dict(entry.record))
                seen += 1
    assert seen > 50
