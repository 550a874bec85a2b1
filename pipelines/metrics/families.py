"""Metric families with their samples, rendered in Prometheus' text format by prometheus_client."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from pipelines.metrics.catalog import MetricSpec


class Families:
    """Samples by metric; a collector for a private registry (nothing global)."""

    def __init__(self) -> None:
        self._samples: dict[MetricSpec, dict[tuple[str, ...], float]] = {}

    def set(self, spec: MetricSpec, value: float, **labels: object) -> None:
        """Set one sample; ``labels`` names every label of ``spec`` (``cluster`` included)."""
        key = tuple(str(labels[name]) for name in spec.labels)
        self._samples.setdefault(spec, {})[key] = float(value)

    def add(self, spec: MetricSpec, value: float, **labels: object) -> None:
        key = tuple(str(labels[name]) for name in spec.labels)
        series = self._samples.setdefault(spec, {})
        series[key] = series.get(key, 0.0) + float(value)

    def samples(self, spec: MetricSpec) -> Mapping[tuple[str, ...], float]:
        return self._samples.get(spec, {})

    def collect(self) -> Iterator[Metric]:
        for spec, series in self._samples.items():
            if spec.kind == "counter":
                family: Metric = CounterMetricFamily(spec.name.removesuffix("_total"), spec.help,
                                                     labels=list(spec.labels))
            else:
                family = GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))
            for key, value in sorted(series.items()):
                family.add_metric(list(key), value)
            yield family

    def registry(self) -> CollectorRegistry:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return registry

    def text(self) -> str:
        return generate_latest(self.registry()).decode("utf-8")
