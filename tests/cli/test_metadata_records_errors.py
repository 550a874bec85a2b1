"""``logdir-gc metadata show --records`` must not hide records it could not decode.

Found with a real Kafka 4.3.1 cluster (tests/kafka_cluster): before RegisterBrokerRecord v4 was in the schema, the
dump stopped at the first v4 record, printed the 12 records before it and exited 0 with an empty stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli.main import main
from pipelines.kafka.record_batch import encode_batch

NO_OP_V0 = b"\x01\x14\x00\x00"  # frame version 1, api key 20 (NoOpRecord), version 0, no tagged fields
NO_OP_V99 = b"\x01\x14\x63\x00"  # the same record at a version no release has


def test_records_dump_reports_an_undecodable_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(encode_batch([NO_OP_V0], 0, epoch=1, timestamp_ms=1000)
                    + encode_batch([NO_OP_V99], 1, epoch=1, timestamp_ms=1001))
    with pytest.raises(SystemExit) as exc:
        main(["metadata", "show", str(log), "--records"])
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert exc.value.code == 8 and "offset 1" in err
