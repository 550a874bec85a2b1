"""The ``remote_tier:`` config section: defaults, and every bad value one config line with exit code 4."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipelines.cli.main import main
from pipelines.config.load import config_from_dict
from pipelines.errors import ConfigError

BASE = {"cluster": "c1", "warehouse": "/w"}


def _tier(**kw) -> dict:
    return {**BASE, "remote_tier": {"layout": "aiven", "location": "s3://tier-bucket/kafka", **kw}}


def test_unset_means_no_remote_tier_and_defaults_are_safe() -> None:
    assert config_from_dict(dict(BASE)).remote_tier is None
    tier = config_from_dict(_tier()).remote_tier
    assert tier.owned_prefix is None  # nothing planned until the operator claims a prefix
    assert tier.plan_untracked is False
    assert tier.quarantine_prefix == "s3://tier-bucket/kafka/.logdir-gc-quarantine/"
    assert tier.relative_quarantine() == ".logdir-gc-quarantine/"
    assert tier.metadata.source is None and tier.metadata.bootstrap_servers is None
    assert config_from_dict(_tier(owned_prefix="cluster-a")).remote_tier.owned_prefix == "cluster-a/"


@pytest.mark.parametrize(("tier", "fragment"), [
    ({"layout": "hdfs"}, "remote_tier.layout"),
    ({"location": "ftp://host/x"}, "scheme 'ftp'"),
    ({"location": "s3:///no-bucket"}, "names no bucket"),
    ({"location": "/tier/../etc"}, "'..'"),
    ({"layout": "local_tiered_storage", "location": "/rsm", "prefix": "p/"}, "has none"),
    ({"location": "/rsm", "inventory_manifest": "s3://inv/manifest.json"}, "inventory_manifest"),
    ({"owned_prefix": "../other-cluster"}, "owned_prefix"),
    ({"owned_prefix": "/abs"}, "owned_prefix"),
    ({"owned_prefix": ""}, "must name a folder"),
    ({"prefix": "/abs"}, "prefix"),
    ({"quarantine_prefix": "/local/q"}, "quarantine_prefix"),
    ({"metadata": {"source": "/copy", "bootstrap_servers": "h:9092"}}, "at most one"),
    ({"metadata": {"bootstrap_servers": "no-port"}}, "bootstrap_servers"),
    ({"metadata": {"source": "/copy", "kafka_client": {"security_protocol": "SSL"}}}, "needs bootstrap_servers"),
    ({"metadata": {"bootstrap_servers": "h:9092", "kafka_client": {"security_protocol": "SASL_SSL"}}},
     "needs sasl_mechanism"),
    ({"metadata": {"bootstrap_servers": "h:9092", "kafka_client": {"security_protocol": "SASL_SSL",
                                                                    "sasl_mechanism": "PLAIN"}}},
     "needs sasl_username and sasl_password_env"),
    ({"metadata": {"bootstrap_servers": "h:9092", "kafka_client": {"sasl_password": "inline"}}}, "sasl_password"),
    ({"plan_untracked": "perhaps"}, "plan_untracked"),
    ({"unknown_key": 1}, "unknown_key"),
])
def test_bad_values_are_one_config_line(tier: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as exc:
        config_from_dict(_tier(**tier))
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_the_cli_exits_4_with_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**_tier(owned_prefix="../x"), "warehouse": str(tmp_path / "w")}))
    with pytest.raises(SystemExit) as exc:
        main(["run", "--config", str(path)])
    err = capsys.readouterr().err
    assert exc.value.code == 4
    assert "owned_prefix" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
