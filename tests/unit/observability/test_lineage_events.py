"""OpenLineage events built from a run's facts: valid per the spec, deterministic, masked."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from openlineage.client.event_v2 import RunState
from openlineage.client.serde import Serde

from headwater.config import REDACTED, register_secrets
from headwater.destinations.delta import DeltaDestination
from headwater.destinations.iceberg import IcebergDestination
from headwater.destinations.testing import FakeDestination
from headwater.observability.lineage._events import (
    RunFacts,
    StreamOutcome,
    run_event,
    run_uuid,
)
from headwater.observability.lineage._namespaces import (
    destination_namespace,
    source_namespace,
    without_credentials,
)
from headwater.plan import ConfiguredStream, StreamPlan
from headwater.sync_modes import DestinationSyncMode, SyncMode
from tests.openlineage_schema import validate_event

SECRET = "lineage-unit-secret-5f1c"

USERS = StreamPlan(
    stream=ConfiguredStream(name="users", sync_mode=SyncMode.INCREMENTAL,
                            destination_sync_mode=DestinationSyncMode.APPEND,
                            cursor_field="updated_at", primary_key=("id",),
                            json_columns=("extra",)),
    state_before=None, lanes=1, checkpoints=(),
    json_schema={"properties": {"id": {"type": "integer"},
                                "updated_at": {"type": "string", "format": "date-time"},
                                "extra": {"type": "object"}}})
FACTS = RunFacts(run_id="20261126T040000-ab12", connection="shop", namespace="prod",
                 kind="sync", attempt=2, resumed=True, replay_of=None,
                 source_namespace="postgres://db.internal:5432/shop",
                 destination_namespace="file:///lake", tables={"users": "users"})


def event(state: RunState, **kwargs: Any) -> dict[str, Any]:
    built = run_event(FACTS, state, [USERS], **kwargs)
    document: dict[str, Any] = json.loads(Serde.to_json(built))
    validate_event(document)
    return document


def test_the_run_id_is_a_uuid_derived_from_headwaters_run_id() -> None:
    first = run_uuid("20261126T040000-ab12")
    assert uuid.UUID(first).version == 5
    # Fixed for good: a receiver keeps runs by this id, across Headwater versions too.
    assert first == "b99e0469-4f26-5a42-96dd-d91d2b5020f3"
    assert run_uuid("20261126T040000-ab12") == first  # every attempt, every process
    assert run_uuid("20261126T040000-ab13") != first
    start, complete = event(RunState.START), event(RunState.COMPLETE)
    assert start["run"]["runId"] == complete["run"]["runId"] == first
    assert start["run"]["facets"]["headwater"]["runId"] == "20261126T040000-ab12"
    assert start["run"]["facets"]["headwater"]["attempt"] == 2


@pytest.mark.parametrize("state", [RunState.START, RunState.COMPLETE, RunState.FAIL,
                                   RunState.ABORT])
def test_every_event_type_is_valid_openlineage(state: RunState) -> None:
    document = event(state, outcomes=[StreamOutcome("users", 42, 1234)], error="it broke")
    assert document["eventType"] == state.value
    assert document["job"] == {"namespace": "prod", "name": "shop", "facets": document["job"]
                               ["facets"]}
    assert document["job"]["facets"]["jobType"]["jobType"] == "SYNC"
    [source] = document["inputs"]
    assert (source["namespace"], source["name"]) == ("postgres://db.internal:5432/shop", "users")
    [table] = document["outputs"]
    assert (table["namespace"], table["name"]) == ("file:///lake", "users")


def test_outputs_carry_the_tables_schema_and_complete_its_statistics() -> None:
    complete = event(RunState.COMPLETE, outcomes=[StreamOutcome("users", 42, 1234)])
    [table] = complete["outputs"]
    columns = {f["name"]: f["type"] for f in table["facets"]["schema"]["fields"]}
    assert columns["id"] == "int64"
    assert columns["updated_at"] == "timestamp[us, tz=UTC]"
    assert columns["extra"] == "string (JSON text)"  # json_columns: as the table keeps it
    assert "_hw_run_id" in columns  # the metadata columns are the table's too
    assert "_hw_run_id" not in {f["name"] for f in
                                complete["inputs"][0]["facets"]["schema"]["fields"]}
    statistics = table["outputFacets"]["outputStatistics"]
    assert (statistics["rowCount"], statistics["size"]) == (42, 1234)
    # Only a run that succeeded states what it wrote.
    for state in (RunState.START, RunState.FAIL, RunState.ABORT):
        [table] = event(state, outcomes=[StreamOutcome("users", 42, 1234)])["outputs"]
        assert "outputStatistics" not in table["outputFacets"]


def test_only_fail_carries_the_error_message_and_it_is_masked() -> None:
    register_secrets([SECRET])
    failed = event(RunState.FAIL, error=f"users: refused password {SECRET}")
    facet = failed["run"]["facets"]["errorMessage"]
    assert facet["message"] == f"users: refused password {REDACTED}"
    assert facet["programmingLanguage"] == "python"
    assert SECRET not in json.dumps(failed)
    assert "errorMessage" not in event(RunState.ABORT, error="stop requested")["run"]["facets"]
    assert "errorMessage" not in event(RunState.COMPLETE)["run"]["facets"]


def test_source_namespaces_keep_where_and_drop_credentials() -> None:
    assert source_namespace("postgres", {"host": "db.internal", "port": 5432,
                                         "database": "shop", "username": "app",
                                         "password": "pw-123456"}) == \
        "postgres://db.internal:5432/shop"
    assert source_namespace("rest", {"base_url": "https://bob:pw@api.example.com/v2/?key=t0k3n"}) \
        == "https://api.example.com/v2"
    assert source_namespace("object_storage", {"url": "s3://AKIAXX:secret@bucket/raw/",
                                               "aws_secret_access_key": "x"}) == "s3://bucket/raw"
    assert source_namespace("sample", {"users": 10, "api_key": "k-123456"}) == "sample://"
    assert source_namespace("airbyte", {"package": "airbyte-source-faker", "version": "6"}) == \
        "airbyte://airbyte-source-faker"
    local = source_namespace("object_storage", {"url": "/data/in"})
    assert local == "file:///data/in"


def test_a_registered_secret_never_shows_in_a_namespace() -> None:
    register_secrets([SECRET])
    assert SECRET not in without_credentials(f"https://api.example.com/{SECRET}/v1")


class Keeps(FakeDestination):
    """A plugin destination whose config names its place under a key nobody else uses,
    and which names its tables itself."""

    def dataset_namespace(self) -> str:
        return without_credentials(self.config["bucket_url"])

    def dataset_name(self, stream: str, namespace: str) -> str:
        return f"raw/{stream}"


class SaysNothing(FakeDestination):
    """A destination that does not say where it writes."""

    def dataset_namespace(self) -> None:
        return None


def test_each_destination_names_its_own_dataset_namespace_and_tables(tmp_path: Any) -> None:
    delta = DeltaDestination({"path": "/lake"})
    assert destination_namespace(delta, ["users"]) == "file:///lake"
    assert delta.dataset_name("users", "file:///lake") == "users"
    # A table registered in a catalog is named so.
    named = DeltaDestination({"path": "/lake", "database": "raw", "table_prefix": "hw_"})
    assert named.dataset_name("users", "file:///lake") == "raw.hw_users"
    # Iceberg: the warehouse, and the table's identifier.
    iceberg = IcebergDestination({"warehouse": str(tmp_path / "wh")})
    where = destination_namespace(iceberg, ["users"])
    assert where == (tmp_path / "wh").resolve().as_uri()
    assert iceberg.dataset_name("users", where) == iceberg.table_location("users")
    # Not from config key names: "path" is there, yet the destination's own answer wins.
    keeps = Keeps({"path": "/elsewhere", "bucket_url": "s3://AKIA:secret@bucket/lake/"})
    assert destination_namespace(keeps, ["users"]) == "s3://bucket/lake"
    assert keeps.dataset_name("users", "s3://bucket/lake") == "raw/users"
    # Saying nothing: the first stream's table location stands in.
    quiet = SaysNothing({"path": "/fake"})
    assert destination_namespace(quiet, ["users"]) == "file:///fake/users"
    assert quiet.dataset_name("users", "file:///fake/users") == "file:///fake/users"
