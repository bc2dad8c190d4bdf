"""A conformance kit for connector authors: does a source keep the SDK's contract?

Like the Singer SDK's tap tests, it drives a source the way the engine will,
without Spark (partitions are read in this process, as a task would read
them), and reports one named check per promise:

* **spec**: the spec is a JSON schema and the config validates against it;
* **check**: ``check()`` accepts the config;
* **discover**: streams have unique names, object schemas with properties, and
  their primary keys and cursor fields are declared properties;
* **plan**: partitions survive pickling (tasks run on executors) and their
  ``to_dict``/``from_dict`` round trip (plans are persisted as JSON); so do
  the stream objects the tasks receive;
* **read**: each partition yields Arrow batches, dict records or partition
  states, and the records fit the declared schema (no row would get a note);
* **state** (incremental streams): the state after the partitions read
  survives JSON, and a plan made from it reads none of the records already
  read (for a source whose data did not change meanwhile).

Use it from a test::

    from headwater.sdk.testing import assert_conformant

    def test_my_source_keeps_the_contract():
        assert_conformant(MySource, {"base_url": "http://127.0.0.1:8080"})

:func:`run_conformance` returns the report instead, for a look at every check.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from headwater.sdk._connector_state import PartitionState
from headwater.sdk._partition import Partition
from headwater.sdk._plan_context import PlanContext
from headwater.sdk._stream import Source, Stream

__all__ = ["Check", "ConformanceReport", "assert_conformant", "run_conformance"]


@dataclass(frozen=True)
class Check:
    """One promise of the contract, kept or not, and why."""

    name: str
    passed: bool
    detail: str = ""


@dataclass
class ConformanceReport:
    source: str
    checks: list[Check] = field(default_factory=list)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def add(self, name: str, passed: bool, detail: str = "") -> None:
        self.checks.append(Check(name, passed, detail))

    def __str__(self) -> str:
        lines = [f"conformance of {self.source}: {len(self.checks) - len(self.failures)} of "
                 f"{len(self.checks)} checks passed"]
        lines += [f"  {'ok  ' if c.passed else 'FAIL'} {c.name}"
                  + (f": {c.detail}" if c.detail else "") for c in self.checks]
        return "\n".join(lines)


def assert_conformant(source_cls: type[Source], config: Mapping[str, Any], **options: Any,
                      ) -> ConformanceReport:
    """:func:`run_conformance`, raising ``AssertionError`` that lists every failed check."""
    report = run_conformance(source_cls, config, **options)
    if report.failures:
        raise AssertionError(str(report))
    return report


def run_conformance(source_cls: type[Source], config: Mapping[str, Any], *,
                    streams: Sequence[str] | None = None,
                    state: Mapping[str, Mapping[str, Any]] | None = None,
                    max_partitions: int = 4, check_access: bool = True) -> ConformanceReport:
    """Run every check against ``source_cls`` with ``config`` (see the module docstring).

    ``streams`` limits the streams read (default: all); ``state`` (stream name ->
    state) starts incremental streams from it; at most ``max_partitions``
    partitions of each stream are read; ``check_access=False`` skips ``check()``.
    """
    from headwater.config import validate_config

    report = ConformanceReport(source_cls.__name__)
    spec = source_cls.spec()
    try:
        validated = validate_config(spec, config)
    except Exception as exc:
        report.add("spec: the config validates against the spec", False, _first_line(exc))
        return report
    report.add("spec: the config validates against the spec", True)
    source = source_cls(validated)
    if check_access:
        _record(report, "check: the source accepts the config", source.check)
    try:
        found = source.streams()
    except Exception as exc:
        report.add("discover: the source lists its streams", False, _first_line(exc))
        return report
    names = [s.stream_name for s in found]
    report.add("discover: stream names are unique and not empty",
               bool(names) and len(set(names)) == len(names), ", ".join(names))
    for stream in found:
        if streams is None or stream.stream_name in streams:
            _check_stream(report, stream, (state or {}).get(stream.stream_name),
                          max_partitions)
    return report


def _check_stream(report: ConformanceReport, stream: Stream,
                  state: Mapping[str, Any] | None, max_partitions: int) -> None:
    name = stream.stream_name
    schema = stream.json_schema()
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    report.add(f"discover {name}: the schema is an object with properties",
               isinstance(properties, Mapping) and bool(properties))
    declared = set(properties or {})
    keys = [k for k in stream.primary_key if k not in declared]
    report.add(f"discover {name}: the primary key is declared", not keys,
               f"not in the schema: {keys}" if keys else ", ".join(stream.primary_key))
    cursor = stream.cursor_field
    report.add(f"discover {name}: the cursor field is declared",
               cursor is None or cursor in declared, str(cursor))

    incremental = bool(cursor) and "incremental" in stream.supported_sync_modes
    try:
        partitions = stream.plan(state, PlanContext(parallel_tasks=2))
    except Exception as exc:
        report.add(f"plan {name}: the stream plans its partitions", False, _first_line(exc))
        return
    report.add(f"plan {name}: the stream plans its partitions", True,
               f"{len(partitions)} partitions")
    _record(report, f"plan {name}: the stream object pickles (tasks get it)",
            lambda: pickle.loads(pickle.dumps(stream)))
    _record(report, f"plan {name}: partitions survive pickling and their JSON round trip",
            lambda: _round_trips(partitions))

    chosen = partitions[:max_partitions]
    read = _read(report, stream, chosen)
    if read is None:
        return
    if incremental:
        _check_resume(report, stream, state, chosen, read)


def _round_trips(partitions: Sequence[Partition]) -> None:
    for partition in partitions:
        if pickle.loads(pickle.dumps(partition)) != partition:
            raise AssertionError(f"{partition.id} changes when pickled")
        again = Partition.from_dict(json.loads(json.dumps(partition.to_dict())))
        if again != partition:
            raise AssertionError(f"{partition.id} changes through to_dict/JSON/from_dict")


def _read(report: ConformanceReport, stream: Stream,
          partitions: Sequence[Partition]) -> list[dict[str, Any]] | None:
    """Read ``partitions`` as a task would; the records, or None if reading failed."""
    from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch

    name = stream.stream_name
    target = arrow_schema_for(stream.json_schema())
    records: list[dict[str, Any]] = []
    misfits: list[Any] = []
    states = 0
    try:
        for partition in partitions:
            pending: list[Mapping[str, Any]] = []
            for item in _items(stream, partition):
                if isinstance(item, PartitionState):
                    states += 1
                elif isinstance(item, pa.RecordBatch):
                    _, notes = conform_batch(item, target)
                    misfits += [n for row in notes.to_lists() for n in row]
                    records += item.to_pylist()
                elif isinstance(item, Mapping):
                    pending.append(item)
                else:
                    raise TypeError(f"read yielded a {type(item).__name__}, not an Arrow "
                                    "batch, a dict record or a PartitionState")
            if pending:
                _, notes = batch_from_records(pending, target)
                misfits += [n for row in notes.to_lists() for n in row]
                records += [dict(r) for r in pending]
    except Exception as exc:
        report.add(f"read {name}: partitions read without error", False, _first_line(exc))
        return None
    report.add(f"read {name}: partitions read without error", True,
               f"{len(partitions)} partitions, {len(records)} records, {states} states")
    report.add(f"read {name}: records fit the declared schema", not misfits,
               f"{len(misfits)} notes, first: {misfits[0]}" if misfits else "")
    return records


def _check_resume(report: ConformanceReport, stream: Stream, state: Mapping[str, Any] | None,
                  partitions: Sequence[Partition], read: list[dict[str, Any]]) -> None:
    name = stream.stream_name
    cursor = stream.cursor(state, True)
    for partition in partitions:
        cursor.close_partition(partition)
    after = cursor.state()
    try:
        stored = json.loads(json.dumps(after))
    except (TypeError, ValueError) as exc:
        report.add(f"state {name}: the state survives JSON", False, _first_line(exc))
        return
    report.add(f"state {name}: the state survives JSON", stored == after)
    try:
        resumed = stream.plan(stored, PlanContext(parallel_tasks=2))
        again = [r for p in resumed for r in _records(stream, p)]
    except Exception as exc:
        report.add(f"state {name}: resuming from the state reads on", False, _first_line(exc))
        return
    seen = {_identity(stream, r) for r in read}
    twice = [key for key in (_identity(stream, r) for r in again) if key in seen]
    report.add(f"state {name}: resuming from the state reads nothing already read",
               not twice, f"{len(twice)} records again, first: {twice[0]}" if twice else
               f"{len(again)} records after the state")


def _items(stream: Stream, partition: Partition) -> Iterable[Any]:
    """What the engine reads of ``partition``: the stream's ``read``, or for a stream Spark
    reads itself (:meth:`~headwater.sdk.Stream.spark_frame`, in the running session) the
    frame's batches."""
    if type(stream).spark_frame is not Stream.spark_frame:
        from pyspark.sql import SparkSession

        frame = stream.spark_frame(SparkSession.active(), [partition])
        if frame is not None:
            return frame.toArrow().to_batches()
    return stream.read(partition)


def _records(stream: Stream, partition: Partition) -> Iterable[dict[str, Any]]:
    for item in _items(stream, partition):
        if isinstance(item, pa.RecordBatch):
            yield from item.to_pylist()
        elif isinstance(item, Mapping):
            yield dict(item)


def _identity(stream: Stream, record: Mapping[str, Any]) -> tuple[Any, ...]:
    """A record's key and cursor value (the whole record when it has no key)."""
    keys = list(stream.primary_key)
    if not keys:
        return (json.dumps(record, sort_keys=True, default=str),)
    return (*(record.get(k) for k in keys), record.get(stream.cursor_field or ""))


def _record(report: ConformanceReport, name: str, action: Any) -> None:
    try:
        action()
    except Exception as exc:
        report.add(name, False, _first_line(exc))
    else:
        report.add(name, True)


def _first_line(exc: BaseException) -> str:
    """The error in one line (a spec error lists its problems on lines of their own)."""
    text = "; ".join(line.strip() for line in str(exc).strip().splitlines())
    return f"{type(exc).__name__}: {text}"
