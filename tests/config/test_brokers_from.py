"""``brokers_from``: a fleet's brokers derived from the controller metadata's broker ids and URL templates."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipelines.config import config_from_dict, load_config
from pipelines.errors import ConfigError
from pipelines.metadata import EMPTY
from pipelines.metadata.image import BrokerImage
from pipelines.orchestrate.controller import ControllerView
from pipelines.orchestrate.fleet import with_fleet
from pipelines.simulate import PRESETS, ClusterSpec, generate

BASE = {"cluster": "c1", "warehouse": "/tmp/w", "metadata": {"kind": "metadata_log", "source": "/m"}}


def test_a_thousand_brokers_in_three_lines_of_yaml(tmp_path: Path) -> None:
    text = """
cluster: fleet
warehouse: /data/warehouse
metadata: {kind: metadata_log, source: /meta/__cluster_metadata-0}
brokers_from:
  log_dirs: ["sftp://kafka-{broker_id}.example/var/lib/kafka/data-0", "sftp://kafka-{broker_id}.example/data-1"]
  storage_options: {username: kafka-gc, key_filename: /etc/logdir-gc/id_ed25519}
"""
    (tmp_path / "fleet.yaml").write_text(text)
    config = load_config(tmp_path / "fleet.yaml")
    brokers = {i: BrokerImage(i, epoch=1, fenced=i % 100 == 0, in_controlled_shutdown=False) for i in range(1, 1001)}
    view = ControllerView(EMPTY.__class__(brokers=brokers), (), "test image")
    expanded, same_view = with_fleet(config, view)
    assert same_view is view
    assert [b.broker_id for b in expanded.brokers] == list(range(1, 1001))
    b500 = expanded.brokers[499]
    assert b500.log_dirs == ("sftp://kafka-500.example/var/lib/kafka/data-0", "sftp://kafka-500.example/data-1")
    assert b500.storage_options == {"username": "kafka-gc", "key_filename": "/etc/logdir-gc/id_ed25519"}
    assert b500.inventory is None


def test_brokers_come_from_a_real_metadata_log_and_listed_brokers_keep_their_entry(tmp_path: Path) -> None:
    result = generate(ClusterSpec(brokers=3, jbod_dirs=2, anomalies=PRESETS["none"]), tmp_path / "sim", force=True)
    simulated = yaml.safe_load(Path(result.config_path).read_text())
    root = tmp_path / "sim"
    data = {**simulated, "brokers": [{"broker_id": 2, "log_dirs": ["/elsewhere/b2"]}],
            "brokers_from": {"log_dirs": [f"{root}/broker-{{broker_id}}/data-0", f"{root}/broker-{{broker_id}}/data-1"],
                             "inventory": "s3://inventories/kafka-{broker_id}.jsonl.gz"}}
    expanded, view = with_fleet(config_from_dict(data))
    assert view is not None and view.image.complete
    by_id = {b.broker_id: b for b in expanded.brokers}
    assert sorted(by_id) == [1, 2, 3]
    assert by_id[2].log_dirs == ("/elsewhere/b2",) and by_id[2].inventory is None
    want = {b["broker_id"]: tuple(b["log_dirs"]) for b in simulated["brokers"]}
    assert by_id[1].log_dirs == want[1] and by_id[3].log_dirs == want[3]
    assert by_id[3].inventory == "s3://inventories/kafka-3.jsonl.gz"


def test_without_brokers_from_nothing_is_loaded() -> None:
    config = config_from_dict({**BASE, "brokers": [{"broker_id": 1, "log_dirs": ["/d"]}]})
    assert with_fleet(config) == (config, None)


@pytest.mark.parametrize(("brokers_from", "extra", "fragment"), [
    ({"log_dirs": ["sftp://kafka-{id}.example/data"]}, {}, "only {broker_id} can be replaced, not {id}"),
    ({"log_dirs": ["sftp://kafka-{broker_id.example/data"]}, {}, "brokers_from.log_dirs"),
    ({"log_dirs": ["/var/lib/kafka/data"]}, {}, "every broker would crawl the same URL"),
    ({"log_dirs": ["/var/lib/kafka/data"], "inventory": "s3://b/inventory.jsonl"}, {}, "must contain {broker_id}"),
    ({"log_dirs": []}, {}, "brokers_from.log_dirs"),
    ({"log_dirs": ["/k{broker_id}"], "hosts": 3}, {}, "brokers_from.hosts"),
    ({"log_dirs": ["/k{broker_id}"]}, {"metadata": {"kind": "none"}}, "brokers_from needs a controller metadata"),
])
def test_bad_templates_are_one_line_naming_the_key(brokers_from: dict, extra: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config_from_dict({**BASE, **extra, "brokers_from": brokers_from})
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_a_shared_path_is_fine_with_an_inventory_per_broker() -> None:
    config = config_from_dict({**BASE, "brokers_from": {"log_dirs": ["/var/lib/kafka/data"],
                                                         "inventory": "s3://b/kafka-{broker_id}.parquet"}})
    assert config.brokers_from is not None
    assert config.brokers_from.broker(7)["inventory"] == "s3://b/kafka-7.parquet"


def test_the_documented_fleet_example_is_a_valid_config() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    start = readme.index("```yaml\nbrokers_from:") + len("```yaml\n")
    block = yaml.safe_load(readme[start:readme.index("```", start)])
    config = config_from_dict({**BASE, **block})
    assert config.brokers_from is not None and len(readme[start:readme.index("```", start)].splitlines()) == 3
    assert config.brokers_from.broker(1000)["log_dirs"] == ["sftp://kafka-1000.example/var/lib/kafka/data"]
