"""Config validation: good files load; each bad value is refused with one line naming the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import config_from_dict, load_config, parse_duration_ms
from pipelines.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
BASE = {"cluster": "c1", "warehouse": "/tmp/w"}


def test_example_config_loads() -> None:
    cfg = load_config(REPO / "conf" / "example.yaml")
    assert cfg.cluster == "prod-eu-1"
    assert [b.broker_id for b in cfg.brokers] == [1, 2, 3]
    assert cfg.detect.grace_ms == 24 * 3_600_000
    assert cfg.policy.plan_expiry_ms == 7 * 86_400_000


@pytest.mark.parametrize(
    ("text", "ms"), [("90s", 90_000), ("15m", 900_000), ("24h", 86_400_000), ("7d", 604_800_000), ("250", 250)]
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"cluster": ""}, "cluster"),
        ({"colour": "blue"}, "colour"),
        ({"brokers": [{"broker_id": 1, "log_dirs": []}]}, "brokers.0.log_dirs"),
        ({"brokers": [{"broker_id": 1, "log_dirs": ["/a"]}, {"broker_id": 1, "log_dirs": ["/b"]}]}, "only once"),
        ({"detect": {"grace_ms": "5m"}}, "floor"),
        ({"policy": {"min_grace_ms": "10m"}}, "floor"),
        ({"policy": {"approvals_required": 0}}, "policy.approvals_required"),
        ({"policy": {"plan_expiry_ms": "seven days"}}, "not a duration"),
        ({"metadata": {"kind": "metadata_log"}}, "metadata.source is required"),
        ({"metadata": {"kind": "admin"}}, "bootstrap_servers"),
    ],
)
def test_rejections_name_the_problem(patch: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict({**BASE, **patch})
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just a string\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(scalar)
