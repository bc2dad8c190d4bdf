"""Change data capture from the binary log: positions, the handover rule, reading changes.

The binary log is read with python-mysql-replication (a replica's ``COM_BINLOG_DUMP``,
non-blocking: the server sends what it has and ends); it frames the events, keeps
the table maps and tracks GTIDs and rotations.  The values of the rows are decoded by
:mod:`._binlog_values` (why: see there).

* **Positions.**  A position is ``FILE:OFFSET`` in the server's binary log
  (``mariadb-bin.000003:1234``), and on MariaDB the server's GTID position there
  (``BINLOG_GTID_POS``): ``mariadb-bin.000003:1234;0-1-57``, the state's
  ``{"binlog": ...}``.  A read starts there: at the GTID position on MariaDB (its
  protocol starts a dump at GTIDs, never at a file and offset), at the file and
  offset on MySQL; the file and offset bound it either way.  Every change row
  carries ``_mysql_pos``, the position where its **transaction** starts as one
  integer (the file's number above 32 bits, the offset below: binary log order is
  commit order, so this orders changes as the server committed them), and
  ``_mysql_gtid``, the transaction's GTID where the server writes them (MariaDB
  always, MySQL with ``gtid_mode=ON``).  A transaction's rows come in their order in
  it (equal cursors: the merge keeps the later record of the partition).
* **Handover.**  The first sync takes ``P0`` *before* it plans the snapshot: on
  MariaDB from ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` and its
  ``binlog_snapshot_file``/``binlog_snapshot_position``, the point in the binary log
  that snapshot is consistent with, so every transaction that starts before ``P0``
  is committed in InnoDB (visible to every later read) and none after it is in that
  snapshot.  The key ranges are then read, each in its own later snapshot, and their
  rows carry ``_mysql_pos = P0 - 1``.  Changes are read from ``P0`` on, each with
  ``_mysql_pos >= P0``.  So for every key the change committed last after ``P0``
  wins over the snapshot's row, whether a range read saw that change or not, and a
  key no change touched after ``P0`` keeps the snapshot's row, which is its value at
  ``P0`` and at the read alike: nothing missing, nothing applied twice (a change
  read again is the same record with the same cursor).  On MySQL, which has no
  ``binlog_snapshot_*``, ``P0`` is ``SHOW MASTER STATUS``'s: a transaction written to
  the binary log but not yet committed in InnoDB at that instant, and read by no
  range, would be missed (Debezium takes a global read lock there).
* **Changes.**  A later sync reads the transactions that start in
  ``[state position, upto)``, ``upto`` being the end of the binary log when it
  plans; the next sync starts at ``upto``, so each transaction is read by one sync.
  A delete is a tombstone (the key, ``_hw_deleted = true``, other columns null); an
  ``UPDATE`` that changes the primary key is a tombstone of the old key followed by
  the row of the new one.  The state moves to ``upto`` by the engine's ordinary path,
  only after the checkpoint's commit: no server-side slot holds anything, so a
  killed sync reads the same transactions again, with the same cursors.

Limits: the binary log must still hold the state's file (``binlog_expire_logs_seconds``):
if the server purged it, the stream needs a new snapshot (its state cleared).  A
position is the server's own: after a failover to another server, snapshot again.
DDL is not followed: the table's columns are the ones discovered, and a row event
of another shape fails the read.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from headwater.connectors._cdc_state import PositionCursor
from headwater.connectors.mysql._binlog_values import ImageColumn, read_image
from headwater.connectors.mysql._catalog import TableInfo
from headwater.connectors.mysql._config import MySQLConfig
from headwater.errors import ConnectorError
from headwater.sdk import Partition
from headwater.table_schema import READER_NOTES, Note

__all__ = ["CDC_COLUMNS", "CURSOR_COLUMN", "DELETED_COLUMN", "GTID_COLUMN", "BinlogCursor",
           "Position", "check_replication", "plan_changes", "read_changes",
           "snapshot_columns", "snapshot_position"]

CURSOR_COLUMN = "_mysql_pos"
GTID_COLUMN = "_mysql_gtid"
DELETED_COLUMN = "_hw_deleted"
CDC_COLUMNS: dict[str, dict[str, Any]] = {
    CURSOR_COLUMN: {"type": "integer", "description": "binary log position where the "
                    "change's transaction starts (file number << 32 | offset): the cursor"},
    GTID_COLUMN: {"type": ["string", "null"], "description": "GTID of the change's "
                  "transaction (null for snapshot rows and servers without GTIDs)"},
    DELETED_COLUMN: {"type": "boolean", "description": "true: the row was deleted"},
}

#: Seconds a read waits for the server's next event before it fails (the log holds
#: every event up to ``changes_upto`` when the read starts, so only a stuck server waits).
READ_TIMEOUT_S = 300

_POSITION = re.compile(r"(?P<file>[^;]*\.(?P<number>\d+)):(?P<offset>\d+)"
                       r"(?:;(?P<gtid>[0-9,-]*))?")


@dataclass(frozen=True, order=True)
class Position:
    """A position in the binary log; ordered as the server writes (file number, offset).

    On MariaDB it also holds the server's GTID position there (``BINLOG_GTID_POS``):
    MariaDB's replication protocol starts a dump at a GTID position, never at a file
    and offset, so that is how a read starts; written ``FILE:OFFSET;GTID``.
    """

    number: int
    offset: int
    file: str = field(compare=False)
    gtid: str | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, text: str) -> Position:
        match = _POSITION.fullmatch(text)
        if match is None:
            raise ValueError(f"not a binary log position (FILE:OFFSET): {text!r}")
        return cls(int(match["number"]), int(match["offset"]), match["file"], match["gtid"])

    @classmethod
    def of(cls, file: str, offset: int, gtid: str | None = None) -> Position:
        text = f"{file}:{int(offset)}"
        return cls.parse(text if gtid is None else f"{text};{gtid}")

    def __str__(self) -> str:
        text = f"{self.file}:{self.offset}"
        return text if self.gtid is None else f"{text};{self.gtid}"

    @property
    def cursor(self) -> int:
        """The position as one integer, in the same order: the change rows' cursor."""
        return (self.number << 32) | self.offset


class BinlogCursor(PositionCursor):
    """The state of a binary log stream: ``{"binlog": "FILE:OFFSET"}`` (or its snapshot's)."""

    KEY = "binlog"
    FORM = "FILE:OFFSET"
    PATTERN = _POSITION


# --------------------------------------------------------------------------- server


def _rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())


def is_mariadb(conn: Any) -> bool:
    return "mariadb" in str(_rows(conn, "SELECT VERSION()")[0][0]).lower()


def _located(conn: Any, file: str, offset: int) -> Position:
    """The position, with MariaDB's GTID position there (where the server has GTIDs)."""
    if not is_mariadb(conn):
        return Position.of(file, offset)
    with conn.cursor() as cursor:
        cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", [file, int(offset)])
        (gtid,) = cursor.fetchone()
    return Position.of(file, offset, "" if gtid is None else str(gtid))


def end_of_log(conn: Any) -> Position:
    """Where the server writes its next transaction (``SHOW MASTER STATUS``)."""
    try:
        found = _rows(conn, "SHOW MASTER STATUS")
    except Exception:  # MySQL 8.4 renamed it
        found = _rows(conn, "SHOW BINARY LOG STATUS")
    if not found:
        raise ConnectorError("the server writes no binary log (log_bin is off): change data "
                             "capture needs it", field="source.config.replication_method")
    return _located(conn, str(found[0][0]), int(found[0][1]))


def snapshot_position(conn: Any) -> Position:
    """``P0``: a position every transaction before which is visible to any later read
    (MariaDB: a consistent snapshot's own; see the module docs for MySQL)."""
    with conn.cursor() as cursor:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        try:
            cursor.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
            status = {str(k): str(v) for k, v in cursor.fetchall()}
        finally:
            cursor.execute("COMMIT")
    if status.get("Binlog_snapshot_file"):
        return _located(conn, status["Binlog_snapshot_file"],
                        int(status["Binlog_snapshot_position"]))
    return end_of_log(conn)


def _grants(conn: Any) -> str:
    return " ".join(str(r[0]) for r in _rows(conn, "SHOW GRANTS FOR CURRENT_USER()")).upper()


def check_replication(conn: Any, settings: MySQLConfig) -> list[str]:
    """What stops change data capture from the binary log, in plain words (empty: nothing)."""
    problems = []
    log_bin, row_format, image = _rows(
        conn, "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")[0]
    if str(log_bin) not in ("1", "ON"):
        problems.append("the binary log is off; change data capture needs it (log_bin in the "
                        "server's config, and a restart)")
    if str(row_format).upper() != "ROW":
        problems.append(f"binlog_format is {row_format!r}; change data capture needs 'ROW' "
                        "(SET GLOBAL binlog_format = 'ROW', and in the server's config)")
    if str(image).upper() != "FULL":
        problems.append(f"binlog_row_image is {image!r}; change data capture needs 'FULL' "
                        "(SET GLOBAL binlog_row_image = 'FULL', and in the server's config)")
    grants = _grants(conn)
    everything = re.search(r"GRANT ALL PRIVILEGES ON \*\.\* ", grants) is not None
    missing = [name for name, also in (("REPLICATION SLAVE", "REPLICATION REPLICA"),
                                       ("REPLICATION CLIENT", "BINLOG MONITOR"))
               if not everything and name not in grants and also not in grants
               and "SUPER" not in grants]
    if missing:
        problems.append(f"user {settings.username!r} lacks {' and '.join(missing)}; change "
                        f"data capture needs them (GRANT REPLICATION SLAVE, REPLICATION "
                        f"CLIENT ON *.* TO '{settings.username}'@'...')")
    return problems


def require_kept(conn: Any, position: str, stream: str) -> Position:
    """``position``, if the server's binary log still holds its file."""
    start = Position.parse(position)
    kept = {str(r[0]) for r in _rows(conn, "SHOW BINARY LOGS")}
    if start.file not in kept:
        raise ConnectorError(
            f"stream {stream!r}: the binary log no longer holds {start.file} (the state's "
            "position): the server purged it, so the changes since cannot be read; clear "
            "the stream's state to snapshot it again, and keep binary logs longer "
            "(binlog_expire_logs_seconds)", stream=stream)
    return start


def plan_changes(conn: Any, stream: str, state: Mapping[str, Any]) -> Partition:
    """One partition: the transactions that start in ``[state position, end of log)``."""
    start = require_kept(conn, str(state[BinlogCursor.KEY]), stream)
    upto = end_of_log(conn)
    params = {"changes_from": str(start), "changes_upto": str(upto),
              "mariadb": is_mariadb(conn)}
    return Partition(stream, f"{stream}:changes:{start}/{upto}", params)


def snapshot_columns(batch: pa.RecordBatch, position: str) -> pa.RecordBatch:
    """A snapshot batch with the change columns: ``_mysql_pos = P0 - 1`` (below every
    change read from ``P0``; see the module docs), no GTID, not deleted."""
    rows = batch.num_rows
    cursor = Position.parse(position).cursor - 1
    columns = {CURSOR_COLUMN: pa.array([cursor] * rows, pa.int64()),
               GTID_COLUMN: pa.nulls(rows, pa.string()),
               DELETED_COLUMN: pa.array([False] * rows, pa.bool_())}
    arrays = [*batch.columns, *columns.values()]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, *columns])


# --------------------------------------------------------------------------- reading


def read_changes(settings: MySQLConfig, table: TableInfo, params: Mapping[str, Any]
                 ) -> Iterator[dict[str, Any]]:
    """The table's changes in transactions that start in ``[changes_from, changes_upto)``."""
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    start = Position.parse(str(params["changes_from"]))
    upto = Position.parse(str(params["changes_upto"]))
    if start >= upto:
        return  # nothing was written since
    login = {"host": settings.host, "port": settings.port, "user": settings.username,
             "password": settings.password.get_secret_value() if settings.password else "",
             "read_timeout": READ_TIMEOUT_S}
    mariadb = bool(params.get("mariadb"))
    # Blocking, and every event handed back (none filtered), so the loop sees the end
    # position pass ``upto`` and stops there itself: MariaDB 10.11 resets a non-blocking
    # dump part way through a long log (seen here after 1,632 events of 23,694).
    reader = _one_dump_reader()(
        connection_settings=login, server_id=(1 << 31) + secrets.randbelow(1 << 30),
        log_file=start.file, log_pos=start.offset, resume_stream=True, blocking=True,
        auto_position=(start.gtid or "") if mariadb else None, is_mariadb=mariadb,
        only_schemas=[table.database], only_tables=[table.name], enable_logging=False,
        filter_non_implemented_events=False)
    changes = _Changes(table)
    try:
        for event in reader:
            wrapper = event.packet
            if wrapper.log_pos:  # else an artificial event of the dump's start
                at = Position.of(str(reader.log_file), wrapper.log_pos - wrapper.event_size)
                if isinstance(event, GtidEvent | MariadbGtidEvent):
                    changes.begin(at, str(event.gtid))
                elif isinstance(event, QueryEvent):
                    query = event.query.strip().upper() if isinstance(event.query, str) else ""
                    if query == "BEGIN" and changes.start is None:
                        changes.begin(at, None)
                    elif query in ("COMMIT", "ROLLBACK"):
                        changes.end()
                elif isinstance(event, XidEvent):
                    changes.end()
                elif isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                    if changes.start is None:
                        changes.begin(at, None)
                    assert changes.start is not None
                    if start <= changes.start < upto:
                        yield from changes.rows(event, isinstance(event, UpdateRowsEvent),
                                                isinstance(event, DeleteRowsEvent))
            if Position.of(str(reader.log_file), reader.log_pos) >= upto:
                break
    finally:
        reader.close()


def _one_dump_reader() -> type:
    from pymysqlreplication import BinLogStreamReader

    class OneDump(BinLogStreamReader):
        """The library's reader, except that a dropped connection fails the read.

        Its own answer, connecting again and dumping from where it started (MariaDB:
        the GTID position), would give every change read so far a second time, and
        loops for ever if the server keeps dropping it.
        """

        _dumps = 0

        def _BinLogStreamReader__connect_to_stream(self) -> None:
            self._dumps += 1
            if self._dumps > 1:
                raise ConnectorError("the server dropped the binary log stream; the read "
                                     "fails and is tried again from its start")
            super()._BinLogStreamReader__connect_to_stream()

    return OneDump


class _Changes:
    """Turns one table's row events into rows of its stream, transaction by transaction."""

    def __init__(self, table: TableInfo) -> None:
        self.table = table
        self.start: Position | None = None
        self.gtid: str | None = None
        self._columns: dict[int, list[ImageColumn]] = {}

    def begin(self, at: Position, gtid: str | None) -> None:
        self.start, self.gtid = at, gtid

    def end(self) -> None:
        self.start, self.gtid = None, None

    def _image_columns(self, event: Any) -> list[ImageColumn]:
        found = self._columns.get(event.table_id)
        if found is None:
            logged = list(event.columns)
            declared = self.table.columns
            names = [getattr(c, "name", None) for c in logged]
            if len(logged) != len(declared) or any(
                    n is not None and n != c.name for n, c in zip(names, declared, strict=False)):
                raise ConnectorError(
                    f"{self.table.database}.{self.table.name} changed shape in the binary log "
                    f"(columns {names} against {[c.name for c in declared]} discovered): "
                    "change data capture does not follow DDL; clear the stream's state to "
                    "snapshot it again")
            found = [ImageColumn(c, m) for c, m in zip(declared, logged, strict=True)]
            self._columns[event.table_id] = found
        return found

    def rows(self, event: Any, update: bool, delete: bool) -> Iterator[dict[str, Any]]:
        """The rows of one row event (an update of the key: a tombstone, then the row)."""
        columns = self._image_columns(event)
        read = event.packet.read
        while event.packet.read_bytes < event.event_size:
            before = read_image(read, columns, event.columns_present_bitmap)
            if delete:
                yield self._tombstone(before[0])
                continue
            if not update:
                yield self._row(*before)
                continue
            after = read_image(read, columns, event.columns_present_bitmap2)
            if self._key(before[0]) != self._key(after[0]):
                yield self._tombstone(before[0])
            yield self._row(*after)

    def _key(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(values.get(name) for name in self.table.primary_key)

    def _stamp(self) -> dict[str, Any]:
        assert self.start is not None
        return {CURSOR_COLUMN: self.start.cursor, GTID_COLUMN: self.gtid}

    def _row(self, values: dict[str, Any], notes: Sequence[Note]) -> dict[str, Any]:
        row = {**values, **self._stamp(), DELETED_COLUMN: False}
        if notes:
            row[READER_NOTES] = list(notes)
        return row

    def _tombstone(self, values: Mapping[str, Any]) -> dict[str, Any]:
        key = {name: values.get(name) for name in self.table.primary_key}
        return {**key, **self._stamp(), DELETED_COLUMN: True}
