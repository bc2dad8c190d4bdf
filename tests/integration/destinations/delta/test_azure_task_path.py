"""The task path on Azure: files the tasks upload, committed by delta-rs with conditional creates.

Against Azurite on 127.0.0.1 (the run's ``azure_server``), the table named as Spark
names it (``abfss://<container>@<account>.dfs.core.windows.net/...``) and reached with
the ``fs.azure.account.key.*`` setting Spark's ABFS connector reads: the files land under
the table's prefix, a commit whose version another writer took first never replaces it
(Azure's ``If-None-Match: *`` create: the commit goes to the next version, or fails when
the rival is the same checkpoint), committers racing on one table lose no commit and
commit no checkpoint twice, and ``headwater check`` proves the conditional create and
names refused credentials as an auth failure without showing the key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.destinations import build_destination
from headwater.destinations._table_files._azure import AzureAccess
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _delta_rs
from headwater.errors import AuthenticationError, DestinationError, ExitCode
from tests.integration._cli_logs import invoke_logged
from tests.integration._stores import AZURE_ACCOUNT, AZURE_KEY, AzureServer
from tests.integration.destinations.delta._tables import (
    SCHEMA,
    azure_location,
    azure_settings,
    azure_table,
    commit_text,
    log_entries,
    new_container,
    race,
    rows,
    txns,
    write,
)

WRONG_KEY = "aHctd3Jvbmcta2V5LWRvLW5vdC1wcmludA=="  # base64 of "hw-wrong-key-do-not-print"


def test_the_settings_spark_s_abfs_reads_reach_the_table(azure_server: AzureServer) -> None:
    container = new_container(azure_server)
    table = azure_table(azure_server, container)
    assert table.uri == f"az://{container}/lake/t"
    assert isinstance(table.store, AzureAccess) and table.store.secrets == [AZURE_KEY]
    assert AZURE_KEY not in repr(table)
    _delta_rs.create_table(table, SCHEMA, {})
    written = write(table, [1, 2, 3])
    assert written[0].size > 0 and written[0].rows == 3 and table.exists(written[0].path)
    first = _delta_rs.commit_files(table, written, mode="append", app_id="a", version=1, tag="{}")
    again = _delta_rs.commit_files(table, written, mode="append", app_id="a", version=1, tag="{}")
    assert (first.made, first.version) == (True, 1)
    assert (again.made, again.held) == (False, 1)
    assert rows(table) == [1, 2, 3]
    assert [c["version"] for c in _delta_rs.history(table) or []] == [1, 0]


@pytest.fixture
def rival_after_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Once the next commit has loaded the table, put the text appended to the list as
    ``_delta_log/<version + 1>.json`` (another writer's commit landing first)."""
    rival: list[str] = []
    load = _delta_rs._load

    def loaded_then_rival(folder: str | TableFolder) -> Any:
        table = load(folder)
        if rival and table is not None and isinstance(folder, TableFolder):
            fs, path = folder.filesystem()
            with fs.open_output_stream(f"{path}/_delta_log/{table.version() + 1:020d}.json") as out:
                out.write(rival.pop().encode())
        return table

    monkeypatch.setattr(_delta_rs, "_load", loaded_then_rival)
    yield rival


def test_a_rival_that_took_the_commit_s_version_stays_and_the_commit_goes_next(
        azure_server: AzureServer, rival_after_load: list[str]) -> None:
    table = azure_table(azure_server, new_container(azure_server))
    _delta_rs.create_table(table, SCHEMA, {})
    rival_after_load.append(commit_text("rival", "other-app", 7, write(table, [10])[0]))
    committed = _delta_rs.commit_files(table, write(table, [20]), mode="append",
                                       app_id="ours", version=1, tag="ours")
    assert not rival_after_load  # the rival was put between the load and the commit
    assert (committed.made, committed.version) == (True, 2)
    entries = log_entries(table)
    assert entries[1][0]["commitInfo"]["userMetadata"] == "rival"  # not overwritten
    assert txns(entries) == [("other-app", 7), ("ours", 1)]
    assert rows(table) == [10, 20]


def test_a_rival_commit_of_the_same_checkpoint_makes_the_commit_fail_not_double(
        azure_server: AzureServer, rival_after_load: list[str]) -> None:
    table = azure_table(azure_server, new_container(azure_server))
    _delta_rs.create_table(table, SCHEMA, {})
    rival_after_load.append(commit_text("rival", "app", 1, write(table, [1, 2])[0]))
    with pytest.raises(Exception, match=r"(?i)concurrent"):
        _delta_rs.commit_files(table, write(table, [1, 2]), mode="append", app_id="app",
                               version=1, tag="{}")
    assert sorted(log_entries(table)) == [0, 1]
    assert txns(log_entries(table)) == [("app", 1)]
    assert rows(table) == [1, 2]


def test_committers_racing_on_one_table_lose_no_commit_and_double_no_checkpoint(
        azure_server: AzureServer) -> None:
    race(azure_table(azure_server, new_container(azure_server)))


# ------------------------------------------------------------------------- headwater check

def _destination(server: AzureServer, path: str, key: str = AZURE_KEY) -> Any:
    destination = build_destination("delta", {"path": path})
    destination.use_spark_conf({f"spark.hadoop.{k}": v
                                for k, v in azure_settings(server, key).items()})
    return destination


def test_check_proves_the_conditional_create_and_leaves_nothing(
        azure_server: AzureServer) -> None:
    container = new_container(azure_server)
    destination = _destination(azure_server, azure_location(container, "lake"))
    assert destination.check_skipped() is None
    destination.check()
    table = azure_table(azure_server, container, "lake")
    fs, base = table.filesystem()
    from pyarrow import fs as pafs

    assert fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True)) == []


def test_check_names_a_missing_container(azure_server: AzureServer) -> None:
    destination = _destination(azure_server, azure_location("hw-missing-container", "lake"))
    with pytest.raises(DestinationError, match="the container hw-missing-container of "):
        destination.check()


def test_check_names_a_wrong_key_as_an_auth_failure_without_the_key(
        azure_server: AzureServer, tmp_path: Path) -> None:
    container = new_container(azure_server)
    destination = _destination(azure_server, azure_location(container, "lake"), WRONG_KEY)
    with pytest.raises(AuthenticationError, match="refused the credentials") as raised:
        destination.check()
    assert WRONG_KEY not in str(raised.value)

    def connection(key: str) -> Path:
        conf = {f"spark.hadoop.{k}": v for k, v in azure_settings(azure_server, key).items()}
        document = {"name": "azcheck", "source": {"type": "sample", "config": {"users": 10}},
                    "destination": {"type": "delta",
                                    "config": {"path": azure_location(container, "lake")}},
                    "spark": {"conf": conf}}
        file = tmp_path / f"azcheck-{len(key)}.yaml"
        file.write_text(json.dumps(document))  # JSON is YAML
        return file

    passed = CliRunner().invoke(app, ["check", str(connection(AZURE_KEY)), "--json"])
    assert passed.exit_code == 0, passed.output
    wrong = connection(WRONG_KEY)
    result = invoke_logged(["check", str(wrong), "--json"])
    assert result.exit_code == ExitCode.AUTHENTICATION, result.output
    error = json.loads(result.stdout)["destination"]["error"]
    assert error["type"] == AuthenticationError.__name__
    assert "(auth failure: " in error["message"] and "HTTP 403" in error["message"], error
    printed = CliRunner().invoke(app, ["check", str(wrong)])
    assert printed.exit_code == ExitCode.AUTHENTICATION and "auth failure" in printed.output
    for shown in (result.output, printed.output):
        assert WRONG_KEY not in shown and AZURE_KEY not in shown


def test_an_auth_type_only_hadoop_azure_follows_is_left_to_spark() -> None:
    settings = {"fs.azure.account.auth.type": "Custom",
                "fs.azure.account.oauth.provider.type": "com.example.Tokens"}
    destination = build_destination("delta", {"path": azure_location("c", "lake")})
    destination.use_spark_conf({f"spark.hadoop.{k}": v for k, v in settings.items()})
    assert "fs.azure.account.auth.type Custom, which only hadoop-azure follows" in (
        destination.check_skipped() or "")
    assert AZURE_ACCOUNT  # the account's settings are the test's own
