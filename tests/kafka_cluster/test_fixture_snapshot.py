"""Fast checks on a snapshot of a real KRaft cluster (``tests/fixtures/kraft-cluster``, made by ``make_fixture.py``
from Apache Kafka's jars): no JVM needed. ``truth.json`` records what the generator did, not what our code says."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pipelines.config.models import BrokerConfig, DetectConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.kafka.metadata_codec import control_to_json_dict, to_json_dict
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import load_metadata
from pipelines.plan.recheck import DirFacts, classify, live_copies

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kraft-cluster"
if not (FIXTURE / "truth.json").is_file():
    pytest.skip("tests/fixtures/kraft-cluster absent (make_fixture.py)", allow_module_level=True)
TRUTH: dict[str, Any] = json.loads((FIXTURE / "truth.json").read_text())
METADATA = FIXTURE / "controller" / "__cluster_metadata-0"


def _as_uuid(dashed: str) -> Uuid:
    return Uuid.from_bytes(uuid.UUID(dashed).bytes)


def _broker_classes(broker_id: int) -> dict[str, str]:
    dirs = sorted(str(p) for p in (FIXTURE / f"broker{broker_id}").iterdir() if p.is_dir())
    crawl = crawl_local([BrokerConfig(broker_id=broker_id, log_dirs=tuple(dirs))], run_id="fx", cluster="fx")
    assert not crawl.errors, crawl.errors
    dir_ids = {r["log_dir"]: r["directory_id"] for r in crawl.log_dirs}
    facts = [DirFacts.from_partition_dir(r, dir_ids[r["log_dir"]]) for r in crawl.partition_dirs]
    image = load_metadata(str(METADATA)).image
    # git checkout stamps every file with the checkout time, so judge ages as of the newest dir in the snapshot,
    # not the wall clock (a tree checked out an hour ago would otherwise see its -delete dirs as stuck)
    now = max((f.dir_mtime for f in facts if f.dir_mtime is not None), default=datetime.now(timezone.utc))
    return {f.dir_name: classify(f, image, copies=live_copies(facts), config=DetectConfig(), now=now)[0]
            for f in facts}


def test_the_replayed_image_is_complete_and_has_kafkas_topic_ids() -> None:
    result = load_metadata(str(METADATA))
    assert result.image.complete and not result.errors, (result.image.incomplete_reasons, result.errors)
    ids = {name: str(t.topic_id) for name, t in result.image.topics.by_name.items()}
    assert ids == {name: str(_as_uuid(d)) for name, d in TRUTH["topic_ids_after"].items()}
    assert ids["t"] != str(_as_uuid(TRUTH["topic_ids_before"]["t"]))
    assert set(result.image.brokers) == {1, 2, 3}


def test_broker_3_stale_dirs_are_what_the_generator_made_them() -> None:
    seen = _broker_classes(3)
    for name, expected in TRUTH["stale_on_broker_3"].items():
        assert seen[name] == expected, name
    for name in TRUTH["live_on_broker_3"]:
        assert seen[name] == C.OK, name
    plannable = {n for n, c in seen.items() if C.is_plannable(c, C.is_protected(n.rpartition("-")[0], None))}
    assert plannable == set(TRUTH["stale_on_broker_3"])


@pytest.mark.parametrize("broker_id", [1, 2])
def test_brokers_that_stayed_up_hold_no_garbage(broker_id: int) -> None:
    seen = _broker_classes(broker_id)
    assert seen and not {n: c for n, c in seen.items() if c in C.GARBAGE_CLASSES}


def _kafka_dump(path: Path) -> tuple[dict[int, Any], dict[int, Any]]:
    data: dict[int, Any] = {}
    control: dict[int, Any] = {}
    for line in path.read_text().splitlines():
        if line.startswith("| offset: "):
            offset = int(line.split()[2])
            if " payload: " in line:
                data[offset] = json.loads(line.split(" payload: ", 1)[1])
            else:
                _name, _, body = line.split("headerKeys: [] ", 1)[1].partition(": ")
                control[offset] = json.loads(body) if body.startswith("{") else body
    return data, control


@pytest.mark.parametrize("dump", sorted((FIXTURE / "dump-log").glob("*.txt")), ids=lambda p: p.stem)
def test_decoder_equals_kafkas_dump_log_record_by_record(dump: Path) -> None:
    theirs, their_control = _kafka_dump(dump)
    ours: dict[int, Any] = {}
    our_control: dict[int, Any] = {}
    log = iter_metadata_log((METADATA / dump.stem).read_bytes())
    for entry in log:
        if entry.is_control:
            our_control[entry.offset] = control_to_json_dict(entry.record)
        else:
            ours[entry.offset] = to_json_dict(entry.record)
    assert not log.errors
    assert ours == theirs
    assert set(our_control) == set(their_control)
    assert {o: v for o, v in our_control.items() if isinstance(their_control[o], dict)} == \
        {o: v for o, v in their_control.items() if isinstance(v, dict)}
    assert len(theirs) > 20
