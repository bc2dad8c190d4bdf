"""``destination_sync_mode: history`` and ``deletes: soft | hard`` as the connection file says
them: what is refused, where, and what reaches the persisted plan (issue 38)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from headwater.config import ConnectionConfig, StreamConfig
from headwater.connectors.sample import SampleSource
from headwater.destinations import get_destination_class
from headwater.engine.connection import hard_deletes_problem, resolve_streams
from headwater.errors import ConfigError
from headwater.plan import ConfiguredStream, StreamPlan
from headwater.sync_modes import DestinationSyncMode

HISTORY = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "history"}


def connection(stream: dict[str, Any], destination: str = "delta") -> ConnectionConfig:
    return ConnectionConfig.model_validate({
        "name": "scd", "source": {"type": "sample", "config": {"users": 10}},
        "destination": {"type": destination}, "streams": [stream]})


@pytest.mark.parametrize(("stream", "message"), [
    ({**HISTORY, "sync_mode": "full_refresh"}, "full_refresh + history is not a sync mode"),
    ({**HISTORY, "primary_key": []}, "history needs a primary key"),
    ({**HISTORY, "deletes": "hard"}, "deletes applies to append_dedup streams"),
    ({"name": "users", "sync_mode": "incremental", "deletes": "hard"},
     "deletes applies to append_dedup streams, and this one is append"),
    ({"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
      "deletes": "sometimes"}, "Input should be 'soft' or 'hard'"),
])
def test_refused_settings_say_why(stream: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        StreamConfig.model_validate(stream)
    assert message in str(info.value)


@pytest.mark.parametrize("destination", ["files", "kafka"])
def test_destinations_that_cannot_keep_history_refuse_it_before_the_sync(
        destination: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_streams(SampleSource({"users": 10}), connection(HISTORY, destination))
    assert info.value.context["field"] == "streams[0].destination_sync_mode"
    assert f"the {destination} destination does not keep a row's versions" in info.value.message
    assert "use append" in info.value.message


def test_the_destinations_that_keep_history_declare_it() -> None:
    declared = {name for name in ("delta", "iceberg", "postgres", "files", "kafka")
                if DestinationSyncMode.HISTORY in get_destination_class(name).capabilities
                .sync_modes}
    assert declared == {"delta", "iceberg", "postgres"}
    # One lane: a history commit reads the versions the one before it wrote.
    for name in declared:
        assert get_destination_class(name).capabilities.lanes("history", 4) == 1


def test_hard_deletes_need_a_stream_that_says_what_is_deleted() -> None:
    stream = {"name": "users", "sync_mode": "incremental",
              "destination_sync_mode": "append_dedup", "deletes": "hard"}
    with pytest.raises(ConfigError) as info:
        resolve_streams(SampleSource({"users": 10}), connection(stream))
    assert info.value.context["field"] == "streams[0].deletes"
    assert "_hw_deleted or _pg_deleted" in info.value.message
    assert hard_deletes_problem({"properties": {"id": {}, "_pg_deleted": {}}}) is None


def test_history_and_deletes_reach_the_plan_and_survive_its_json() -> None:
    (configured,) = resolve_streams(SampleSource({"users": 10}),
                                    connection({**HISTORY, "primary_key": ["id"]}))
    assert configured.destination_sync_mode is DestinationSyncMode.HISTORY
    assert configured.deletes == "soft"
    hard = ConfiguredStream.from_dict({**configured.to_dict(), "deletes": "hard"})
    assert ConfiguredStream.from_dict(hard.to_dict()) == hard
    plan = StreamPlan(stream=configured, state_before=None, lanes=1, checkpoints=(),
                      planned_at="2026-11-29T01:00:00.123456+00:00")
    assert StreamPlan.from_dict(plan.to_dict()) == plan
    # A plan persisted before these settings existed reads back with their defaults.
    older = {k: v for k, v in plan.to_dict().items() if k != "planned_at"}
    older["stream"] = {k: v for k, v in older["stream"].items() if k != "deletes"}
    again = StreamPlan.from_dict(older)
    assert (again.planned_at, again.stream.deletes) == ("", "soft")
