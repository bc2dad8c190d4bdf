"""GCS and Azure settings: what reaches fsspec, and which GCS filesystem an endpoint gets."""

from __future__ import annotations

from gcsfs.core import GCSFileSystem

from headwater.connectors.object_storage import ObjectStorageSource
from headwater.connectors.object_storage._listing import open_filesystem


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
    # an S3 endpoint is not an Azure option
    assert options(url="az://c", endpoint_url="http://127.0.0.1:9") == {}


def test_a_gcs_endpoint_gets_the_json_api_filesystem() -> None:
    fs, root = open_filesystem("gs://bucket/some/prefix/",
                               {"token": "anon", "endpoint_url": "http://127.0.0.1:9"})
    assert type(fs) is GCSFileSystem  # not gcsfs's gRPC-probing subclass
    assert root == "bucket/some/prefix"
    assert fs.unstrip_protocol("bucket/k") == "gs://bucket/k"
