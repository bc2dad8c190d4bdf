"""``headwater check``: the source, then the destination, each reported; either failing fails."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import REDACTED
from headwater.destinations.iceberg import _catalog as iceberg_catalog
from headwater.destinations.iceberg._config import IcebergSettings
from headwater.errors import ExitCode


def _connection(tmp_path: Path, destination: str, api_key: str | None = None) -> Path:
    key = f", api_key: {api_key}" if api_key else ""
    path = tmp_path / "shop.yaml"
    path.write_text(f"name: shop\nsource: {{type: sample, config: {{users: 10{key}}}}}\n"
                    f"destination: {destination}\n")
    return path


def test_a_writable_delta_folder_is_reported_beside_the_source(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    path = _connection(tmp_path, f"{{type: delta, config: {{path: {lake}}}}}")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "status": "succeeded", "connection": "shop",
        "source": {"type": "sample", "status": "succeeded"},
        "destination": {"type": "delta", "status": "succeeded"}}
    assert not lake.exists()  # the check leaves nothing behind

    text = CliRunner().invoke(app, ["check", str(path)])
    assert text.exit_code == 0, text.output
    assert "shop: source sample is reachable and the config is valid" in text.stdout
    assert "shop: destination delta is reachable and writable" in text.stdout


def test_a_delta_path_that_cannot_be_written_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    lake = tmp_path / "taken" / "lake"
    path = _connection(tmp_path, f"{{type: delta, config: {{path: {lake}}}}}")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == ExitCode.FAILED, result.output
    document = json.loads(result.stdout)
    assert document["status"] == "error"
    assert document["source"] == {"type": "sample", "status": "succeeded"}
    destination = document["destination"]
    assert destination["status"] == "failed"
    assert destination["error"]["type"] == "DestinationError"
    assert f"{lake} does not exist and cannot be created" in destination["error"]["message"]
    assert "Not a directory" in destination["error"]["message"]
    assert document["error"] == destination["error"]

    text = CliRunner().invoke(app, ["check", str(path)])
    assert text.exit_code == ExitCode.FAILED
    assert "shop: source sample is reachable" in text.stdout
    assert "shop: destination delta failed:" in text.stderr
    assert str(lake) in text.stderr


def test_a_refused_source_keeps_its_exit_code_and_the_destination_is_still_checked(
        tmp_path: Path) -> None:
    lake = tmp_path / "taken" / "lake"
    (tmp_path / "taken").write_text("a file")
    path = _connection(tmp_path, f"{{type: delta, config: {{path: {lake}}}}}", api_key="invalid")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == ExitCode.AUTHENTICATION, result.output
    document = json.loads(result.stdout)
    assert document["error"]["type"] == "AuthenticationError"
    assert document["source"]["status"] == "failed"
    assert document["destination"]["status"] == "failed"  # both are reported


def test_an_object_store_path_is_reported_as_not_checked(tmp_path: Path) -> None:
    """An S3 path is checked (integration ``test_s3_check``); the other stores are not."""
    path = _connection(tmp_path, "{type: delta, config: {path: 'gs://bucket/lake'}}")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    destination = json.loads(result.stdout)["destination"]
    assert destination["status"] == "skipped"
    assert "gs://bucket/lake is not a local folder nor on S3" in destination["message"]


def test_secrets_stay_masked_in_the_destinations_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "tok-secret-0123456789"

    def quoting(settings: IcebergSettings, s3: object = None) -> None:  # quotes the secret
        raise RuntimeError(f"refused {settings.catalog_properties['token']}")

    monkeypatch.setattr(iceberg_catalog, "check", quoting)
    path = _connection(tmp_path, "{type: iceberg, config: {warehouse: " + str(tmp_path / "wh")
                       + ", catalog: {type: rest, uri: 'http://127.0.0.1:1', token: "
                       + token + "}}}")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == ExitCode.FAILED, result.output
    error = json.loads(result.stdout)["destination"]["error"]
    assert error["message"] == ("the Iceberg rest catalog at http://127.0.0.1:1 is not usable: "
                                f"RuntimeError: refused {REDACTED}")
    text = CliRunner().invoke(app, ["check", str(path)])
    assert text.exit_code == ExitCode.FAILED
    assert token not in result.output + text.output and REDACTED in text.stderr


def _foreign_orders(destination: str, tmp_path: Path, columns: pa.Schema) -> Path:
    """A connection syncing the sample's ``orders`` (id long, amount double...) into a table
    someone else made first with ``columns``, through delta-rs or PyIceberg (no Spark)."""
    path = _connection(tmp_path, destination)
    path.write_text(path.read_text() + "streams: [{name: orders, destination_sync_mode: append}]\n")
    if "delta" in destination:
        from deltalake import write_deltalake

        write_deltalake(str(tmp_path / "lake" / "orders"), columns.empty_table())
    else:
        from headwater.destinations import build_destination

        destination = build_destination("iceberg", {"warehouse": str(tmp_path / "wh")})
        catalog = destination.catalog()  # type: ignore[attr-defined]
        catalog.create_namespace("headwater")
        catalog.create_table("headwater.orders", schema=columns)
    return path


@pytest.mark.parametrize("destination", ["delta", "iceberg"])
def test_an_existing_table_that_cannot_hold_the_stream_s_values_fails_the_check(
        tmp_path: Path, destination: str) -> None:
    config = ("{type: delta, config: {path: " + str(tmp_path / "lake") + "}}"
              if destination == "delta"
              else "{type: iceberg, config: {warehouse: " + str(tmp_path / "wh") + "}}")
    path = _foreign_orders(config, tmp_path, pa.schema([("id", pa.string()),
                                                        ("amount", pa.int32())]))
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == ExitCode.CONFIG, result.output
    error = json.loads(result.stdout)["destination"]["error"]
    assert "was not created by Headwater" in error["message"]
    assert ("id: the stream's long does not fit the table's string; amount: the stream's "
            "double does not fit the table's int") in error["message"]


@pytest.mark.parametrize("destination", ["delta", "iceberg"])
def test_an_existing_table_with_wider_types_passes_the_check(tmp_path: Path,
                                                             destination: str) -> None:
    config = ("{type: delta, config: {path: " + str(tmp_path / "lake") + "}}"
              if destination == "delta"
              else "{type: iceberg, config: {warehouse: " + str(tmp_path / "wh") + "}}")
    path = _foreign_orders(config, tmp_path, pa.schema([
        ("id", pa.decimal128(20, 0)), ("amount", pa.float64()), ("legacy", pa.string())]))
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 0, result.output
