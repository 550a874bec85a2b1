"""How a problem reads in the crawl tables' ``problems`` column."""

from __future__ import annotations

from pipelines.kafka.problems import Problem


def test_text_names_severity_code_place_and_message() -> None:
    p = Problem("info", "index_without_log", "1 index file set(s) without their .log", "/data/orders-0")
    assert str(p) == "info: index_without_log [/data/orders-0]: 1 index file set(s) without their .log"
    expected = "info: index_without_log [orders-0]: 1 index file set(s) without their .log"
    assert p.text_at("orders-0") == str(p.at("orders-0")) == expected
    assert p.text_at("") == str(p.at("")) == "info: index_without_log: 1 index file set(s) without their .log"
