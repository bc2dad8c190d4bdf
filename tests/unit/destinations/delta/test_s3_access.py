"""The task path's S3 access comes from the S3A settings Spark users already write."""

from __future__ import annotations

import pickle

from headwater.config import mask, register_secrets
from headwater.destinations._table_files._store import S3Access, TableFolder, s3_bucket_and_key

SETTINGS = {
    "fs.s3a.endpoint": "minio.local:9000",
    "fs.s3a.connection.ssl.enabled": "false",
    "fs.s3a.access.key": "AKIA-unit-test",
    "fs.s3a.secret.key": "unit-test-secret-do-not-print",
    "fs.s3a.session.token": "unit-test-session-token",
    "fs.s3a.path.style.access": "true",
    "fs.s3a.endpoint.region": "eu-west-3",
}


def test_s3a_settings_become_delta_rs_options() -> None:
    access = S3Access.from_hadoop(SETTINGS.get, "lake")
    assert access.endpoint == "http://minio.local:9000"
    assert access.delta_rs_options("lake") == {
        "AWS_ENDPOINT_URL": "http://minio.local:9000", "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false", "AWS_REGION": "eu-west-3",
        "AWS_ACCESS_KEY_ID": "AKIA-unit-test",
        "AWS_SECRET_ACCESS_KEY": "unit-test-secret-do-not-print",
        "AWS_SESSION_TOKEN": "unit-test-session-token"}


def test_a_per_bucket_setting_wins_and_ssl_is_the_default() -> None:
    settings = {"fs.s3a.endpoint": "s3.example.com", "fs.s3a.access.key": "general",
                "fs.s3a.bucket.special.access.key": "special"}
    special = S3Access.from_hadoop(settings.get, "special")
    other = S3Access.from_hadoop(settings.get, "other")
    assert (special.endpoint, special.access_key) == ("https://s3.example.com", "special")
    assert other.access_key == "general"
    assert "AWS_ALLOW_HTTP" not in special.delta_rs_options("special")


def test_nothing_set_leaves_everything_to_the_default_credential_chain() -> None:
    access = S3Access.from_hadoop({}.get, "lake")
    assert access == S3Access()
    assert access.delta_rs_options("lake") == {}


def test_virtual_hosted_requests_put_the_bucket_in_the_endpoint() -> None:
    settings = {"fs.s3a.endpoint": "https://store.example.com", "fs.s3a.path.style.access":
                "false"}
    options = S3Access.from_hadoop(settings.get, "lake").delta_rs_options("lake")
    assert options["AWS_ENDPOINT_URL"] == "https://lake.store.example.com"
    assert options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "true"


def test_keys_stay_out_of_repr_and_are_masked_once_registered() -> None:
    access = S3Access.from_hadoop(SETTINGS.get, "lake")
    table = TableFolder.on_s3("s3a://lake/raw/users", access)
    assert table.uri == "s3://lake/raw/users"
    for text in (repr(access), repr(table)):
        assert "unit-test-secret" not in text and "unit-test-session" not in text
    register_secrets(access.secrets)
    assert "unit-test-secret" not in mask(f"failed with {access.secret_key}")
    assert pickle.loads(pickle.dumps(table)) == table  # the executors' tasks carry it


def test_s3_locations_in_either_scheme() -> None:
    assert s3_bucket_and_key("s3a://lake/raw/users/") == ("lake", "raw/users")
    assert s3_bucket_and_key("s3://lake") == ("lake", "")
    assert s3_bucket_and_key("gs://lake/raw") is None
    assert s3_bucket_and_key("/data/lake") is None
    assert TableFolder.on_s3("s3://lake", S3Access()).child("_staging/r1").uri == (
        "s3://lake/_staging/r1")


def test_credentials_only_s3a_can_get_are_named() -> None:
    assumed = "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"
    settings = {
        "fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,\n"
            " software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
        "fs.s3a.bucket.roles.aws.credentials.provider": assumed,
    }
    assert S3Access.untranslated_providers(settings.get, "lake") == []
    assert S3Access.untranslated_providers(settings.get, "roles") == [assumed]
    assert S3Access.untranslated_providers({}.get, "lake") == []
