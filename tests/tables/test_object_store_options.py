"""The standard AWS variables, a profile and ``warehouse_storage_options`` become each engine's settings."""

from __future__ import annotations

from pathlib import Path

from pipelines.crawl.tasks import redacted_config_json
from pipelines.tables.object_store import redact, warehouse_storage

ENV = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "AKIAENV",
       "AWS_SECRET_ACCESS_KEY": "envsecret1", "AWS_REGION": "eu-west-1"}


def test_a_local_warehouse_needs_no_settings() -> None:
    storage = warehouse_storage("/data/wh", env=ENV)
    assert not storage.is_object_store and not storage.delta_rs and not storage.hadoop


def test_the_aws_variables_alone_configure_all_three_clients() -> None:
    storage = warehouse_storage("s3://bucket/wh", env=ENV)
    assert storage.delta_rs["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert storage.delta_rs["AWS_ALLOW_HTTP"] == "true"  # delta-rs refuses plain http otherwise
    assert storage.delta_rs["AWS_SECRET_ACCESS_KEY"] == "envsecret1"
    assert storage.fsspec["client_kwargs"] == {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"}
    assert storage.hadoop["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert storage.hadoop["fs.s3a.path.style.access"] == "true"  # custom endpoint: path-style addressing
    assert storage.hadoop["fs.s3a.connection.ssl.enabled"] == "false"
    assert storage.hadoop["fs.s3a.endpoint.region"] == "eu-west-1"
    # env credentials are left to s3a's own environment provider: no secret in the Hadoop settings
    assert not storage.hadoop_secrets and "envsecret1" not in str(storage.hadoop)
    assert storage.secrets == ("envsecret1",)


def test_aws_itself_uses_virtual_hosted_addressing() -> None:
    storage = warehouse_storage("s3://bucket/wh", env={"AWS_REGION": "us-east-1"})
    assert storage.hadoop["fs.s3a.path.style.access"] == "false" and "fs.s3a.endpoint" not in storage.hadoop
    assert "AWS_ALLOW_HTTP" not in storage.delta_rs


def test_config_options_win_over_the_environment_and_keep_credentials_together() -> None:
    given = {"aws_access_key_id": "AKIACONF", "aws_secret_access_key": "confsecret",
             "AWS_ENDPOINT_URL": "https://minio.internal:9000"}
    storage = warehouse_storage("s3://bucket/wh", given, env=ENV)
    assert storage.delta_rs["AWS_ACCESS_KEY_ID"] == "AKIACONF"
    assert storage.delta_rs["AWS_SECRET_ACCESS_KEY"] == "confsecret"
    assert storage.hadoop["fs.s3a.connection.ssl.enabled"] == "true" and "AWS_ALLOW_HTTP" not in storage.delta_rs
    assert storage.hadoop_secrets == {"fs.s3a.access.key": "AKIACONF", "fs.s3a.secret.key": "confsecret"}
    assert storage.hadoop["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert "confsecret" in storage.secrets and "envsecret1" not in storage.delta_rs.values()


def test_a_profile_gives_region_endpoint_and_keys(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("[profile wh]\nregion = ap-south-1\nendpoint_url = http://10.0.0.5:7480\n")
    (tmp_path / "credentials").write_text("[wh]\naws_access_key_id = AKIAPROF\naws_secret_access_key = profsecret\n")
    env = {"AWS_PROFILE": "wh", "AWS_CONFIG_FILE": str(tmp_path / "config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials")}
    storage = warehouse_storage("s3://bucket/wh", env=env)
    assert storage.delta_rs["AWS_REGION"] == "ap-south-1"
    assert storage.delta_rs["AWS_ENDPOINT_URL"] == "http://10.0.0.5:7480"
    assert storage.delta_rs["AWS_SECRET_ACCESS_KEY"] == "profsecret" and storage.fsspec["secret"] == "profsecret"
    assert storage.hadoop["fs.s3a.aws.credentials.provider"].endswith("ProfileAWSCredentialsProvider")
    assert storage.hadoop["fs.s3a.auth.profile.name"] == "wh" and not storage.hadoop_secrets
    assert storage.secrets == ("profsecret",)


def test_other_schemes_pass_their_options_through() -> None:
    storage = warehouse_storage("abfss://c@acct.dfs.core.windows.net/wh", {"azure_storage_account_key": "k3y-value"})
    assert storage.delta_rs == {"azure_storage_account_key": "k3y-value"} and storage.secrets == ("k3y-value",)


def test_repr_and_redaction_hide_secrets() -> None:
    storage = warehouse_storage("s3://bucket/wh", env=ENV)
    assert "envsecret1" not in repr(storage)
    assert redact("failed with envsecret1 in it", storage.secrets) == "failed with *** in it"


def test_crawl_config_json_redacts_object_store_credentials() -> None:
    from pipelines.config.models import BrokerConfig

    options = {"key": "AKIAINV", "secret": "invsecret", "password": "pw", "username": "kafka"}
    broker = BrokerConfig(broker_id=1, log_dirs=("/d",), inventory="s3://b/inv.jsonl.gz", storage_options=options)
    text = redacted_config_json([broker])
    assert "AKIAINV" not in text and "invsecret" not in text and "pw\"" not in text and "kafka" in text


def test_environment_keys_win_over_a_profile_named_in_the_environment(tmp_path: Path) -> None:
    (tmp_path / "credentials").write_text("[wh]\naws_access_key_id = AKIAPROF\naws_secret_access_key = profsecret\n")
    env = {**ENV, "AWS_PROFILE": "wh", "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
           "AWS_CONFIG_FILE": str(tmp_path / "none")}
    storage = warehouse_storage("s3://bucket/wh", env=env)
    keys = storage.delta_rs
    assert (keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"]) == ("AKIAENV", "envsecret1")
    assert "fs.s3a.aws.credentials.provider" not in storage.hadoop  # s3a's default chain reads the environment
    named = warehouse_storage("s3://bucket/wh", {"AWS_PROFILE": "wh"}, env=env)  # a profile in the config wins
    assert named.delta_rs["AWS_SECRET_ACCESS_KEY"] == "profsecret"
    assert named.hadoop["fs.s3a.auth.profile.name"] == "wh"
