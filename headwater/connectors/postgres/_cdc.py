"""Change data capture through logical replication: pgoutput, a publication, a slot.

Why the SQL interface (``pg_logical_slot_peek_binary_changes``) and our own
pgoutput decoder rather than a replication connection or wal2json: it needs
no ``replication`` line in ``pg_hba.conf`` and no extra server package (Debian
ships wal2json separately; pgoutput is built in), works through any pooler,
and *peeking* leaves the slot where it is, which is exactly what "advance the
slot only after the data is committed" needs.  The decoder is small: pgoutput
protocol version 1 in text format (about a dozen message kinds).

Each stream has its own publication and slot (``<prefix>_<schema>_<table>``),
because each stream's state moves on its own.

* **Initial snapshot.**  The first sync creates the slot (its consistent point
  is ``L0``), then reads the table by key ranges, each in a snapshot taken
  *after* the slot exists.  Every row carries ``_pg_lsn = L0``; state becomes
  ``{"lsn": L0}`` once every range is committed.  Any change after ``L0`` is
  replayed over the snapshot by the next syncs with its own, larger LSN, so
  snapshot and stream join without a gap (changes the snapshot already saw are
  applied again, which changes nothing).
* **Changes.**  A later sync reads the committed transactions in
  ``(state lsn, upto]``, ``upto`` being the server's flushed WAL position at
  plan time (logical decoding reads nothing past it), as rows with
  ``_pg_lsn`` = the change's LSN and ``_pg_deleted``;
  a delete is a tombstone row (primary key, ``_pg_deleted = true``, other
  columns null).  ``append_dedup`` on the primary key with cursor ``_pg_lsn``
  keeps each key's latest change, tombstones included.
* **Advancing.**  The slot moves to the state's LSN only after the engine
  saved that state (``Stream.on_state_committed``); a sync killed in between
  re-reads those transactions next time and skips every one whose commit LSN
  is not above the saved state, so nothing is applied twice or lost.

Limits: a TRUNCATE is logged and skipped; an update that leaves a large
(TOASTed) column unchanged sends no value for it unless the table has
``REPLICA IDENTITY FULL``, so give such tables that identity.
"""

from __future__ import annotations

import hashlib
import logging
import re
import struct
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import psycopg
from psycopg import abc, sql
from psycopg.adapt import AdaptersMap, Loader, Transformer
from psycopg.pq import Format

from headwater.connectors.postgres._catalog import TableInfo
from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._misfits import misfit_note, misfit_text
from headwater.errors import StateError
from headwater.sdk import Cursor, Partition
from headwater.table_schema import READER_NOTES, JsonText, Note, is_open

__all__ = ["CDC_COLUMNS", "DELETED_COLUMN", "LSN_COLUMN", "LsnCursor", "decode_message",
           "text_transformer"]

log = logging.getLogger(__name__)

LSN_COLUMN = "_pg_lsn"
DELETED_COLUMN = "_pg_deleted"
CDC_COLUMNS: dict[str, dict[str, Any]] = {
    LSN_COLUMN: {"type": "integer", "description": "WAL position of the change (the cursor)"},
    DELETED_COLUMN: {"type": "boolean", "description": "true: the row was deleted"},
}
#: Changes fetched from the server per round trip.
FETCH_ROWS = 5_000


def lsn_to_int(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def int_to_lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def names(settings: PostgresConfig, table: TableInfo) -> tuple[str, str]:
    """The stream's publication and slot names (lowercase, at most 63 bytes)."""
    base = re.sub(r"[^a-z0-9_]", "_", f"{table.schema}_{table.name}".lower())
    if len(base) > 40:
        base = base[:31] + "_" + hashlib.blake2b(base.encode(), digest_size=4).hexdigest()
    return f"{settings.cdc.publication}_{base}"[:63], f"{settings.cdc.slot}_{base}"[:63]


# --------------------------------------------------------------------------- the cursor


class LsnCursor(Cursor):
    """State ``{"lsn": "0/16B3748"}``: every change up to that WAL position is committed.

    A snapshot's partitions each carry ``snapshot_lsn`` and ``of`` (how many
    there are); the state moves to the snapshot's LSN only when all of them
    closed, else it stays where it was (and the next sync snapshots again,
    still consistent because the slot has not moved).
    """

    def __init__(self, state: Mapping[str, Any] | None) -> None:
        if state is not None and not (isinstance(state, Mapping) and isinstance(
                state.get("lsn"), str) and re.fullmatch(r"[0-9A-Fa-f]+/[0-9A-Fa-f]+",
                                                        state["lsn"])):
            raise StateError(f"change data capture state must be {{'lsn': 'X/Y'}}, got {state!r}")
        self._state = dict(state) if state is not None else None
        self._snapshot_closed = 0
        self._snapshot: tuple[str, int] | None = None
        self._changes_upto: str | None = None

    def close_partition(self, partition: Partition) -> None:
        params = partition.params
        if "changes_upto" in params:
            self._changes_upto = str(params["changes_upto"])
        elif "snapshot_lsn" in params:
            self._snapshot = (str(params["snapshot_lsn"]), int(params["of"]))
            self._snapshot_closed += 1

    def state(self) -> dict[str, Any] | None:
        if self._changes_upto is not None:
            return {"lsn": self._changes_upto}
        if self._snapshot is not None and self._snapshot_closed >= self._snapshot[1]:
            return {"lsn": self._snapshot[0]}
        return self._state


# --------------------------------------------------------------------------- planning


def ensure_slot(conn: psycopg.Connection[Any], settings: PostgresConfig,
                tables: list[TableInfo]) -> str:
    """Create the stream's publication and slot when missing; the LSN changes start after."""
    table = tables[0]
    publication, slot = names(settings, table)
    exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                          [publication]).fetchone()
    if not exists:
        conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(
            sql.Identifier(publication), sql.Identifier(table.schema, table.name)))
    row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                       "WHERE slot_name = %s", [slot]).fetchone()
    if row is None:
        row = conn.execute("SELECT lsn::text FROM pg_create_logical_replication_slot(%s, "
                           "'pgoutput')", [slot]).fetchone()
    assert row is not None
    return str(row[0])


def plan_changes(conn: psycopg.Connection[Any], settings: PostgresConfig, stream: str,
                 table: TableInfo, state: Mapping[str, Any]) -> Partition:
    """One partition: the committed transactions in ``(state lsn, flushed WAL position]``."""
    LsnCursor(state)  # validates the shape
    ensure_slot(conn, settings, [table])
    # The *flushed* position: logical decoding reads only flushed WAL, so with
    # synchronous_commit=off a commit past it would be skipped now and never read later.
    row = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
    assert row is not None
    upto = str(row[0])
    params = {"changes_from": str(state["lsn"]), "changes_upto": upto}
    return Partition(stream, f"{stream}:changes:{params['changes_from']}/{upto}", params)


def snapshot_columns(lsn: str) -> tuple[sql.Composable, dict[str, str]]:
    """The constant change-data-capture columns of snapshot rows (the LSN as a parameter)."""
    return (sql.SQL("pg_lsn(current_setting('headwater.snapshot_lsn')) - '0/0'::pg_lsn "
                    "AS {}, false AS {}").format(sql.Identifier(LSN_COLUMN),
                                                 sql.Identifier(DELETED_COLUMN)),
            {"snapshot_lsn": lsn})


def advance_slot(settings: PostgresConfig, table: TableInfo, state: Mapping[str, Any]) -> None:
    """Move the slot to ``state["lsn"]`` (never backwards): WAL before it may be recycled."""
    from headwater.connectors.postgres._errors import connect

    _, slot = names(settings, table)
    with connect(settings) as conn:
        row = conn.execute("SELECT confirmed_flush_lsn < %s::pg_lsn FROM pg_replication_slots "
                           "WHERE slot_name = %s", [state["lsn"], slot]).fetchone()
        if row is not None and row[0]:
            conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                         [slot, state["lsn"]])


def check_replication(conn: psycopg.Connection[Any], settings: PostgresConfig) -> list[str]:
    """What stops change data capture, in plain words (empty: nothing)."""
    problems = []
    row = conn.execute("SELECT current_setting('wal_level'), r.rolreplication OR r.rolsuper, "
                       "has_database_privilege(current_database(), 'CREATE') "
                       "FROM pg_roles r WHERE r.rolname = current_user").fetchone()
    assert row is not None
    wal_level, can_replicate, can_create = row
    if wal_level != "logical":
        problems.append(f"wal_level is {wal_level!r}; change data capture needs 'logical' "
                        "(set it in postgresql.conf and restart the server)")
    if not can_replicate:
        problems.append(f"role {settings.username!r} has no replication rights; change data "
                        f"capture needs them (ALTER ROLE {settings.username} REPLICATION)")
    if not can_create:
        problems.append("the role may not create publications in this database (GRANT CREATE "
                        "ON DATABASE), unless they exist already")
    return problems


# --------------------------------------------------------------------------- reading


def read_changes(settings: PostgresConfig, table: TableInfo,
                 params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The table's changes committed in ``(changes_from, changes_upto]``, as dict rows."""
    from headwater.connectors.postgres._errors import connect

    publication, slot = names(settings, table)
    after = lsn_to_int(str(params["changes_from"]))
    decoder = _Decoder(table)
    with connect(settings) as conn:
        conn.autocommit = False
        decoder.transformer = text_transformer(conn)
        with conn.cursor(name="headwater_changes") as cur:
            cur.itersize = FETCH_ROWS
            cur.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes("
                        "%s, %s::pg_lsn, NULL, 'proto_version', '1', 'publication_names', %s)",
                        [slot, params["changes_upto"], publication])
            for lsn, data in cur:
                row = decoder.feed(lsn_to_int(lsn), bytes(data))
                if row is not None and decoder.commit_lsn > after:
                    yield row
        conn.rollback()


class _Float4Loader(Loader):
    """A ``real`` as the binary reader has it: the float32 its text stands for, widened.

    psycopg reads ``1.1`` as the double 1.1, but the column holds the float32
    nearest 1.1 (1.100000023841858 as a double), which is what a snapshot (binary
    COPY) lands: change data capture must land the same double.
    """

    def load(self, data: Any) -> float:
        return float(np.float32(bytes(data).decode()))


def text_transformer(conn: psycopg.Connection[Any]) -> abc.Transformer:
    """psycopg's text loaders of ``conn``, ``real`` (and ``real[]``'s items) read as float32."""
    adapters = AdaptersMap(conn.adapters)
    adapters.register_loader("float4", _Float4Loader)
    return Transformer(adapters)


class _Reader:
    """Reads pgoutput's big-endian fields from one message."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end].decode()
        self.pos = end + 1
        return text

    def tuple(self) -> list[tuple[str, bytes | None]]:
        count = self.take(">h")
        values: list[tuple[str, bytes | None]] = []
        for _ in range(count):
            kind = chr(self.take(">B"))
            if kind == "t":
                length = self.take(">i")
                values.append((kind, self.data[self.pos:self.pos + length]))
                self.pos += length
            else:  # "n" null, "u" unchanged TOASTed value
                values.append((kind, None))
        return values


def decode_message(data: bytes) -> tuple[str, dict[str, Any]]:
    """One pgoutput (protocol 1, text) message as ``(kind, fields)``."""
    reader = _Reader(data)
    kind = chr(reader.take(">B"))
    if kind == "B":
        return kind, {"final_lsn": reader.take(">Q"), "timestamp": reader.take(">q"),
                      "xid": reader.take(">I")}
    if kind == "C":
        reader.take(">B")
        return kind, {"commit_lsn": reader.take(">Q"), "end_lsn": reader.take(">Q")}
    if kind == "R":
        relid = reader.take(">I")
        namespace, name = reader.string(), reader.string()
        reader.take(">B")  # replica identity setting
        columns = []
        for _ in range(reader.take(">h")):
            reader.take(">B")  # flags (1: part of the key)
            columns.append((reader.string(), reader.take(">I"), reader.take(">i")))
        return kind, {"relid": relid, "namespace": namespace, "name": name, "columns": columns}
    if kind in "IUD":
        relid = reader.take(">I")
        fields: dict[str, Any] = {"relid": relid, "old": None, "new": None}
        marker = chr(reader.take(">B"))
        if marker in "KO":
            fields["old"] = reader.tuple()
            if kind == "U":
                marker = chr(reader.take(">B"))
        if marker == "N":
            fields["new"] = reader.tuple()
        return kind, fields
    if kind == "T":
        count = reader.take(">I")
        reader.take(">B")
        return kind, {"relids": [reader.take(">I") for _ in range(count)]}
    return kind, {}  # origin, type, message: nothing to apply


class _Decoder:
    """Turns one stream's pgoutput messages into rows of the stream's table."""

    def __init__(self, table: TableInfo) -> None:
        self.table = table
        self.commit_lsn = 0
        self.transformer: Any = None  # a psycopg Transformer, bound to the reading connection
        self._relations: dict[int, list[tuple[str, int, int]]] = {}
        self._text = {c.name for c in table.columns if c.type.as_text}
        #: Columns of JSON text that land as VARIANT: their text is JSON, not a string value.
        self._json = {c.name for c in table.columns if is_open(c.type.schema)}
        self._key = set(table.primary_key)
        self._columns = {c.name: c for c in table.columns}

    def feed(self, lsn: int, data: bytes) -> dict[str, Any] | None:
        kind, fields = decode_message(data)
        if kind == "B":
            self.commit_lsn = fields["final_lsn"]
        elif kind == "R":
            if (fields["namespace"], fields["name"]) == (self.table.schema, self.table.name):
                self._relations[fields["relid"]] = fields["columns"]
        elif kind in "IUD" and fields["relid"] in self._relations:
            return self._row(kind, lsn, fields)
        elif kind == "T" and any(r in self._relations for r in fields["relids"]):
            log.warning("%s.%s was truncated at %s; change data capture skips TRUNCATE",
                        self.table.schema, self.table.name, int_to_lsn(lsn))
        return None

    def _row(self, kind: str, lsn: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        columns = self._relations[fields["relid"]]
        old = self._values(columns, fields["old"]) if fields["old"] else {}
        if kind == "D":
            row = {name: value for name, value in old.items() if name in self._key}
            return {**row, LSN_COLUMN: lsn, DELETED_COLUMN: True}
        row = self._values(columns, fields["new"])
        for name, value in list(row.items()):
            if value is _UNCHANGED:
                row[name] = old.get(name)
                if name not in old:
                    log.warning("%s.%s: update at %s sent no value for the unchanged large "
                                "column %r; set REPLICA IDENTITY FULL on the table",
                                self.table.schema, self.table.name, int_to_lsn(lsn), name)
        return {**row, LSN_COLUMN: lsn, DELETED_COLUMN: False}

    def _values(self, columns: list[tuple[str, int, int]],
                values: list[tuple[str, bytes | None]]) -> dict[str, Any]:
        assert self.transformer is not None
        row: dict[str, Any] = {}
        notes: list[Note] = []
        for (name, oid, _), (kind, raw) in zip(columns, values, strict=False):
            column = self._columns.get(name)
            if kind == "u":
                row[name] = _UNCHANGED
            elif raw is None:
                row[name] = None
            elif column is not None and misfit_text(column, raw.decode()):
                # What the snapshot's reader notes (see ._misfits): same value, same note.
                row[name] = None
                notes.append(misfit_note(column, raw.decode()))
            elif name in self._json:
                row[name] = JsonText(raw.decode())
            elif name in self._text:
                row[name] = raw.decode()
            else:
                row[name] = self.transformer.get_loader(oid, Format.TEXT).load(raw)
        if notes:
            row[READER_NOTES] = notes
        return row


_UNCHANGED = object()
