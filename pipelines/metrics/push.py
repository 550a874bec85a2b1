"""Pushing a run's metrics to a Prometheus Pushgateway (prometheus_client's client, one HTTP request).

A completed run replaces its group (``PUT``: series of brokers or classes that disappeared go with it); a failed run
only updates the metrics it carries (``POST``), so the group keeps the last success time. The group is
``job=<metrics.pushgateway_job>, cluster=<cluster>``.
"""

from __future__ import annotations

from prometheus_client.exposition import push_to_gateway, pushadd_to_gateway

from pipelines.config.metrics_config import MetricsConfig
from pipelines.metrics.families import Families


class PushFailed(Exception):
    """The Pushgateway could not be reached or refused the push (the message says which)."""


def push(config: MetricsConfig, cluster: str, families: Families, *, replace: bool) -> str:
    """Push ``families``; returns the group's URL. Raises :class:`PushFailed` (one line) on any failure."""
    assert config.pushgateway_url is not None
    send = push_to_gateway if replace else pushadd_to_gateway
    try:
        send(config.pushgateway_url, job=config.pushgateway_job, registry=families.registry(),
             grouping_key={"cluster": cluster}, timeout=config.push_timeout_s)
    except OSError as exc:  # urllib's URLError and HTTPError are OSErrors
        raise PushFailed(f"push to {config.pushgateway_url} failed: {exc}") from None
    return f"{config.pushgateway_url}/metrics/job/{config.pushgateway_job}/cluster/{cluster}"
