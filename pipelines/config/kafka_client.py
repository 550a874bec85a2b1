"""How the product connects to a live Kafka cluster as a client: TLS and SASL settings, secrets by environment.

Used by ``remote_tier.metadata.kafka_client`` (reading ``__remote_log_metadata`` live). Secrets are never written in
the config: ``sasl_password_env`` and ``ssl_password_env`` name environment variables, as ``zookeeper_tls`` and
``zookeeper_auth`` do. :func:`kafka_python_options` turns the section into kafka-python's keyword arguments.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipelines.errors import ConfigError

__all__ = ["KafkaClientConfig", "env_secret", "kafka_python_options"]


class KafkaClientConfig(BaseModel):
    """A Kafka client's connection settings (kafka-python's names, without the secrets)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"] | None = None
    sasl_username: str | None = None
    sasl_password_env: str | None = Field(default=None, description="environment variable holding the password")
    sasl_kerberos_service_name: str | None = Field(default=None, description="GSSAPI service name (default kafka)")
    ssl_cafile: str | None = Field(default=None, description="PEM file of the CAs to trust")
    ssl_certfile: str | None = Field(default=None, description="PEM client certificate (mutual TLS)")
    ssl_keyfile: str | None = Field(default=None, description="PEM client key (mutual TLS)")
    ssl_password_env: str | None = Field(default=None, description="environment variable holding the key password")
    ssl_check_hostname: bool = True
    request_timeout_ms: int = Field(default=30_000, ge=1_000, description="per request, and to reach the cluster")

    @model_validator(mode="after")
    def _consistent(self) -> KafkaClientConfig:
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and self.sasl_mechanism is None:
            raise ValueError(f"security_protocol {self.security_protocol} needs sasl_mechanism")
        if not sasl and self.sasl_mechanism is not None:
            raise ValueError(f"sasl_mechanism is set but security_protocol {self.security_protocol} is not SASL_*")
        if self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and not (
                self.sasl_username and self.sasl_password_env):
            raise ValueError(f"sasl_mechanism {self.sasl_mechanism} needs sasl_username and sasl_password_env")
        return self


def env_secret(env: str | None, what: str) -> str | None:
    """The value of the environment variable ``env`` (None when no variable is named); ``what`` names the config
    key in the error. Raises ConfigError when the variable is not set."""
    if env is None:
        return None
    value = os.environ.get(env)
    if value is None:
        raise ConfigError(f"{what}: environment variable {env} is not set")
    return value


def kafka_python_options(config: KafkaClientConfig, where: str) -> dict[str, Any]:
    """kafka-python keyword arguments (``KafkaAdminClient``, ``KafkaConsumer``, its network client) for ``config``.

    Raises:
        ConfigError: a ``*_env`` variable is not set (``where`` names the config section).
    """
    options: dict[str, Any] = {"security_protocol": config.security_protocol,
                               "request_timeout_ms": config.request_timeout_ms,
                               "bootstrap_timeout_ms": config.request_timeout_ms}
    if config.sasl_mechanism is not None:
        options["sasl_mechanism"] = config.sasl_mechanism
        if config.sasl_username is not None:
            options["sasl_plain_username"] = config.sasl_username
        password = env_secret(config.sasl_password_env, f"{where}.sasl_password_env")
        if password is not None:
            options["sasl_plain_password"] = password
        if config.sasl_kerberos_service_name is not None:
            options["sasl_kerberos_service_name"] = config.sasl_kerberos_service_name
    if config.security_protocol in ("SSL", "SASL_SSL"):
        options.update(ssl_cafile=config.ssl_cafile, ssl_certfile=config.ssl_certfile, ssl_keyfile=config.ssl_keyfile,
                       ssl_check_hostname=config.ssl_check_hostname,
                       ssl_password=env_secret(config.ssl_password_env, f"{where}.ssl_password_env"))
    return options
