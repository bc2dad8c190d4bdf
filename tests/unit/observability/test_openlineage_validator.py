"""The lineage tests' validator (``tests/openlineage_schema.py``) rejects what the spec does.

Every lineage test leans on it, so it must be able to fail: each broken event here is one
Headwater could send by mistake, and each must be refused, saying where.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from openlineage.client.event_v2 import RunState
from openlineage.client.facet_v2 import output_statistics_output_dataset, schema_dataset
from openlineage.client.serde import Serde

from headwater.observability.lineage._events import RunFacts, StreamOutcome, run_event
from headwater.plan import ConfiguredStream, StreamPlan
from headwater.sync_modes import DestinationSyncMode, SyncMode
from tests.openlineage_schema import InvalidEvent, validate_event

ORDERS = StreamPlan(
    stream=ConfiguredStream(name="orders", sync_mode=SyncMode.FULL_REFRESH,
                            destination_sync_mode=DestinationSyncMode.OVERWRITE,
                            cursor_field=None, primary_key=()),
    state_before=None, lanes=1, checkpoints=(),
    json_schema={"properties": {"id": {"type": "integer"}, "total": {"type": "number"}}})
FACTS = RunFacts(run_id="20261126T050000-cd34", connection="shop", namespace="prod",
                 kind="sync", attempt=1, resumed=False, replay_of=None,
                 source_namespace="sample://", destination_namespace="file:///lake",
                 tables={"orders": "orders"})


def complete() -> dict[str, Any]:
    built = run_event(FACTS, RunState.COMPLETE, [ORDERS],
                      outcomes=[StreamOutcome("orders", 3, 300)])
    document: dict[str, Any] = json.loads(Serde.to_json(built))
    return document


def test_a_headwater_event_is_rebuilt_into_the_clients_classes() -> None:
    rebuilt = validate_event(complete())
    [table] = rebuilt.outputs or []
    assert isinstance((table.facets or {})["schema"], schema_dataset.SchemaDatasetFacet)
    assert isinstance((table.outputFacets or {})["outputStatistics"],
                      output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet)
    assert rebuilt.eventType is RunState.COMPLETE


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change to an event: the key at ``path`` (dots; ``[0]`` for a list) set or deleted."""
    def change(event: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = event
        for part in parents:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return change


DELETE = object()
BROKEN = {
    "missing runId": (_set("run.runId", DELETE), r"event\.run: runId is missing"),
    "runId not a UUID": (_set("run.runId", "20261126T050000-cd34"), r"event\.run: Run:"),
    "unknown eventType": (_set("eventType", "FINISHED"), r"'FINISHED' is not a EventType"),
    "facet URL of no facet": (
        _set("run.facets.processing_engine._schemaURL",
             "https://openlineage.io/spec/facets/9-9-9/ProcessingEngineRunFacet.json"),
        r"processing_engine: _schemaURL .* is no facet"),
    "facet of another kind": (
        _set("run.facets.schema", {"_producer": "urn:headwater:x", "_schemaURL":
             "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json"
             "#/$defs/SchemaDatasetFacet", "fields": []}),
        r"SchemaDatasetFacet is not a RunFacet"),
    "a base facet's URL": (
        _set("run.facets.processing_engine._schemaURL",
             "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet"),
        r"is no facet"),
    "wrong type": (_set("outputs.[0].outputFacets.outputStatistics.rowCount", "3"),
                   r"rowCount: '3' is not a JSON int"),
    "bool for an int": (_set("outputs.[0].outputFacets.outputStatistics.rowCount", True),
                        r"rowCount: True is not a JSON int"),
    "null": (_set("job.name", None), r"event\.job\.name: null"),
    "unknown key outside a facet": (_set("run.attempt", 1), r"\['attempt'\] are not fields"),
    "own facet without _producer": (_set("run.facets.headwater._producer", DELETE),
                                    r"headwater\._producer"),
    "eventTime without a time": (_set("eventTime", "2026-11-26"), r"has to contain time"),
    "eventTime without an offset": (_set("eventTime", "2026-11-26T05:00:00"),
                                    r"no UTC offset"),
    "another spec version's event": (
        _set("schemaURL", "https://openlineage.io/spec/1-0-5/OpenLineage.json#/$defs/RunEvent"),
        r"event\.schemaURL: .* came back as"),
    "missing schemaURL": (_set("schemaURL", DELETE), r"event\.schemaURL: added"),
    "a facet's missing _schemaURL": (_set("job.facets.jobType._schemaURL", DELETE),
                                     r"jobType: _schemaURL None is no facet"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_event_is_refused_saying_where(name: str) -> None:
    change, message = BROKEN[name]
    event = complete()
    change(event)
    with pytest.raises(InvalidEvent, match=message):
        validate_event(event)


def test_a_facet_may_carry_more_properties_and_keeps_them() -> None:
    event = complete()
    event["job"]["facets"]["jobType"]["orchestrator"] = "cron"
    rebuilt = validate_event(copy.deepcopy(event))
    assert Serde.to_dict(rebuilt) == event
