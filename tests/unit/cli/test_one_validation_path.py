"""``validate`` and ``check`` refuse every configuration ``plan`` (and so ``sync``) refuses.

Each case is a connection ``plan`` refuses before reading anything; the test runs
``plan``, ``check`` and ``validate`` on it in process and expects all three to fail
with the same reason.  None of them starts Spark or reaches a server: the sources are
the sample world and a local folder; a source or store that ``check`` would have to
reach fails the same way whether reached or not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.errors import ExitCode

SAMPLE: dict[str, Any] = {"type": "sample", "config": {"users": 10, "orders": 10}}


def _iceberg(**config: Any) -> dict[str, Any]:
    return {"type": "iceberg", "config": {"warehouse": "wh", **config}}


def _folder(*streams: dict[str, Any], url: str = "landing") -> dict[str, Any]:
    return {"type": "object_storage", "config": {"url": url, "streams": list(streams)}}


USERS = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}
QUEUE = {"mode": "notifications", "queue_url": "http://127.0.0.1:1/queue/events"}
ISSUES = {"type": "object", "properties": {"id": {"type": "integer"},
                                           "updated_at": {"type": "string"}}}

#: id -> (connection fields over the defaults, what each command's refusal says)
REFUSALS: dict[str, tuple[dict[str, Any], str]] = {
    "stream-the-source-lacks": (
        {"streams": [{"name": "customers"}]}, "the source has no stream 'customers'"),
    "incremental-on-another-cursor": (
        {"streams": [{**USERS, "cursor_field": "id"}]},
        "another cursor field is not supported"),
    "partition-transform-on-delta": (
        {"streams": [{**USERS, "partition_by": ["days(updated_at)"]}]},
        "'days(updated_at)' is a partition transform"),
    "partition-by-a-missing-column": (
        {"streams": [{**USERS, "partition_by": ["region"]}]},
        "partition_by: the stream has no column 'region'"),
    "json-columns-a-missing-column": (
        {"streams": [{**USERS, "json_columns": ["profile"]}]}, "profile"),
    "cluster-by-on-iceberg": (
        {"destination": _iceberg(), "streams": [{**USERS, "cluster_by": ["id"]}]},
        "does not cluster tables"),
    "hadoop-catalog-with-a-uri": (
        {"destination": _iceberg(catalog={"type": "hadoop", "uri": "sqlite:///c.db"})},
        "a hadoop catalog takes no uri"),
    "hadoop-catalog-on-s3": (
        {"destination": _iceberg(warehouse="s3a://lake/wh", catalog={"type": "hadoop"})},
        "where a hadoop catalog cannot commit safely"),
    "warehouse-neither-local-nor-s3": (
        {"destination": _iceberg(warehouse="gs://lake/wh")},
        "is neither a local folder nor on S3"),
    "sql-catalog-no-driver-reads": (
        {"destination": _iceberg(catalog={"type": "sql",
                                          "uri": "postgressql://loader@127.0.0.1/iceberg"})},
        "'postgressql', which no installed database driver reads"),
    "metadata-store-no-driver-reads": (
        {"metadata_store": "postgressql://headwater@127.0.0.1/headwater"},
        "which no installed database driver reads"),
    "notifications-from-a-folder": (
        {"source": _folder({"name": "events", "discovery": QUEUE}),
         "streams": [{"name": "events", "sync_mode": "incremental"}]},
        "the source url must be s3://"),
    "notifications-in-full-refresh": (
        {"source": _folder({"name": "events", "discovery": QUEUE}, url="s3://landing/in"),
         "streams": [{"name": "events"}]},
        "notification discovery reads only new objects"),
    "incremental-rest-stream-without-start-date": (
        {"source": {"type": "rest", "config": {
            "base_url": "http://127.0.0.1:1", "streams": [
                {"name": "issues", "path": "/issues", "cursor_field": "updated_at",
                 "schema": ISSUES}]}},
         "streams": [{"name": "issues", "sync_mode": "incremental"}]},
        "incremental stream 'issues' needs a start_date"),
    "rest-start-date-not-a-date": (
        {"source": {"type": "rest", "config": {
            "base_url": "http://127.0.0.1:1", "streams": [
                {"name": "issues", "path": "/issues", "cursor_field": "updated_at",
                 "start_date": "last tuesday", "schema": ISSUES}]}},
         "streams": [{"name": "issues", "sync_mode": "incremental"}]},
        "start_date 'last tuesday' is not an ISO 8601 date-time"),
    "record-cursor-outside-append-dedup": (
        {"source": _folder({"name": "events", "primary_key": ["id"]}),
         "streams": [{"name": "events", "sync_mode": "incremental",
                      "cursor_field": "updated_at"}]},
        "only orders the versions of a key in append_dedup"),
}


def _write(tmp_path: Path, fields: dict[str, Any]) -> Path:
    (tmp_path / "landing").mkdir()
    document = {"name": "refused", "source": SAMPLE,
                "destination": {"type": "delta", "config": {"path": "lake"}},
                "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}", **fields}
    path = tmp_path / "refused.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.mark.parametrize("case", list(REFUSALS))
def test_what_plan_refuses_validate_and_check_refuse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    monkeypatch.chdir(tmp_path)
    fields, reason = REFUSALS[case]
    path = _write(tmp_path, fields)
    runner = CliRunner()

    planned = runner.invoke(app, ["plan", str(path), "--json"])
    assert planned.exit_code != 0, planned.output
    assert reason in json.loads(planned.stdout)["error"]["message"]

    validated = runner.invoke(app, ["validate", str(path), "--json"])
    assert validated.exit_code == ExitCode.CONFIG, validated.output
    messages = [p["message"] for p in json.loads(validated.stdout)["problems"]]
    assert any(reason in message for message in messages), messages

    checked = runner.invoke(app, ["check", str(path), "--json"])
    assert checked.exit_code != 0, checked.output
    assert reason in json.loads(checked.stdout)["error"]["message"]


def test_a_record_cursor_the_objects_lack_is_refused_once_they_are_sampled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one refusal ``validate`` cannot make: it reads no object, and the columns of
    an object storage stream are sampled from its objects (``plan`` and ``check`` do)."""
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, {
        "source": _folder({"name": "events", "primary_key": ["id"]}),
        "streams": [{"name": "events", "sync_mode": "incremental",
                     "destination_sync_mode": "append_dedup", "cursor_field": "changed"}]})
    (tmp_path / "landing" / "a.jsonl").write_text('{"id": 1, "updated_at": "2024-01-01"}\n')
    reason = "stream 'events' has no column 'changed' to order its versions by"
    runner = CliRunner()
    for command in (["plan", str(path), "--json"], ["check", str(path), "--json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == ExitCode.CONFIG, result.output
        assert reason in json.loads(result.stdout)["error"]["message"]
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0
    # Named right, the column is taken by every command.
    path.write_text(path.read_text().replace("cursor_field: changed", "cursor_field: updated_at"))
    for command in (["plan", str(path), "--json"], ["check", str(path), "--json"],
                    ["validate", str(path)]):
        assert runner.invoke(app, command).exit_code == 0, command
