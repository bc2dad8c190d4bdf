"""Stream and Source: what a connector author implements.

The author declares, the framework loops: a stream says what it is (name,
schema, primary key, cursor field), how to split itself into partitions, and how
to read one partition.  Paging through partitions, running them on Spark,
typing values, committing and moving state are the engine's job.

Serialization rule (as in PySpark's data source API): a ``Stream`` object is
pickled to executors together with the partitions it reads, so keep only
config and plain values on it and open connections, clients and files inside
``read``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import pyarrow as pa

from headwater.sdk._connector_state import PartitionState
from headwater.sdk._cursor import ConcurrentCursor, Cursor, FinalStateCursor
from headwater.sdk._partition import Partition
from headwater.sdk._plan_context import PlanContext
from headwater.sdk._state_converters import StateConverter
from headwater.sdk._window import CannotCountWindow, RowWindow, WindowCount
from headwater.sync_modes import SyncMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: What ``Stream.read`` may yield: Arrow record batches (fast path) or plain dicts,
#: and, for sources that keep their own position, a :class:`PartitionState`.
RecordOrBatch: TypeAlias = pa.RecordBatch | Mapping[str, Any] | PartitionState

#: The sync modes under the names connector authors import from ``headwater.sdk``.
FULL_REFRESH = SyncMode.FULL_REFRESH
INCREMENTAL = SyncMode.INCREMENTAL


class Stream(ABC):
    """One stream of a source: a table, an API collection, a folder of objects.

    Subclasses set the class attributes (or override the properties) and
    implement :meth:`json_schema`, :meth:`partitions` and :meth:`read`.
    Incremental streams also set ``cursor_field`` and ``state_converter`` and
    get a :class:`ConcurrentCursor` for free.
    """

    name: ClassVar[str] = ""
    namespace: ClassVar[str | None] = None
    #: Column names forming the primary key (empty when the stream has none).
    primary_key: ClassVar[Sequence[str]] = ()
    #: The field that only grows when a record changes (``None``: no incremental sync).
    cursor_field: ClassVar[str | None] = None
    #: How the cursor is stored in state; required when ``cursor_field`` is set.
    state_converter: ClassVar[StateConverter | None] = None
    #: True when ``cursor_field`` is not a value of the records (an object's key): a
    #: connection may then name one of the records' columns as the stream's
    #: ``cursor_field`` for ``append_dedup``, where it orders the versions of a key
    #: (the latest wins), while reading stays incremental by the stream's own cursor.
    versions_by_record_column: ClassVar[bool] = False
    #: True when ``read`` yields :class:`PartitionState`: the source keeps its own
    #: position (an Airbyte connector) and the engine commits it with the records.
    keeps_own_state: ClassVar[bool] = False
    #: False when partitions are short and share set-up that a task pays once (an
    #: HTTP client's connections and threads): the engine then gives each Spark
    #: task a run of partitions instead of one.  A Spark task costs about 0.15 s to
    #: start, which is most of the time a partition of a few API pages takes.
    one_task_per_partition: ClassVar[bool] = True

    @property
    def max_concurrent_tasks(self) -> int | None:
        """How many Spark tasks may read this stream at once (None: no limit).

        Honoured for streams read in runs (``one_task_per_partition`` False): the
        engine gives their checkpoints no more tasks, and runs no more of their
        checkpoints side by side, than this.  An HTTP stream says its
        ``concurrency``: each task keeps at least one request in flight.
        """
        return None

    @property
    def stream_name(self) -> str:
        """The stream's name (instances may override ``name`` dynamically)."""
        return self.name

    @property
    def supported_sync_modes(self) -> list[str]:
        return [FULL_REFRESH, INCREMENTAL] if self.cursor_field else [FULL_REFRESH]

    @abstractmethod
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of one record; it decides the destination's typed columns."""

    def cursor_start(self) -> Any:
        """Where an incremental stream's history begins, in the converter's stored form."""
        raise NotImplementedError(f"stream {self.stream_name!r} must define cursor_start()")

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        """The cursor that turns closed partitions into stream state.

        Incremental streams get the concurrent cursor (merged completed ranges, so
        partitions may finish in any order); full refresh gets the final-state cursor.
        """
        if incremental and self.cursor_field:
            if self.state_converter is None:
                raise TypeError(f"stream {self.stream_name!r} has a cursor but no state_converter")
            return ConcurrentCursor(
                cursor_field=self.cursor_field,
                converter=self.state_converter,
                state=state,
                start=self.cursor_start(),
            )
        return FinalStateCursor()

    @abstractmethod
    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        """Split the stream into partitions to read, starting from ``state``.

        ``state`` is ``None`` for a full refresh or the first incremental sync.
        For incremental streams, partitions must cover every gap the cursor
        reports (``self.cursor(state, True).gaps(until)``) so data is never
        skipped, even when an earlier sync finished partitions out of order.
        """

    def plan(self, state: Mapping[str, Any] | None, context: PlanContext) -> list[Partition]:
        """The partitions of a run, knowing how the run executes (see :class:`PlanContext`).

        The engine calls this; the default is :meth:`partitions`.  Override it to
        split a shared budget across ``context.parallel_tasks`` or to plan a
        substream from its parent's records (``context.read_fields``).
        """
        return self.partitions(state)

    def estimate_rows(self, partition: Partition) -> int | None:
        """How many records ``partition`` holds, if the source can tell without reading it.

        Shown by ``headwater plan``; ``None`` (the default) means "unknown".
        Must be cheap: no data is read to plan.
        """
        return None

    def window_partitions(self, start: Any, end: Any) -> list[Partition]:
        """Partitions covering exactly the cursor window ``[start, end)`` (a backfill).

        ``start`` and ``end`` are in the state converter's stored form.  The
        default plans the whole history with :meth:`partitions` (so the stream's
        own partitioning is kept) and clips it to the window: partitions
        outside are dropped, the two that straddle an end are cut there (their
        ids get the clipped window appended).  Override it when planning the
        whole history is expensive.
        """
        from headwater.errors import ConfigError

        if not self.cursor_field or self.state_converter is None:
            raise ConfigError(f"stream {self.stream_name!r} has no cursor field, so it has no "
                              "windows to backfill", stream=self.stream_name)
        cursor = self.cursor(None, incremental=True)
        if not isinstance(cursor, ConcurrentCursor):  # pragma: no cover - the SDK's promise
            raise TypeError(f"stream {self.stream_name!r} expected a concurrent cursor")
        low_key, high_key = cursor.boundary_fields
        parse = self.state_converter.parse
        low, high = parse(start), parse(end)
        if not low < high:
            raise ConfigError(f"the window is empty: {start!r} is not before {end!r}",
                              field="--from", stream=self.stream_name)
        clipped = []
        for partition in self.partitions(None):
            a, b = parse(partition.params[low_key]), parse(partition.params[high_key])
            if b <= low or a >= high:
                continue
            if low <= a and b <= high:
                clipped.append(partition)
                continue
            a_stored = partition.params[low_key] if a >= low else start
            b_stored = partition.params[high_key] if b <= high else end
            clipped.append(Partition(partition.stream, f"{partition.id}[{a_stored},{b_stored})",
                                     {**partition.params, low_key: a_stored, high_key: b_stored}))
        return clipped

    def count_window(self, partition: Partition) -> WindowCount:
        """How many records ``partition``'s window holds at the source **now**, and the
        checksum of their primary keys where the source can compute it
        (:mod:`headwater.key_checksum`): what ``headwater verify`` compares with the
        table's rows of :meth:`table_window`.

        Runs on the driver.  Must count the window as the rows stand now, not as a
        past read saw them: rows added behind the cursor, or deleted, must show.
        The default raises :class:`CannotCountWindow`: verify then says the source
        cannot count a window.
        """
        raise CannotCountWindow(f"stream {self.stream_name!r}: its source cannot count a "
                                "window", stream=self.stream_name)

    def table_window(self, partition: Partition) -> RowWindow:
        """The rows of the stream's table that ``partition``'s window covers.

        The default, for a stream with a cursor and a state converter whose
        partitions carry the cursor's window (``start`` / ``end``): the rows whose
        cursor column lies in ``[start, end)``.  Override it together with
        :meth:`count_window` when the window is something else (a key range, a set
        of objects).
        """
        if not self.cursor_field or self.state_converter is None:
            raise CannotCountWindow(f"stream {self.stream_name!r} has no cursor, so its "
                                    "partitions have no window in the table",
                                    stream=self.stream_name)
        cursor = self.cursor(None, incremental=True)
        low_key, high_key = cursor.boundary_fields if isinstance(cursor, ConcurrentCursor) \
            else ("start", "end")
        if low_key not in partition.params or high_key not in partition.params:
            raise CannotCountWindow(f"partition {partition.id} of stream {self.stream_name!r} "
                                    "is not a cursor window", stream=self.stream_name)
        parse = self.state_converter.parse
        return RowWindow(self.cursor_field, parse(partition.params[low_key]),
                         parse(partition.params[high_key]))

    def on_state_committed(self, state: Mapping[str, Any] | None) -> None:  # noqa: B027
        """Called on the driver after the stream's state was saved (default: nothing).

        Everything ``state`` describes is committed to the destination by then,
        so a source may release what it kept for a retry, e.g. advance a
        replication slot.  A crash may skip this call; the next sync must cope.
        """

    def reads_next(self, partition: Partition) -> None:  # noqa: B027
        """The engine's hint, on the executor, before it reads a partition: once that
        one is read, this task reads ``partition`` (default: ignored).

        A stream whose partitions wait on I/O may start fetching ``partition``
        while the current one finishes, so its requests in flight never run dry
        between partitions (:class:`~headwater.sdk.http.HttpStream` does).
        """

    def task_done(self) -> None:  # noqa: B027
        """The engine's hint, on the executor, once a task has read every partition it
        was given (or failed): let go of what the task held (default: nothing).

        Spark keeps the worker process for the next task, maybe of another job, so
        what a task holds must not wait for the garbage collector:
        :class:`~headwater.sdk.http.HttpStream` closes its connections and hands its
        share of a call budget on here.
        """

    def spark_frame(self, spark: SparkSession, partitions: Sequence[Partition],
                    ) -> DataFrame | None:
        """The rows of ``partitions`` read by Spark itself, or None (the default): the
        engine reads them with :meth:`read` on the executors.

        For a source Spark already has a reader for (a database through Spark's
        JDBC reader): the frame's Spark partition ``i`` must hold exactly the rows
        of ``partitions[i]`` (so ``partitions`` has as many as the frame), because
        the engine types each Spark partition's rows as that partition's, with its
        id, in the task that receives them (:func:`headwater.engine._task.make_frame_task`).
        Called on the driver, once per checkpoint; columns as in :meth:`read`'s
        batches (the engine casts them to the table's types and notes misfits).
        """
        return None

    def lands_in(self, schema: pa.Schema) -> None:
        """The engine's hint, on the executor, before it reads: the columns the stream's
        records land in (the table's, ``json_columns`` as JSON text among them).

        The engine types dicts into these columns itself.  A stream that types
        records into Arrow batches must not type a column the table keeps as JSON
        text (or VARIANT) as structs or numbers: their text would be written back
        re-serialized (a key the record lacks as ``null``, ``1`` as ``1.0``), not
        as the record had it.  Kept in :attr:`landing` (None: not told);
        :func:`headwater.table_schema.json_kinds_differ` says which columns differ.
        """
        self.landing = schema

    #: The columns the engine lands records in, once :meth:`lands_in` told the stream.
    landing: pa.Schema | None = None

    @abstractmethod
    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        """Yield the records of one partition, as Arrow record batches or dicts.

        Runs on an executor.  Record batches may hold a subset of the schema's
        columns and looser types: the engine casts them and records every value
        that does not fit.
        """


class Source(ABC):
    """A source connector: ``spec``, ``check``, ``discover`` and its streams.

    A source is constructed from its validated config and is pickled to
    executors inside its streams, so keep it free of open connections.
    """

    #: Name used in connection files (``source.type``).
    type_name: ClassVar[str] = ""
    #: What ``headwater validate`` (which reaches nothing) may learn from this source, so
    #: that it refuses what ``sync`` would: ``"spec"`` (the default) its config against
    #: the spec only; ``"streams"`` also the source built (its constructor reads the
    #: config alone) and its streams' names, sync modes, cursors and keys; ``"schemas"``
    #: also their schemas (the columns a stream's settings name).
    offline_catalog: ClassVar[Literal["spec", "streams", "schemas"]] = "spec"
    #: Whether the source asks its system through Spark even to check, discover and plan
    #: (the ``jdbc`` source: Spark's JDBC reader and the driver jar Spark fetched).  The
    #: engine then has the connection's session running before it builds the source,
    #: which finds it with ``SparkSession.getActiveSession()``: a connector never starts
    #: a session of its own (nothing below the engine imports it).
    needs_spark: ClassVar[bool] = False

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    @abstractmethod
    def spec(cls) -> dict[str, Any]:
        """JSON Schema of the config; secret fields carry ``"airbyte_secret": true``."""

    @abstractmethod
    def check(self) -> None:
        """Raise :class:`~headwater.errors.AuthenticationError` or
        :class:`~headwater.errors.ConnectorError` if the source cannot be read."""

    @abstractmethod
    def streams(self) -> list[Stream]:
        """Every stream this source can read, with its current schema."""

    def prepare(  # noqa: B027
            self, reads: Mapping[str, Mapping[str, Any] | None] | None = None,
            context: PlanContext | None = None) -> bool | None:
        """The engine's hint, on the driver, before it starts Spark: :meth:`streams`
        will be called next (default: ignored).

        A source that learns its streams slowly (an Airbyte connector's
        ``discover`` starts a process) may start doing so in the background, so
        that it runs while Spark starts instead of after.  ``reads``, given only
        for a new run on a local master (the tasks run on this machine): the
        streams the run will likely read, each with the state it would start
        from.  A source may start those reads early, provided a task uses such a
        read only when its partition's inputs are exactly the ones guessed.
        ``context``, given with ``reads``: what the run will be planned with
        (its planning moment and shared folder, ``reads_early`` set), so a
        source can plan now the partitions the engine's plan will hold.

        Returns True when it started reads that run while Spark starts: the
        engine then starts Spark's JVM at a lower CPU priority than those
        reads (:mod:`headwater.engine._jvm_priority`).
        """

    def stream(self, name: str) -> Stream:
        for candidate in self.streams():
            if candidate.stream_name == name:
                return candidate
        from headwater.errors import ConfigError

        known = ", ".join(sorted(s.stream_name for s in self.streams()))
        raise ConfigError(f"source has no stream {name!r}; it has: {known}", stream=name)
