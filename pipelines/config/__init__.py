"""Configuration models and loading."""

from pipelines.config.duration import parse_duration_ms
from pipelines.config.load import config_from_dict, load_config
from pipelines.config.models import AppConfig, BrokerConfig, DetectConfig, ExecutorConfig, PolicyConfig

__all__ = [
    "AppConfig", "BrokerConfig", "DetectConfig", "ExecutorConfig", "PolicyConfig", "config_from_dict", "load_config",
    "parse_duration_ms",
]
