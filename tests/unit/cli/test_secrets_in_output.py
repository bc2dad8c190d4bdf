"""No password reaches what a command prints: ``check`` (text, ``--json``, ``-v`` logs),
``plan`` and ``sync`` failing before Spark, for each place a password is written.

Each case writes a connection whose password sits in a URI (an Iceberg catalog's, well
formed or with a misspelt scheme; a metadata store's) or in a secret field (a PostgreSQL
source's, S3 credentials), short (two characters: masking by value used to skip those)
and long, runs the command in process, and greps everything it wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config._secrets import _registry

#: Short enough that masking by value once skipped it, rare enough to grep for.
SHORT = "Q7"
LONG = "loader-long-Pa55word"

DELTA = {"type": "delta", "config": {"path": "lake"}}
SAMPLE = {"type": "sample", "config": {"users": 10}}


def _iceberg(uri: str, kind: str = "sql") -> dict[str, Any]:
    return {"type": "iceberg", "config": {"warehouse": "wh",
                                          "catalog": {"type": kind, "uri": uri}}}


#: name -> (source, destination, metadata store) with PW where the password goes.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], str | None]] = {
    "iceberg-sql-misspelt-scheme": (
        SAMPLE, _iceberg("postgressql://loader:PW@127.0.0.1/iceberg"), None),
    "iceberg-sql-unreachable": (
        SAMPLE, _iceberg("postgresql+psycopg://loader:PW@127.0.0.1:1/iceberg"), None),
    "iceberg-sql-unparsable": (
        SAMPLE, _iceberg("postgresql+psycopg://loader:PW@127.0.0.1:port/iceberg"), None),
    "iceberg-rest-user-info": (
        SAMPLE, _iceberg("http://client:PW@127.0.0.1:1/catalog", kind="rest"), None),
    "metadata-store-misspelt-scheme": (
        SAMPLE, DELTA, "postgressql://headwater:PW@127.0.0.1:1/headwater"),
    "metadata-store-unreachable": (
        SAMPLE, DELTA, "postgresql://headwater:PW@127.0.0.1:1/headwater"),
    "postgres-source-password": (
        {"type": "postgres", "config": {"host": "127.0.0.1", "port": 1, "database": "db",
                                        "username": "loader", "password": "PW",
                                        "sslmode": "disable"}}, DELTA, None),
    "s3-credentials": (
        {"type": "object_storage", "config": {
            "url": "s3://landing/events", "endpoint_url": "http://127.0.0.1:1",
            "aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": "PW",
            "streams": [{"name": "events"}]}}, DELTA, None),
}


@pytest.fixture(autouse=True)
def fresh_masker() -> Any:
    """Each case proves its own masking: nothing registered by an earlier one helps."""
    _registry.clear()
    yield
    _registry.clear()


def _write(tmp_path: Path, case: str, password: str) -> Path:
    source, destination, store = CASES[case]
    document: dict[str, Any] = {"name": "leaky", "source": source, "destination": destination,
                                "streams": [{"name": "users"}] if source is SAMPLE else []}
    if store is not None:
        document["metadata_store"] = store
    text = yaml.safe_dump(document, sort_keys=False).replace("PW", password)
    path = tmp_path / "leaky.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("password", [SHORT, LONG], ids=["short", "long"])
@pytest.mark.parametrize("case", list(CASES))
def test_no_command_prints_a_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      case: str, password: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path / "home"))
    path = _write(tmp_path, case, password)
    runner = CliRunner()
    commands = [["check", str(path)], ["check", str(path), "--json", "-vv"]]
    if CASES[case][2] is not None:  # these fail at the store, before any Spark starts
        commands += [["plan", str(path), "--json"], ["sync", str(path)]]
    for command in commands:
        result = runner.invoke(app, command)
        # Each command fails, so the password had its chance to be quoted; but check
        # reaches no metadata store (it only refuses a URL no driver reads).
        if command[0] != "check" or case != "metadata-store-unreachable":
            assert result.exit_code != 0, (command, result.output)
        printed = result.stdout + result.stderr
        assert password not in printed, (command, printed)
