"""Reading metrics text back with prometheus_client's parser (what Prometheus, node_exporter and the Pushgateway
accept), for the metrics tests."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[dict[str, str], Samples]:
    """(family name → type, samples keyed by (sample name, labels)); raises on text Prometheus would reject."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return types, samples


def value(samples: Samples, name: str, **labels: object) -> float | None:
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def select(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}
