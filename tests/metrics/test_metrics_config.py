"""The ``metrics:`` config section: bad values are one line naming the key."""

from __future__ import annotations

import pytest

from pipelines.config import config_from_dict
from pipelines.errors import ConfigError


def _load(**metrics: object):
    return config_from_dict({"cluster": "c", "warehouse": "/w", "metrics": metrics}, origin="test")


@pytest.mark.parametrize(("metrics", "words"), [
    ({"pushgateway_url": "pushgateway:9091"}, "metrics.pushgateway_url"),
    ({"pushgateway_url": "ftp://host:9091"}, "http:// or https://"),
    ({"pushgateway_url": "http://host:9091/?x=1"}, "query"),
    ({"pushgateway_job": "logdir-gc"}, "metrics.pushgateway_job"),
    ({"textfile_dir": "relative/dir"}, "absolute local directory"),
    ({"textfile_dir": "s3://bucket/dir"}, "metrics.textfile_dir"),
    ({"push_timeout_s": 0}, "metrics.push_timeout_s"),
    ({"pushgateway": "http://x"}, "metrics.pushgateway"),
])
def test_bad_metrics_config_is_one_line(metrics: dict, words: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _load(**metrics)
    assert words in str(exc.value) and len(str(exc.value).splitlines()) == 1


def test_defaults_and_normalised_url() -> None:
    assert _load().metrics.pushgateway_url is None and _load().metrics.textfile_dir is None
    assert _load(pushgateway_url="https://gw.example:9091/").metrics.pushgateway_url == "https://gw.example:9091"
