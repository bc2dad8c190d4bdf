"""OpenLineage run events of one Headwater run, built from plain values (no I/O).

One Headwater run is one OpenLineage run of the job ``<namespace>/<connection>``:

* ``runId``: a UUID derived from Headwater's run id (:func:`run_uuid`), so a
  resumed run (same Headwater run id, a new attempt) continues the same
  OpenLineage run, and a receiver can be asked about a run by its Headwater id;
  the Headwater id itself is in the ``headwater`` run facet.
* inputs: one dataset per stream, in the source's namespace, named by the stream;
* outputs: one dataset per stream's table, in the destination's namespace, with
  the ``schema`` facet (the table's columns, Headwater's metadata columns
  included) and, on ``COMPLETE``, ``outputStatistics`` (rows written, bytes); and
  for a stream with a ``quarantine`` expectation, its quarantine table too (its
  columns and the failed expectations' names), which the run writes as well.
* ``FAIL`` carries the ``errorMessage`` run facet (masked: no secret reaches it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    RunFacet,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    processing_engine_run,
    schema_dataset,
)

import headwater
from headwater.config import mask
from headwater.expectations._arrow import FAILED_COLUMN
from headwater.table_schema import META_FIELDS, column_type_label

if TYPE_CHECKING:
    from headwater.plan import StreamPlan

#: Who wrote the events (an OpenLineage ``producer`` is a URI).
PRODUCER = f"urn:headwater:{headwater.__version__}"
#: The UUID namespace run ids are derived in: fixed, so the same run id always
#: gives the same OpenLineage runId, in any process.
_RUN_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:headwater:run")
#: Where the ``headwater`` run facet's fields are described.
HEADWATER_FACET_SCHEMA = "urn:headwater:lineage:HeadwaterRunFacet"

#: How a Headwater run ends, as an OpenLineage event type.
END_STATES: Mapping[str, RunState] = {
    "succeeded": RunState.COMPLETE,
    "warned": RunState.COMPLETE,
    "failed": RunState.FAIL,
    "stopped": RunState.ABORT,
}


def run_uuid(run_id: str) -> str:
    """The OpenLineage ``runId`` of Headwater run ``run_id``: the same for every attempt."""
    return str(uuid.uuid5(_RUN_ID_NAMESPACE, run_id))


@attr.define
class HeadwaterRunFacet(RunFacet):
    """Headwater's own run facet: its run id and what kind of run it is."""

    runId: str  # OpenLineage's camelCase field names
    connection: str
    kind: str
    attempt: int
    resumed: bool
    replayOf: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return HEADWATER_FACET_SCHEMA


@dataclass(frozen=True)
class RunFacts:
    """What every event of one run says, whatever its type."""

    run_id: str
    connection: str
    namespace: str
    kind: str
    attempt: int
    resumed: bool
    replay_of: str | None
    source_namespace: str
    destination_namespace: str
    #: Each stream's output dataset name (its table), by stream name.
    tables: Mapping[str, str]
    #: The quarantine table's dataset name of each stream that quarantines rows.
    quarantines: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamOutcome:
    """One stream's figures at the end of a run (``outputStatistics``)."""

    name: str
    records_written: int
    bytes: int


def run_event(facts: RunFacts, state: RunState, streams: Sequence[StreamPlan], *,
              outcomes: Sequence[StreamOutcome] = (), error: str | None = None,
              now: datetime | None = None) -> RunEvent:
    """The event of ``state`` for the run ``facts`` describes (see the module docstring)."""
    run_facets: dict[str, RunFacet] = {
        "headwater": HeadwaterRunFacet(
            runId=facts.run_id, connection=facts.connection, kind=facts.kind,
            attempt=facts.attempt, resumed=facts.resumed, replayOf=facts.replay_of,
            producer=PRODUCER),
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=headwater.__version__, name="headwater", producer=PRODUCER),
    }
    if state is RunState.FAIL:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=mask(error or "the run failed"), programmingLanguage="python",
            producer=PRODUCER)
    job = Job(namespace=facts.namespace, name=facts.connection, facets={
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="HEADWATER", jobType=facts.kind.upper(),
            producer=PRODUCER)})
    figures = {outcome.name: outcome for outcome in outcomes}
    inputs = [InputDataset(namespace=facts.source_namespace, name=plan.stream.name,
                           facets={"schema": _schema(plan, metadata=False)})
              for plan in streams]
    outputs = [_output(facts, plan, figures.get(plan.stream.name)
                       if state is RunState.COMPLETE else None)
               for plan in streams]
    outputs += [_quarantine_output(facts, plan) for plan in streams
                if plan.stream.name in facts.quarantines]
    return RunEvent(eventType=state, eventTime=(now or datetime.now(UTC)).isoformat(),
                    run=Run(runId=run_uuid(facts.run_id), facets=run_facets), job=job,
                    inputs=inputs, outputs=outputs, producer=PRODUCER)


def _output(facts: RunFacts, plan: StreamPlan, outcome: StreamOutcome | None) -> OutputDataset:
    name = plan.stream.name
    output_facets: dict[str, Any] = {}
    if outcome is not None:
        output_facets["outputStatistics"] = \
            output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=outcome.records_written, size=outcome.bytes, producer=PRODUCER)
    return OutputDataset(namespace=facts.destination_namespace,
                         name=facts.tables.get(name, name),
                         facets={"schema": _schema(plan, metadata=True)},
                         outputFacets=output_facets)


def _quarantine_output(facts: RunFacts, plan: StreamPlan) -> OutputDataset:
    """The stream's quarantine table: no figures (a row failing two expectations is
    counted by each, so their counts do not add up to its rows)."""
    schema = _schema(plan, metadata=True)
    failed = schema_dataset.SchemaDatasetFacetFields(name=FAILED_COLUMN, type="array<string>")
    return OutputDataset(namespace=facts.destination_namespace,
                         name=facts.quarantines[plan.stream.name],
                         facets={"schema": schema_dataset.SchemaDatasetFacet(
                             fields=[*(schema.fields or []), failed], producer=PRODUCER)})


def _schema(plan: StreamPlan, *, metadata: bool) -> schema_dataset.SchemaDatasetFacet:
    """The stream's columns as the table types them; ``metadata``: Headwater's own first."""
    fields = [schema_dataset.SchemaDatasetFacetFields(name=meta.name, type=str(meta.type))
              for meta in (META_FIELDS if metadata else ())]
    properties = plan.json_schema.get("properties") or {}
    json_text = set(plan.stream.json_columns)
    for column, prop in properties.items():
        kind = column_type_label(prop, json_text=column in json_text) \
            if isinstance(prop, Mapping) else "unknown"
        fields.append(schema_dataset.SchemaDatasetFacetFields(name=column, type=kind))
    return schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)


__all__ = ["END_STATES", "PRODUCER", "HeadwaterRunFacet", "RunFacts", "StreamOutcome",
           "run_event", "run_uuid"]
