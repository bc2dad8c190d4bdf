"""GCS and Azure settings: what reaches fsspec, and which GCS filesystem an endpoint gets."""

from __future__ import annotations

import pytest
from gcsfs.core import GCSFileSystem

from headwater.connectors.object_storage import ObjectStorageSource
from headwater.connectors.object_storage._listing import open_filesystem
from headwater.errors import ConfigError


def options(**config: object) -> dict[str, object]:
    return ObjectStorageSource({**config, "streams": [{"name": "s"}]})._settings.storage_options()


def test_gcs_takes_the_token_and_the_endpoint_only_when_given() -> None:
    assert options(url="gs://b/p", gcs_token="tok", endpoint_url="http://127.0.0.1:9") == \
        {"token": "tok", "endpoint_url": "http://127.0.0.1:9"}
    assert options(url="gs://b/p") == {}  # gcsfs looks for default credentials


def test_azure_takes_the_connection_string_or_the_account_and_key() -> None:
    assert options(url="az://c/p", azure_connection_string="BlobEndpoint=x;AccountKey=k") == \
        {"connection_string": "BlobEndpoint=x;AccountKey=k"}
    assert options(url="abfs://c", azure_account_name="acct", azure_account_key="k") == \
        {"account_name": "acct", "account_key": "k"}


@pytest.mark.parametrize(("url", "setting", "where"), [
    ("az://c", "endpoint_url", "on Azure"),  # an endpoint is S3's or GCS's, not Azure's
    ("gs://b/p", "aws_access_key_id", "on GCS"),
    ("s3://b/p", "gcs_token", "on S3"),
    ("s3a://b", "azure_account_name", "on S3"),
    ("gcs://b", "region", "on GCS"),
    ("landing/in", "aws_secret_access_key", "not on S3, GCS or Azure"),
    ("file:///data", "azure_connection_string", "not on S3, GCS or Azure"),
])
def test_a_setting_of_another_store_is_refused_naming_it(url: str, setting: str,
                                                         where: str) -> None:
    # Left out of the url's options, it used to be accepted and never used.
    with pytest.raises(ConfigError) as info:
        options(url=url, **{setting: "given"})
    assert info.value.context["field"] == f"source.config.{setting}"
    assert info.value.message.startswith(f"{setting}: the url {url!r} is {where}, ")
    assert "given" not in info.value.message


def test_an_empty_setting_of_another_store_is_nothing_to_refuse() -> None:
    # ``${AWS_KEY:-}`` left empty where the url is on GCS: nothing is given.
    assert options(url="gs://b/p", aws_access_key_id="", region="") == {}


def test_a_gcs_endpoint_gets_the_json_api_filesystem() -> None:
    fs, root = open_filesystem("gs://bucket/some/prefix/",
                               {"token": "anon", "endpoint_url": "http://127.0.0.1:9"})
    assert type(fs) is GCSFileSystem  # not gcsfs's gRPC-probing subclass
    assert root == "bucket/some/prefix"
    assert fs.unstrip_protocol("bucket/k") == "gs://bucket/k"
