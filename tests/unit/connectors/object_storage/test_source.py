"""The source's spec, config errors, check, and the registry entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import redact, secret_paths
from headwater.connectors import get_source_class
from headwater.connectors.object_storage import ObjectStorageSource
from headwater.errors import ConnectorError, SpecValidationError


def test_is_built_in_and_marks_every_credential_secret() -> None:
    assert get_source_class("object_storage") is ObjectStorageSource
    assert set(secret_paths(ObjectStorageSource.spec())) == {
        ("aws_access_key_id",), ("aws_secret_access_key",), ("aws_session_token",),
        ("gcs_token",), ("azure_account_key",), ("azure_connection_string",)}
    config = {"url": "s3://b", "aws_secret_access_key": "very-secret-value",
              "streams": [{"name": "s"}]}
    assert "very-secret-value" not in str(redact(config, ObjectStorageSource.spec()))
    assert "very-secret-value" not in repr(ObjectStorageSource(config)._settings)


def test_s3_options_come_from_config_only_when_given() -> None:
    settings = ObjectStorageSource({"url": "s3://b/p", "endpoint_url": "http://127.0.0.1:9",
                                    "aws_access_key_id": "id-1234",
                                    "streams": [{"name": "s"}]})._settings
    assert settings.storage_options() == {"key": "id-1234",
                                          "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    bare = ObjectStorageSource({"url": "s3://b", "streams": [{"name": "s"}]})._settings
    assert bare.storage_options() == {}  # botocore looks in the environment


def test_config_errors_name_the_field() -> None:
    with pytest.raises(SpecValidationError) as excinfo:
        ObjectStorageSource({"url": "/x", "streams": [{"name": "s", "format": {"type": "xml"}}]})
    assert "source.config.streams.0.format" in str(excinfo.value.problems)
    with pytest.raises(SpecValidationError, match="unique"):
        ObjectStorageSource({"url": "/x", "streams": [{"name": "s"}, {"name": "s"}]})


def test_check_names_a_missing_folder(tmp_path: Path) -> None:
    ObjectStorageSource({"url": str(tmp_path), "streams": [{"name": "s"}]}).check()
    with pytest.raises(ConnectorError, match="does not exist"):
        ObjectStorageSource({"url": str(tmp_path / "nope"), "streams": [{"name": "s"}]}).check()
