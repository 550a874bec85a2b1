"""Declarative schemas of the KRaft metadata records and the KRaft control records.

Written for this project from the facts sheet (sections 5.5, 6.2, 6.3) and checked against the message
definitions in ``metadata/src/main/resources/common/metadata/`` and ``clients/src/main/resources/common/message/``
of apache/kafka. Each field is data: Kafka's PascalCase name (snake_case and camelCase are derived the way
Kafka's generator derives them), a type, the version range it exists in, the versions where it may be null,
its tag (``None`` = not tagged), and its default.

Types: ``int8 int16 int32 int64 uint16 bool float64 uuid string bytes``, ``[]T`` arrays of those, ``struct``
(one nested struct) and ``[]struct`` (array of structs), both with ``fields``.

Defaults follow Kafka's generator: 0 / false / "" / b"" / empty array / the zero Uuid, unless a field declares
one; ``None`` is a default only for nullable fields declared with ``"default": "null"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.kafka.uuid import ZERO

__all__ = [
    "CONTROL_RECORD_TYPES",
    "METADATA_RECORD_TYPES",
    "FieldSpec",
    "RecordTypeSpec",
    "camel_case",
    "snake_case",
]

SCALAR_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint16", "bool", "float64", "uuid", "string", "bytes"})
_TYPE_DEFAULTS: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "bool": False, "float64": 0.0,
    "uuid": ZERO, "string": "", "bytes": b"",
}  # fmt: skip
MAX_VERSION = 0x7FFF


def snake_case(name: str) -> str:
    """Kafka's ``MessageGenerator.toSnakeCase``: ``KRaftVersion`` -> ``kraft_version``."""
    out = []
    prev_upper = True
    for ch in name:
        if ch.isupper():
            if not prev_upper:
                out.append("_")
            out.append(ch.lower())
            prev_upper = True
        else:
            out.append(ch)
            prev_upper = False
    return "".join(out)


def camel_case(name: str) -> str:
    """Kafka's JSON field name: the PascalCase name with its first letter lowered."""
    return name[:1].lower() + name[1:]


def _range(text: str) -> tuple[int, int]:
    """``"2+"`` -> (2, MAX); ``"0-1"`` -> (0, 1); ``"3"`` -> (3, 3)."""
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a record schema. ``versions``/``nullable`` are inclusive (lo, hi) ranges."""

    kafka_name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tag: int | None
    default: Any
    fields: tuple[FieldSpec, ...] = ()
    name: str = field(init=False, compare=False, repr=False)
    """snake_case of ``kafka_name``, derived once (the encoder reads it several times per field and record)."""
    json_name: str = field(init=False, compare=False, repr=False)
    """camelCase of ``kafka_name`` (Kafka's JSON key)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", snake_case(self.kafka_name))
        object.__setattr__(self, "json_name", camel_case(self.kafka_name))

    def in_version(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]


@dataclass(frozen=True, slots=True)
class RecordTypeSpec:
    """A record type: metadata records have an ``api_key``; control records a ``control_type``."""

    name: str
    versions: tuple[int, int]
    fields: tuple[FieldSpec, ...]
    api_key: int | None = None
    control_type: int | None = None
    flexible: bool = True
    by_name: Mapping[str, FieldSpec] = field(default_factory=dict, compare=False, repr=False)

    @property
    def json_type(self) -> str:
        """``MetadataRecordType`` enum name: ``PartitionRecord`` -> ``PARTITION_RECORD``."""
        return snake_case(self.name).upper()

def _struct_default(fields: tuple[FieldSpec, ...]) -> Mapping[str, Any]:
    return MappingProxyType({f.name: f.default for f in fields})


def F(
    name: str,
    type_: str,
    v: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    default: Any = ...,
    fields: tuple[FieldSpec, ...] = (),
) -> FieldSpec:
    """Declare a field; omitted ``default`` means Kafka's type default."""
    if default is ...:
        if type_.startswith("[]"):
            default = ()
        elif type_ == "struct":
            default = _struct_default(fields)
        else:
            default = _TYPE_DEFAULTS[type_]
    return FieldSpec(name, type_, _range(v), _range(nullable) if nullable else None, tag, default, fields)


def _record(name: str, versions: str, *fields: FieldSpec, api_key=None, control_type=None, flexible=True):
    return RecordTypeSpec(
        name, _range(versions), tuple(fields), api_key, control_type, flexible,
        MappingProxyType({f.name: f for f in fields}),
    )  # fmt: skip


NULL = None
_ENDPOINT = (F("Name", "string"), F("Host", "string"), F("Port", "uint16"), F("SecurityProtocol", "int16"))
_FEATURE = (F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))
_INT32S = "[]int32"

_METADATA = (
    _record(
        "RegisterBrokerRecord", "0-4",
        F("BrokerId", "int32"),
        F("IsMigratingZkBroker", "bool", "2+"),
        F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"),
        F("EndPoints", "[]struct", fields=_ENDPOINT),
        F("Features", "[]struct", fields=_FEATURE),
        F("Rack", "string", nullable="0+"),
        F("Fenced", "bool", default=True),
        F("InControlledShutdown", "bool", "1+"),
        F("LogDirs", "[]uuid", "3+", tag=0),
        F("CordonedLogDirs", "[]uuid", "4+", nullable="4+", tag=1, default=NULL),  # Kafka 4.3 (checked on its jar)
        api_key=0,
    ),
    _record("UnregisterBrokerRecord", "0", F("BrokerId", "int32"), F("BrokerEpoch", "int64"), api_key=1),
    _record("TopicRecord", "0", F("Name", "string"), F("TopicId", "uuid"), api_key=2),
    _record(
        "PartitionRecord", "0-2",
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Replicas", _INT32S),
        F("Isr", _INT32S),
        F("RemovingReplicas", _INT32S),
        F("AddingReplicas", _INT32S),
        F("Leader", "int32", default=-1),
        F("LeaderRecoveryState", "int8", tag=0),
        F("LeaderEpoch", "int32", default=-1),
        F("PartitionEpoch", "int32", default=-1),
        F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", _INT32S, "2+", nullable="2+", tag=1, default=NULL),
        F("LastKnownElr", _INT32S, "2+", nullable="2+", tag=2, default=NULL),
        api_key=3,
    ),
    _record(
        "ConfigRecord", "0",
        F("ResourceType", "int8"),
        F("ResourceName", "string"),
        F("Name", "string"),
        F("Value", "string", nullable="0+"),
        api_key=4,
    ),
    _record(
        "PartitionChangeRecord", "0-2",
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Isr", _INT32S, nullable="0+", tag=0, default=NULL),
        F("Leader", "int32", tag=1, default=-2),
        F("Replicas", _INT32S, nullable="0+", tag=2, default=NULL),
        F("RemovingReplicas", _INT32S, nullable="0+", tag=3, default=NULL),
        F("AddingReplicas", _INT32S, nullable="0+", tag=4, default=NULL),
        F("LeaderRecoveryState", "int8", tag=5, default=-1),
        F("Directories", "[]uuid", "1+", nullable="1+", tag=8, default=NULL),
        F("EligibleLeaderReplicas", _INT32S, "2+", nullable="2+", tag=6, default=NULL),
        F("LastKnownElr", _INT32S, "2+", nullable="2+", tag=7, default=NULL),
        api_key=5,
    ),
    _record("FenceBrokerRecord", "0", F("Id", "int32"), F("Epoch", "int64"), api_key=7),
    _record("UnfenceBrokerRecord", "0", F("Id", "int32"), F("Epoch", "int64"), api_key=8),
    _record("RemoveTopicRecord", "0", F("TopicId", "uuid"), api_key=9),
    _record(
        "DelegationTokenRecord", "0",
        F("Owner", "string"),
        F("Requester", "string"),
        F("Renewers", "[]string"),
        F("IssueTimestamp", "int64"),
        F("MaxTimestamp", "int64"),
        F("ExpirationTimestamp", "int64"),
        F("TokenId", "string"),
        api_key=10,
    ),
    _record(
        "UserScramCredentialRecord", "0",
        F("Name", "string"),
        F("Mechanism", "int8"),
        F("Salt", "bytes"),
        F("StoredKey", "bytes"),
        F("ServerKey", "bytes"),
        F("Iterations", "int32"),
        api_key=11,
    ),
    _record("FeatureLevelRecord", "0", F("Name", "string"), F("FeatureLevel", "int16"), api_key=12),
    _record(
        "ClientQuotaRecord", "0",
        F("Entity", "[]struct", fields=(F("EntityType", "string"), F("EntityName", "string", nullable="0+"))),
        F("Key", "string"),
        F("Value", "float64"),
        F("Remove", "bool"),
        api_key=14,
    ),
    _record(
        "ProducerIdsRecord", "0",
        F("BrokerId", "int32"), F("BrokerEpoch", "int64", default=-1), F("NextProducerId", "int64"),
        api_key=15,
    ),
    _record(
        "BrokerRegistrationChangeRecord", "0-3",
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64"),
        F("Fenced", "int8", tag=0),
        F("InControlledShutdown", "int8", "1+", tag=1),
        F("LogDirs", "[]uuid", "2+", tag=2),
        F("CordonedLogDirs", "[]uuid", "3+", nullable="3+", tag=3, default=NULL),  # Kafka 4.3 (checked on its jar)
        api_key=17,
    ),
    _record(
        "AccessControlEntryRecord", "0",
        F("Id", "uuid"),
        F("ResourceType", "int8"),
        F("ResourceName", "string"),
        F("PatternType", "int8"),
        F("Principal", "string"),
        F("Host", "string"),
        F("Operation", "int8"),
        F("PermissionType", "int8"),
        api_key=18,
    ),
    _record("RemoveAccessControlEntryRecord", "0", F("Id", "uuid"), api_key=19),
    _record("NoOpRecord", "0", api_key=20),
    _record("ZkMigrationStateRecord", "0", F("ZkMigrationState", "int8"), api_key=21),
    _record("RemoveUserScramCredentialRecord", "0", F("Name", "string"), F("Mechanism", "int8"), api_key=22),
    _record("BeginTransactionRecord", "0", F("Name", "string", nullable="0+", tag=0, default=NULL), api_key=23),
    _record("EndTransactionRecord", "0", api_key=24),
    _record("AbortTransactionRecord", "0", F("Reason", "string", nullable="0+", tag=0, default=NULL), api_key=25),
    _record("RemoveDelegationTokenRecord", "0", F("TokenId", "string"), api_key=26),
    _record(
        "RegisterControllerRecord", "0",
        F("ControllerId", "int32"),
        F("IncarnationId", "uuid"),
        F("ZkMigrationReady", "bool"),
        F("EndPoints", "[]struct", fields=_ENDPOINT),
        F("Features", "[]struct", fields=_FEATURE),
        api_key=27,
    ),
    _record("ClearElrRecord", "0", F("TopicName", "string"), api_key=28),
)  # fmt: skip

_VOTER_V0 = (F("VoterId", "int32"), F("VoterDirectoryId", "uuid", "1+"))
_CONTROL = (
    # Transaction markers are not flexible: int16 version, int32 coordinator epoch (EndTransactionMarker.java).
    _record("EndTxnMarker", "0", F("Version", "int16"), F("CoordinatorEpoch", "int32"), control_type=0, flexible=False),
    _record("EndTxnMarker", "0", F("Version", "int16"), F("CoordinatorEpoch", "int32"), control_type=1, flexible=False),
    _record(
        "LeaderChangeMessage", "0-1",
        F("Version", "int16"),
        F("LeaderId", "int32"),
        F("Voters", "[]struct", fields=_VOTER_V0),
        F("GrantingVoters", "[]struct", fields=_VOTER_V0),
        control_type=2,
    ),
    _record(
        "SnapshotHeaderRecord", "0", F("Version", "int16"), F("LastContainedLogTimestamp", "int64"), control_type=3
    ),
    _record("SnapshotFooterRecord", "0", F("Version", "int16"), control_type=4),
    _record("KRaftVersionRecord", "0", F("Version", "int16"), F("KRaftVersion", "int16"), control_type=5),
    _record(
        "VotersRecord", "0",
        F("Version", "int16"),
        F(
            "Voters", "[]struct",
            fields=(
                F("VoterId", "int32"),
                F("VoterDirectoryId", "uuid"),
                F("Endpoints", "[]struct", fields=(F("Name", "string"), F("Host", "string"), F("Port", "uint16"))),
                F(
                    "KRaftVersionFeature", "struct",
                    fields=(F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")),
                ),
            ),
        ),
        control_type=6,
    ),
)  # fmt: skip

METADATA_RECORD_TYPES: Mapping[int, RecordTypeSpec] = MappingProxyType({t.api_key: t for t in _METADATA})
"""apiKey -> schema, for every metadata record type this project decodes."""

CONTROL_RECORD_TYPES: Mapping[int, RecordTypeSpec] = MappingProxyType({t.control_type: t for t in _CONTROL})
"""Control record type id (``ControlRecordType``) -> schema of its value, read at version 0."""

CONTROL_TYPE_NAMES: Mapping[int, str] = MappingProxyType(
    {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION",
     6: "KRAFT_VOTERS"}
)  # fmt: skip
