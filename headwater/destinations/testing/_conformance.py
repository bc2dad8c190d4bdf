"""The conformance run: does a destination keep the contract the engine relies on?

Shaped like the Singer SDK's target tests and the source kit
(:mod:`headwater.sdk.testing`): one function drives the destination through
real syncs (the ``sample`` source, the real engine, the caller's Spark
session, small data) and returns a report of named checks, so an author sees
every broken promise at once rather than the first.

* **mode:<sync mode>** for every destination sync mode: a declared one
  (``capabilities.sync_modes``) must land exactly the source's rows, also on a
  second sync (``history``: its current versions are the source's rows, and
  every version of both syncs is there once); an undeclared one must be
  refused, not land silently;
* **capability:...**: ``task_written_files`` against what ``file_writer``
  returns, ``stages_overwrites`` against an overwrite of several checkpoints;
* **retried checkpoint**: a checkpoint committed again with the same marker
  (the resumed attempt's lookup made blind) lands once;
* **kill after commit**: a sync killed after a commit and before its state is
  released, then resumed, holds every row once;
* **restored store**: an older copy of the metadata store put back after the
  sync ended; the next sync resumes the run as the copy knows it, and the
  destination's markers alone say what landed: every row once.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from headwater.destinations._base import Destination
from headwater.destinations.testing._kill import Killed, killed_at, on_moment
from headwater.sdk.testing import ConformanceReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.engine import SyncResult

#: Builds a fresh destination whose tables live under the given folder.
MakeDestination = Callable[[Path], Destination]
#: Reads a stream's table as a reader sees it now, through a client of the caller's own.
ReadRows = Callable[[Destination, str], pa.Table]

#: The ``sample`` source's config: two partitions (checkpoints) per stream, 40 rows.
SOURCE: dict[str, Any] = {"seed": 11, "users": 40, "orders": 40, "rows_per_partition": 20}
ALL_MODES = ("overwrite", "append", "append_dedup", "history")
_MODE_STREAMS: dict[str, dict[str, Any]] = {
    "overwrite": {"name": "orders", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"},
    "append": {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
               "cursor_field": "updated_at"},
    "append_dedup": {"name": "users", "sync_mode": "incremental",
                     "destination_sync_mode": "append_dedup", "cursor_field": "updated_at",
                     "primary_key": ["id"]},
    "history": {"name": "users", "sync_mode": "incremental",
                "destination_sync_mode": "history", "cursor_field": "updated_at",
                "primary_key": ["id"]},
}
_APPEND = _MODE_STREAMS["append"]


#: The report of a run: named checks, kept or not (the source kit's, whose ``source``
#: field here names the destination).
DestinationReport = ConformanceReport


def assert_conformant(make_destination: MakeDestination, spark: SparkSession, folder: Path,
                      **options: Any) -> DestinationReport:
    """:func:`run_conformance`, raising ``AssertionError`` that lists every failed check."""
    report = run_conformance(make_destination, spark, folder, **options)
    assert not report.failures, str(report)
    return report


def run_conformance(make_destination: MakeDestination, spark: SparkSession, folder: Path, *,
                    read_rows: ReadRows | None = None) -> DestinationReport:
    """Drive fresh destinations from ``make_destination`` through the checks (see the
    module docstring), each in its own folder under ``folder``, on ``spark``.

    Every check reads the stream's table through the destination's own
    :meth:`~Destination.read_table` (the reading ``headwater verify`` counts with).
    ``read_rows`` reads it too, through a client of the caller's own (not the
    writer's): then both must hold the source's rows, and a destination that keeps
    no table (``read_table`` raises :class:`~headwater.errors.NoTableError`: Kafka)
    is read by ``read_rows`` alone.
    """
    probe = make_destination(folder / "probe")
    report = DestinationReport(probe.type_name or type(probe).__name__)
    run = _Runner(make_destination, spark, folder, read_rows)
    for mode in ALL_MODES:
        run.mode(report, mode, declared=mode in probe.capabilities.sync_modes)
    if "append" in probe.capabilities.sync_modes:
        run.retried_checkpoint(report)
        run.kill_after_commit(report)
        run.restored_store(report)
    return report


class _Runner:
    def __init__(self, make_destination: MakeDestination, spark: SparkSession, folder: Path,
                 read_rows: ReadRows | None) -> None:
        self.make, self.spark, self.folder, self.read_rows = (make_destination, spark, folder,
                                                              read_rows)

    # ------------------------------------------------------------------ checks

    def mode(self, report: DestinationReport, mode: str, *, declared: bool) -> None:
        stream = _MODE_STREAMS[mode]
        case = self.folder / f"mode-{mode}"
        destination = self.make(case / "destination")
        staged = destination.capabilities.stages_overwrites
        # Several checkpoints, unless an overwrite would need staging the destination lacks.
        per_checkpoint = 100 if mode == "overwrite" and not staged else 1
        path = _connection(case, destination, SOURCE, stream, per_checkpoint)
        try:
            first = _sync(path, destination)
            landed = first.status == "succeeded" and self._holds(destination, SOURCE, stream)
            # The source changes (rows updated, rows added), except for a plain append,
            # whose table would then rightly hold both versions of an updated row.
            changed = SOURCE if mode == "append" else {**SOURCE, "generation": 1}
            if landed:
                path = _connection(case, destination, changed, stream, per_checkpoint)
                second = _sync(path, destination)
                landed = second.status == "succeeded" and self._holds(
                    destination, changed, stream, before=SOURCE if mode == "history" else None)
            why = f"first sync {first.status}: {_errors(first)}"
        except Exception as exc:  # a destination may raise anything
            landed, why = False, f"{type(exc).__name__}: {exc}"
        name = f"mode:{mode}"
        if declared:
            report.add(name, landed, "" if landed else f"declared, but {why}")
        else:
            report.add(name, not landed, "not declared, yet it landed every row: declare it "
                       "in capabilities.sync_modes or refuse it in prepare" if landed else "")
        if mode == "overwrite" and declared:
            self.staging(report, destination, staged, landed)
        if declared and mode == "append" and landed:
            self.file_writer(report, destination, case, first.run_id)

    def staging(self, report: DestinationReport, destination: Destination, staged: bool,
                landed: bool) -> None:
        """``stages_overwrites``: declared, an overwrite of several checkpoints landed."""
        if staged:
            report.add("capability:stages_overwrites", landed,
                       "" if landed else "declared, but a staged overwrite did not land")
            return
        case = self.folder / "unstaged-overwrite"
        other = self.make(case / "destination")
        path = _connection(case, other, SOURCE, _MODE_STREAMS["overwrite"], 1)
        try:
            result = _sync(path, other)
            refused = result.status != "succeeded"
        except Exception:
            refused = True
        report.add("capability:stages_overwrites", refused,
                   "" if refused else "not declared, yet an overwrite of several checkpoints "
                   "was accepted")

    def file_writer(self, report: DestinationReport, destination: Destination, case: Path,
                    run_id: str) -> None:
        """``task_written_files``: declared exactly when ``file_writer`` gives a writer
        (asked with the plan the first sync persisted)."""
        from headwater.metadata_store import MetadataStore
        from headwater.plan import RunPlan

        run = MetadataStore(f"sqlite:///{case / 'meta.db'}").get_run(run_id)
        assert run is not None
        plan = RunPlan.from_dict(run.plan).streams[0]
        writer = destination.file_writer(self.spark, plan)
        declared = destination.capabilities.task_written_files
        report.add("capability:task_written_files", declared == (writer is not None),
                   "" if declared == (writer is not None)
                   else f"declared {declared}, but file_writer returned {writer!r}")

    def retried_checkpoint(self, report: DestinationReport) -> None:
        """The first checkpoint committed, the sync killed; the resumed attempt's lookup is
        made blind, so the destination's commit gets the same marker again."""
        _, destination, path = self._append_case("retried")
        try:
            if not _killed_sync(path, destination, "after-commit", 1):
                raise AssertionError("the sync never reached a commit")
            with _blind_lookup():
                again = _sync(path, destination)
            ok = again.status == "succeeded" and self._holds(destination, SOURCE, _APPEND)
            why = "" if ok else f"resumed sync {again.status}, or rows missing or twice"
        except Exception as exc:
            ok, why = False, f"{type(exc).__name__}: {exc}"
        report.add("retried checkpoint lands once", ok, why)

    def kill_after_commit(self, report: DestinationReport) -> None:
        """Killed after the second commit, before its state release; resumed."""
        case, destination, path = self._append_case("killed")
        try:
            if not _killed_sync(path, destination, "after-commit", 2):
                raise AssertionError("the sync never reached its second commit")
            again = _sync(path, self.make(case / "destination"))
            ok = (again.status == "succeeded" and again.resumed
                  and self._holds(destination, SOURCE, _APPEND))
            why = "" if ok else (f"resumed sync {again.status} (resumed: {again.resumed}), "
                                 "or rows missing or twice")
        except Exception as exc:
            ok, why = False, f"{type(exc).__name__}: {exc}"
        report.add("kill after commit, before state release", ok, why)

    def restored_store(self, report: DestinationReport) -> None:
        """A copy of the store taken at the first commit, put back after the sync ended."""
        case, destination, path = self._append_case("restored")
        store, backup = case / "meta.db", case / "meta-backup.db"
        try:
            with on_moment("after-commit", 1, lambda: _copy_sqlite(store, backup)):
                first = _sync(path, destination)
            # Through SQLite, so the store's write-ahead log goes back too.
            _copy_sqlite(backup, store)
            again = _sync(path, self.make(case / "destination"))
            ok = (first.status == "succeeded" and again.status == "succeeded"
                  and again.resumed and self._holds(destination, SOURCE, _APPEND))
            why = "" if ok else (f"syncs {first.status}, {again.status}, or rows missing or "
                                 "twice after the store went back")
        except Exception as exc:
            ok, why = False, f"{type(exc).__name__}: {exc}"
        report.add("restored metadata store: the markers decide", ok, why)

    # ------------------------------------------------------------------ helpers

    def _append_case(self, name: str) -> tuple[Path, Destination, Path]:
        """A fresh folder, destination and connection of an incremental append stream."""
        case = self.folder / name
        destination = self.make(case / "destination")
        return case, destination, _connection(case, destination, SOURCE, _APPEND, 1)

    def _holds(self, destination: Destination, source: Mapping[str, Any],
               stream: Mapping[str, Any], before: Mapping[str, Any] | None = None) -> bool:
        """Whether the stream's table holds exactly the source's rows (each once).

        A history table: its current versions are the source's rows, and every
        version is there once: those of the source as it was ``before`` too.
        """
        from headwater.connectors.sample import SampleSource

        expected = SampleSource(dict(source)).expected_rows(stream["name"])
        earlier = None if before is None else SampleSource(dict(before)).expected_rows(
            stream["name"])
        return all(_landed(actual, expected, earlier, stream["destination_sync_mode"])
                   for actual in self._readings(destination, stream["name"]))

    def _readings(self, destination: Destination, stream: str) -> Iterator[pa.Table]:
        """The table through the destination's ``read_table``, then through ``read_rows``."""
        from headwater.errors import NoTableError

        try:
            own = destination.read_table(self.spark, stream).toArrow()
        except NoTableError:
            if self.read_rows is None:
                raise
        else:
            yield own
        if self.read_rows is not None:
            yield self.read_rows(destination, stream)


def _landed(actual: pa.Table, expected: pa.Table, earlier: pa.Table | None, mode: str) -> bool:
    """Whether ``actual`` holds exactly ``expected``'s rows, each once; a history table:
    its current versions do, and it holds every version of ``expected`` and ``earlier``."""
    columns = expected.column_names
    if mode != "history":
        if not set(columns) <= set(actual.column_names):
            return False
        return _values(actual, columns) == _values(expected, columns)
    if not {*columns, "_hw_is_current"} <= set(actual.column_names):
        return False
    current = actual.filter(pc.fill_null(actual.column("_hw_is_current"), False))
    versions = _values(expected, columns)
    if earlier is not None:
        versions = Counter(set(versions) | set(_values(earlier, columns)))
    return (_values(current, columns) == _values(expected, columns)
            and _values(actual, columns) == versions)


def _connection(case: Path, destination: Destination, source: Mapping[str, Any],
                stream: Mapping[str, Any], per_checkpoint: int) -> Path:
    """Write the case's connection file (the store in ``case/meta.db``)."""
    case.mkdir(parents=True, exist_ok=True)
    document = {
        "name": f"conformance-{case.name}",
        "source": {"type": "sample", "config": dict(source)},
        "destination": {"type": destination.type_name or "custom",
                        "config": dict(destination.config)},
        "streams": [dict(stream)],
        "checkpoint": {"partitions_per_checkpoint": per_checkpoint},
        "metadata_store": f"sqlite:///{case / 'meta.db'}",
    }
    path = case / "connection.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _sync(path: Path, destination: Destination) -> SyncResult:
    from headwater.config import load_connection
    from headwater.metadata_store import MetadataStore
    from headwater.operations import start_engine

    connection = load_connection(path)
    return start_engine(connection, MetadataStore(connection.metadata_store or ""),
                        destination=destination).run()


def _killed_sync(path: Path, destination: Destination, moment: str, nth: int) -> bool:
    """Sync ``path``, killed at the ``nth`` ``moment``; whether the kill happened."""
    try:
        with killed_at(moment, nth):
            _sync(path, destination)
    except Killed:
        return True
    return False


def _errors(result: SyncResult) -> str:
    return "; ".join(f"{s.name}: {s.error}" for s in result.streams if s.error) or "no error"


@contextmanager
def _blind_lookup() -> Iterator[None]:
    """A resumed attempt's lookup of earlier commits finds none: the destination's
    commit alone must recognise a checkpoint it already holds."""
    from headwater.engine import _commit_routes

    with mock.patch.object(_commit_routes.CommitRows, "find", lambda *_: None):
        yield


def _copy_sqlite(store: Path, backup: Path) -> None:
    """A consistent copy of the SQLite store while the sync holds it open, without the
    connection's lock: the process that held it when the copy was taken is gone by the
    time a backup is restored (here it is this process, so the lock would not go stale)."""
    with sqlite3.connect(store) as source, sqlite3.connect(backup) as target:
        source.backup(target)
        target.execute("DELETE FROM locks")


def _values(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    """Rows as tuples, timestamps as microseconds since the epoch (no time-zone talk)."""
    arrays = []
    for name in columns:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        arrays.append(column.to_pylist())
    return Counter(zip(*arrays, strict=True))
