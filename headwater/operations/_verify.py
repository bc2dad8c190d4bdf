"""``headwater verify``: does the table hold, window by window, what the source holds now?

For each stream, each window (:mod:`._verify_windows`) is counted twice: at the
source, now (:meth:`~headwater.sdk.Stream.count_window`: a count, and the
checksum of the keys where the source computes it) and in the table, by Spark,
over its current rows (:mod:`._verify_table`).  A window differs when the counts
differ, or when both sides computed a checksum and the checksums differ.

With ``repair``, the windows that differ are read again in one run planned and
committed exactly as ``headwater backfill`` commits (a recorded run of kind
``backfill``: one idempotent commit per checkpoint, state untouched), and the
same windows are verified again: the report says whether they now agree.

A stream is not compared (and says why) when its source cannot count a window,
when its partitions have no window in the table (change data capture), or when
its table cannot stand for the source (``full_refresh`` + ``append`` without a
primary key holds a snapshot per run).  Repair refuses ``overwrite`` streams (a
``sync`` re-reads them whole) and ``append`` streams without a key (the window's
rows would land twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from headwater.errors import ConfigError, ExitCode, NoTableError
from headwater.operations._verify_table import (
    checksum_supported,
    compared_columns,
    current_rows,
    table_counts,
)
from headwater.operations._verify_windows import (
    Window,
    group_windows,
    repair_partitions,
    run_partitions,
)
from headwater.plan import ConfiguredStream, RunPlan
from headwater.sdk import CannotCountWindow, Partition, Stream, WindowCount
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.engine import SyncEngine, SyncResult

__all__ = ["RepairOutcome", "StreamCheck", "VerifyReport", "WindowCheck", "WindowChoice",
           "repair", "verify"]


@dataclass(frozen=True)
class WindowChoice:
    """Which windows to verify: the last ``runs`` runs, the runs since ``since``, or
    the cursor window ``[start, end)`` (stored or record form, as ``backfill`` takes)."""

    runs: int = 1
    since: datetime | None = None
    start: Any = None
    end: Any = None

    @property
    def given(self) -> bool:
        return self.start is not None or self.end is not None


@dataclass(frozen=True)
class WindowCheck:
    """One window compared: what the source holds now, what the table holds."""

    window: Window
    source: WindowCount
    table: WindowCount

    @property
    def keys_compared(self) -> bool:
        return self.source.key_checksum is not None and self.table.key_checksum is not None

    @property
    def differs(self) -> bool:
        return self.source.count != self.table.count or (
            self.keys_compared and self.source.key_checksum != self.table.key_checksum)

    def to_dict(self) -> dict[str, Any]:
        return {"window": self.window.rows.label(),
                "partitions": [p.id for p in self.window.partitions],
                "source_count": self.source.count, "table_count": self.table.count,
                "source_key_checksum": _hex(self.source.key_checksum),
                "table_key_checksum": _hex(self.table.key_checksum),
                "compared": "count and keys" if self.keys_compared else "count",
                "differs": self.differs}


@dataclass
class StreamCheck:
    """A stream's windows compared, or why they could not be."""

    name: str
    mode: str
    windows: list[WindowCheck] = field(default_factory=list)
    #: Why the stream was not compared (None: it was).
    cannot: str | None = None
    #: Why ``--repair`` leaves its differing windows as they are (None: it repairs them).
    not_repairable: str | None = None

    @property
    def differing(self) -> list[WindowCheck]:
        return [w for w in self.windows if w.differs]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "mode": self.mode, "cannot_verify": self.cannot,
                "windows": [w.to_dict() for w in self.windows],
                "differing": len(self.differing), "not_repairable": self.not_repairable}


@dataclass(frozen=True)
class RepairOutcome:
    """The run that re-read the differing windows, and the verify after it."""

    run_id: str
    status: str
    partitions: int
    after: list[StreamCheck]

    @property
    def equal(self) -> bool:
        return self.status in ("succeeded", "warned") and not any(s.differing for s in self.after)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status, "partitions": self.partitions,
                "equal_after": self.equal, "after": [s.to_dict() for s in self.after]}


@dataclass
class VerifyReport:
    connection: str
    streams: list[StreamCheck]
    repair: RepairOutcome | None = None

    @property
    def exit_code(self) -> int:
        """1 when a window differs (after ``--repair``: still differs, or the repair run
        failed), else 4 when a stream could not be verified, else 0."""
        if self.repair is not None:
            if not self.repair.equal or any(s.differing and s.not_repairable
                                            for s in self.streams):
                return int(ExitCode.FAILED)
        elif any(s.differing for s in self.streams):
            return int(ExitCode.FAILED)
        if any(s.cannot for s in self.streams):
            return int(ExitCode.WARNED)
        return int(ExitCode.SUCCEEDED)

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection,
                "status": {0: "equal", 1: "differs", 4: "incomplete"}[self.exit_code],
                "exit_code": self.exit_code,
                "streams": [s.to_dict() for s in self.streams],
                "repair": self.repair.to_dict() if self.repair else None}


def verify(engine: SyncEngine, spark: SparkSession, *, streams: Sequence[str] | None = None,
           choice: WindowChoice = WindowChoice()) -> VerifyReport:
    """Compare the windows ``choice`` names, of ``streams`` (default: every stream)."""
    configured = _chosen(engine, streams)
    checks = []
    for stream in configured:
        check, windows = _windows(engine, stream, choice)
        if check.cannot is None:
            try:
                check.windows = _compare(engine, spark, stream, windows)
            except CannotCountWindow as exc:
                check.cannot = exc.message
        checks.append(check)
    return VerifyReport(engine.connection.name, checks)


def repair(engine: SyncEngine, spark: SparkSession, report: VerifyReport) -> VerifyReport:
    """Re-read the differing windows of ``report`` (one run, as a backfill commits), then
    verify those windows again; ``report`` with its :class:`RepairOutcome`."""
    from headwater.engine._spark import default_parallelism

    configured = {c.name: c for c in _chosen(engine, [s.name for s in report.streams])}
    work: list[tuple[ConfiguredStream, list[Partition]]] = []
    for check in report.streams:
        differing = [w.window for w in check.differing]
        if differing and not check.not_repairable:
            stream = engine.source.stream(check.name)
            work.append((configured[check.name], repair_partitions(stream, differing)))
    if not work:
        return report

    def make_plan(spark: SparkSession) -> RunPlan:
        per_checkpoint = engine.per_checkpoint(default_parallelism(spark))
        plans = [engine.stream_plan(c, parts, engine.store.get_state(engine.connection.name,
                                                                      c.name),
                                    per_checkpoint=per_checkpoint) for c, parts in work]
        return RunPlan(connection=engine.connection.name, streams=tuple(plans),
                       purpose="backfill")

    result: SyncResult = engine.run_plan(make_plan)
    after = []
    for c, _ in work:
        check = next(s for s in report.streams if s.name == c.name)
        windows = [w.window for w in check.differing]
        after.append(StreamCheck(c.name, c.mode_label,
                                 _compare(engine, spark, c, windows)))
    report.repair = RepairOutcome(result.run_id, result.status,
                                  sum(len(parts) for _, parts in work), after)
    return report


def _chosen(engine: SyncEngine, names: Sequence[str] | None) -> list[ConfiguredStream]:
    from headwater.engine.connection import resolve_streams

    configured = resolve_streams(engine.source, engine.connection)
    known = {c.name for c in configured}
    for name in names or ():
        if name not in known:
            raise ConfigError(f"connection {engine.connection.name} does not sync stream "
                              f"{name!r}; it syncs: {', '.join(sorted(known))}",
                              field="--stream")
    return [c for c in configured if not names or c.name in names]


def _windows(engine: SyncEngine, configured: ConfiguredStream,
             choice: WindowChoice) -> tuple[StreamCheck, list[Window]]:
    """The stream's check (empty, or saying why it cannot be made) and its windows."""
    from headwater.engine._rerun import window_bounds

    check = StreamCheck(configured.name, configured.mode_label,
                        not_repairable=_not_repairable(configured))
    stream = engine.source.stream(configured.name)
    mode = configured.destination_sync_mode
    if type(stream).count_window is Stream.count_window:
        check.cannot = f"{engine.source.type_name} cannot count a window"
        return check, []
    if mode is DestinationSyncMode.APPEND and not configured.primary_key \
            and not configured.incremental:
        check.cannot = ("full_refresh + append without a primary key: the table holds a "
                        "snapshot per run, not the source's rows")
        return check, []
    try:
        if choice.given:
            if choice.start is None or choice.end is None:
                raise ConfigError("a window needs both --from and --to", field="--from")
            partitions = stream.window_partitions(*window_bounds(stream, choice.start,
                                                                 choice.end))
        else:
            partitions = run_partitions(engine.store, engine.connection.name, configured.name,
                                        mode=mode, runs=choice.runs, since=choice.since)
        return check, group_windows(stream, partitions)
    except CannotCountWindow as exc:
        check.cannot = exc.message
        return check, []


def _not_repairable(configured: ConfiguredStream) -> str | None:
    mode = configured.destination_sync_mode
    if mode is DestinationSyncMode.OVERWRITE:
        return "an overwrite table is re-read whole by `headwater sync`, not by window"
    if mode is DestinationSyncMode.APPEND and not configured.primary_key:
        return "append without a primary key: re-reading a window would land its rows twice"
    return None


def _compare(engine: SyncEngine, spark: SparkSession, configured: ConfiguredStream,
             windows: Sequence[Window]) -> list[WindowCheck]:
    if not windows:
        return []
    stream = engine.source.stream(configured.name)
    # The table first: a destination that keeps none is said before the source is asked.
    table = _table(engine, spark, configured.name,
                   compared_columns(configured, [w.rows for w in windows]))
    sources = [stream.count_window(w.partitions[0]) for w in windows]
    rows = current_rows(table, configured)
    # Keys are compared only where both sides hash the same columns the same way.
    key = configured.primary_key if (configured.primary_key
                                     and tuple(stream.primary_key) == configured.primary_key
                                     and checksum_supported(rows, configured.primary_key)) \
        else None
    tables = table_counts(rows, [w.rows for w in windows], key)
    return [WindowCheck(w, s, t) for w, s, t in zip(windows, sources, tables, strict=True)]


def _table(engine: SyncEngine, spark: SparkSession, stream: str,
           columns: Sequence[str]) -> DataFrame:
    """The stream's table as its destination reads it (``Destination.read_table``), or
    :class:`CannotCountWindow` when it cannot: a destination that keeps no table (Kafka),
    no table yet, a table it cannot read here."""
    destination = engine.destination
    try:
        table = destination.read_table(spark, stream, columns)
        table.schema  # noqa: B018 - resolves the table now, where its absence is caught
    except NoTableError as exc:
        raise CannotCountWindow(exc.message, stream=stream) from exc
    except Exception as exc:
        raise CannotCountWindow(f"the {destination.type_name} destination's table "
                                f"{destination.table_location(stream)} cannot be read here: "
                                f"{type(exc).__name__}: {_first_line(exc)}",
                                stream=stream) from exc
    return table


def _first_line(exc: BaseException) -> str:
    lines = (getattr(exc, "message", None) or str(exc)).splitlines()
    return lines[0] if lines else ""


def _hex(checksum: int | None) -> str | None:
    return None if checksum is None else f"{checksum:016x}"
