"""The config's entry for the broker a command acts on, or one line saying which brokers it lists instead."""

from __future__ import annotations

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.errors import PreconditionFailed


def broker_config(config: AppConfig, broker_id: int) -> BrokerConfig:
    """``brokers[]`` entry of ``broker_id``. Raises PreconditionFailed naming the ids the config lists."""
    for b in config.brokers:
        if b.broker_id == broker_id:
            return b
    listed = ", ".join(str(b.broker_id) for b in config.brokers)
    fix = f"add broker {broker_id} under `brokers:` with its log dirs"
    raise PreconditionFailed(f"broker {broker_id} is not in the config's brokers "
                             + (f"(it lists {listed}): give this host's broker id with --broker, or {fix}" if listed
                                else f"(it lists none): {fix}"))
