"""The Iceberg destination's config: validated like every destination's, resolved for PyIceberg."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import redact
from headwater.destinations import build_destination, destination_types
from headwater.destinations.iceberg import IcebergDestination
from headwater.destinations.iceberg._config import HADOOP_CATALOG_IMPL, resolve, spec
from headwater.errors import ConfigError, SpecValidationError


def test_iceberg_is_a_built_in_destination() -> None:
    assert "iceberg" in destination_types()
    assert isinstance(build_destination("iceberg", {}), IcebergDestination)


def test_the_embedded_default_is_a_hadoop_catalog_the_warehouse_folder_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    destination = build_destination("iceberg", {})
    settings = destination.settings  # type: ignore[attr-defined]
    folder = str(tmp_path / "warehouse")
    assert settings.warehouse_folder == folder
    assert settings.catalog_type == "hadoop"
    assert dict(settings.catalog_properties) == {
        "py-catalog-impl": HADOOP_CATALOG_IMPL, "warehouse": f"file://{folder}"}
    assert settings.catalog_name == "headwater"
    assert destination.table_location("users") == "headwater.users"


def test_a_warehouse_synced_with_the_former_sqlite_default_keeps_its_catalog(
        tmp_path: Path) -> None:
    (tmp_path / "catalog.db").touch()
    settings = resolve({"warehouse": str(tmp_path), "catalog": {"name": "lake"}})
    assert dict(settings.catalog_properties) == {
        "type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}"}


def test_a_catalog_uri_without_a_type_is_a_sql_catalog(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/elsewhere.db"
    settings = resolve({"warehouse": str(tmp_path), "catalog": {"uri": uri}})
    assert settings.catalog_type == "sql"
    assert settings.catalog_properties["uri"] == uri


def test_a_named_type_wins_over_an_existing_catalog_db(tmp_path: Path) -> None:
    (tmp_path / "catalog.db").touch()
    assert resolve({"warehouse": str(tmp_path),
                    "catalog": {"type": "hadoop"}}).catalog_type == "hadoop"


def test_namespace_prefix_and_a_file_uri_warehouse(tmp_path: Path) -> None:
    settings = resolve({"warehouse": f"file://{tmp_path}/wh", "namespace": "raw",
                        "table_prefix": "shop_"})
    assert settings.warehouse_folder == f"{tmp_path}/wh"
    assert settings.identifier("orders") == "raw.shop_orders"


def test_a_postgresql_catalog_keeps_its_uri(tmp_path: Path) -> None:
    uri = "postgresql+psycopg2://hw:pw@127.0.0.1:5432/iceberg"
    settings = resolve({"warehouse": str(tmp_path), "catalog": {"type": "sql", "uri": uri,
                                                                "name": "lake"}})
    assert settings.catalog_properties["uri"] == uri
    assert settings.catalog_name == "lake"


def test_a_rest_catalog_needs_a_uri_and_its_secrets_are_secret() -> None:
    with pytest.raises(SpecValidationError, match="uri"):
        build_destination("iceberg", {"catalog": {"type": "rest"}})
    config = {"catalog": {"type": "rest", "uri": "http://127.0.0.1:8181",
                          "credential": "id:very-secret", "token": "tok-secret"}}
    destination = build_destination("iceberg", config)
    properties = destination.settings.catalog_properties  # type: ignore[attr-defined]
    assert properties["credential"] == "id:very-secret" and properties["token"] == "tok-secret"
    assert "warehouse" not in properties  # a REST server places its tables itself
    assert "type" not in properties  # made by py-catalog-impl (PyIceberg refuses both)
    # PyIceberg's default token endpoint, made explicit (it warns it will drop the fallback).
    assert properties["oauth2-server-uri"] == "http://127.0.0.1:8181/v1/oauth/tokens"
    redacted = redact(config, spec())
    assert "very-secret" not in str(redacted) and "tok-secret" not in str(redacted)


def test_a_hadoop_catalog_is_the_warehouse_folder_itself(tmp_path: Path) -> None:
    destination = build_destination("iceberg", {"warehouse": str(tmp_path / "lake"),
                                                "catalog": {"type": "hadoop"}})
    settings = destination.settings  # type: ignore[attr-defined]
    assert settings.catalog_type == "hadoop"
    assert dict(settings.catalog_properties) == {
        "py-catalog-impl": "headwater.destinations.iceberg._hadoop.HadoopCatalog",
        "warehouse": f"file://{tmp_path}/lake"}


@pytest.mark.parametrize("key", ["uri", "credential", "token", "warehouse",
                                 "oauth2_server_uri", "scope"])
def test_a_hadoop_catalog_takes_no_server_fields(key: str) -> None:
    with pytest.raises(ConfigError, match=f"hadoop catalog takes no {key}") as refused:
        resolve({"catalog": {"type": "hadoop", key: "sqlite:///x"}})
    assert refused.value.context["field"] == f"destination.config.catalog.{key}"


@pytest.mark.parametrize("key", ["credential", "token", "warehouse", "oauth2_server_uri",
                                 "scope"])
def test_a_sql_catalog_takes_no_rest_fields(key: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"sql catalog takes no {key}: it is a REST") as refused:
        resolve({"warehouse": str(tmp_path),
                 "catalog": {"type": "sql", "uri": "sqlite:///x.db", key: "a:b"}})
    assert refused.value.context["field"] == f"destination.config.catalog.{key}"


def test_a_production_rest_catalog_s_warehouse_and_oauth2_settings_go_to_pyiceberg() -> None:
    """Polaris, Lakekeeper and Unity pick the catalog by its warehouse name; the client
    credential is exchanged at the OAuth2 server for the scope; Headwater's own client
    class (no vended credentials: ``_rest.py``) makes the catalog."""
    from headwater.config import REDACTED, mask

    config = {"catalog": {"type": "rest", "uri": "https://polaris.example:8181/api/catalog",
                          "warehouse": "lake", "credential": "loader:pa55-w0rd-secret",
                          "oauth2_server_uri": "https://idp.example/oauth/token",
                          "scope": "PRINCIPAL_ROLE:ALL"}}
    settings = build_destination("iceberg", config).settings  # type: ignore[attr-defined]
    assert dict(settings.catalog_properties) == {
        "py-catalog-impl": "headwater.destinations.iceberg._rest.HeadwaterRestCatalog",
        "uri": "https://polaris.example:8181/api/catalog", "warehouse": "lake",
        "credential": "loader:pa55-w0rd-secret",
        "oauth2-server-uri": "https://idp.example/oauth/token", "scope": "PRINCIPAL_ROLE:ALL"}
    # The secret alone (a form body, a server's message) is masked too, the client id not.
    assert mask("client_id=loader&client_secret=pa55-w0rd-secret") == \
        f"client_id=loader&client_secret={REDACTED}"


@pytest.mark.parametrize("catalog", [
    {"credential": "no-client-id"},  # PyIceberg would send it as a secret of no client
    {"credential": ":secret-only"},
    {"oauth2_server_uri": "idp.example/token"},
    {"warehouse": ""},
    {"scope": ""},
])
def test_rest_catalog_settings_that_break_the_spec_are_refused(
        catalog: dict[str, str]) -> None:
    with pytest.raises(SpecValidationError) as refused:
        build_destination("iceberg", {"catalog": {"type": "rest", "uri": "http://h",
                                                  **catalog}})
    assert "secret-only" not in str(refused.value) and "no-client-id" not in str(refused.value)


@pytest.mark.parametrize("catalog", [{"type": "hadoop"}, {}])
def test_a_hadoop_catalog_refuses_an_object_store_warehouse(catalog: dict[str, str]) -> None:
    """Explicit, or the default without a uri: told to use sql or rest, naming the field."""
    with pytest.raises(ConfigError, match=r"use catalog type sql with a uri .* or rest") as refused:
        build_destination("iceberg", {"warehouse": "s3a://bucket/lake", "catalog": catalog})
    assert refused.value.context["field"] == "destination.config.catalog.type"


def test_a_sql_catalog_on_s3_needs_its_uri() -> None:
    with pytest.raises(ConfigError, match="give the catalog a uri") as refused:
        build_destination("iceberg", {"warehouse": "s3://bucket/lake",
                                      "catalog": {"type": "sql"}})
    assert refused.value.context["field"] == "destination.config.catalog.uri"


@pytest.mark.parametrize("config", [
    {"warehouse": ""},
    {"namespace": "a.b"},
    {"table_prefix": "x.y"},
    {"catalog": {"type": "hive"}},
    {"catalog": {"type": "sql", "url": "sqlite:///x"}},
    {"path": "lakehouse"},
])
def test_configs_that_break_the_spec_are_refused(config: dict[str, object]) -> None:
    with pytest.raises(SpecValidationError):
        build_destination("iceberg", config)


@pytest.mark.parametrize("warehouse", ["s3a://bucket/wh/", "s3://bucket/wh"])
def test_an_s3_warehouse_goes_to_pyiceberg_as_s3(warehouse: str, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/catalog.db"
    settings = resolve({"warehouse": warehouse, "catalog": {"uri": uri}})
    assert settings.catalog_type == "sql" and settings.object_store == "s3://bucket/wh"
    assert settings.catalog_properties == {"type": "sql", "uri": uri, "warehouse": "s3://bucket/wh"}
    assert settings.bucket == "bucket"
    assert settings.reaches("s3://bucket/wh/headwater.db/users")
    assert not settings.reaches("s3://other/wh/headwater.db/users")
    assert not settings.reaches(f"file://{tmp_path}/users")
    assert not resolve({"warehouse": str(tmp_path)}).reaches("s3://bucket/wh/users")


def test_other_object_stores_are_refused() -> None:
    with pytest.raises(ConfigError, match="neither a local folder nor on S3") as refused:
        build_destination("iceberg", {"warehouse": "gs://bucket/warehouse",
                                      "catalog": {"uri": "sqlite:///x.db"}})
    assert refused.value.context["field"] == "destination.config.warehouse"


def test_pyiceberg_s_file_io_gets_the_s3a_settings() -> None:
    from headwater.destinations._table_files._store import S3Access
    from headwater.destinations.iceberg._catalog import file_io_properties

    access = S3Access.from_hadoop({
        "fs.s3a.endpoint": "127.0.0.1:9000", "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
        "fs.s3a.path.style.access": "true"}.get, "bucket")
    assert file_io_properties(access) == {
        "s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1",
        "s3.access-key-id": "AK", "s3.secret-access-key": "SK",
        "s3.force-virtual-addressing": "false"}
    assert file_io_properties(S3Access()) == {}  # the default AWS chain's


def test_capabilities_say_what_this_step_cannot_do() -> None:
    capabilities = IcebergDestination.capabilities
    assert capabilities.task_written_files
    assert capabilities.stages_overwrites  # on a branch per run (_staging.py)
    assert capabilities.replaces_run_rows
    # A merge rewrites what the previous one wrote: one commit lane, as Delta's.
    assert capabilities.lanes("append_dedup", 4) == 1
    assert capabilities.lanes("append", 4) == 4
    assert capabilities.commit_id == "iceberg_snapshot_id"
    assert capabilities.spark.packages == ()  # no jar: Spark never touches the tables


def test_a_password_in_a_sql_catalog_uri_is_masked_everywhere() -> None:
    from headwater.config import mask
    from headwater.destinations.iceberg import _config

    uri = "postgresql+psycopg2://loader:s3cr%2Ft-pw@127.0.0.1:5432/catalog"
    _config.resolve({"catalog": {"type": "sql", "uri": uri}})
    shown = mask(f"cannot connect to {uri}; password s3cr/t-pw")
    assert "s3cr%2Ft-pw" not in shown and "s3cr/t-pw" not in shown


def test_an_s3_warehouse_is_reached_with_the_connection_s_s3a_settings(tmp_path: Path) -> None:
    """Without a running Spark session (a check): the connection's spark.conf, per-bucket
    settings first; the secret masked from then on."""
    from headwater.config import mask

    destination = IcebergDestination({"warehouse": "s3a://lake-bucket/wh",
                                      "catalog": {"uri": f"sqlite:///{tmp_path}/c.db"}})
    secret = "hw-unit-secret-iceberg-s3-key"
    destination.use_spark_conf({
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9",
        "spark.hadoop.fs.s3a.bucket.lake-bucket.access.key": "AKIDUNIT",
        "spark.hadoop.fs.s3a.bucket.lake-bucket.secret.key": secret})
    access = destination._store_access()
    assert access is not None and access.endpoint == "http://127.0.0.1:9"
    assert (access.access_key, access.secret_key) == ("AKIDUNIT", secret)
    assert secret not in mask(f"refused: {secret}")


def test_an_s3a_provider_the_tasks_cannot_follow_is_refused(tmp_path: Path) -> None:
    destination = IcebergDestination({"warehouse": "s3a://lake-bucket/wh",
                                      "catalog": {"uri": f"sqlite:///{tmp_path}/c.db"}})
    destination.use_spark_conf({"spark.hadoop.fs.s3a.aws.credentials.provider":
                                "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"})
    with pytest.raises(ConfigError, match="AssumedRoleCredentialProvider"):
        destination.catalog()
