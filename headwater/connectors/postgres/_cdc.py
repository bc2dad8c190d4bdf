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

* **Order.**  Every change row carries ``_pg_lsn`` = the commit LSN of its
  transaction (where its commit record starts), and a transaction's rows come in
  their order within it, so ``append_dedup`` on the primary key with cursor
  ``_pg_lsn`` keeps each key's last change: the largest commit LSN, and within one
  transaction (equal cursors, one partition) the later record, by the merge's tie
  rule (:mod:`headwater.destinations._merge_rule`).  A change's own WAL position
  would not do: a transaction open while the slot was being created writes its
  rows below the slot's point and commits after the snapshot read them, so its
  changes lost to the older snapshot rows (issue 35).
* **Initial snapshot, and the handover.**  The first sync creates the slot; its
  consistent point ``L0`` splits the transactions in two: those whose commit
  starts before ``L0`` are never decoded by the slot, those from ``L0`` on are
  (even one whose changes precede ``L0``: it may have been open while the slot was
  being created).  The table is then read in key ranges, each in a snapshot taken
  *after* the slot exists, so each sees every transaction before ``L0``.  Snapshot
  rows carry ``_pg_lsn = L0 - 1``: below every change the slot will replay, above
  every one it never will.  A change committed after ``L0`` therefore always wins
  over a snapshot row, whether the snapshot saw it or not, and one before ``L0`` is
  applied by the snapshot alone, once.  State becomes ``{"lsn": L0}`` once every
  range is committed; until then the snapshot's progress is the state
  (:mod:`._cdc_cursor`), so a resumed run finishes it.
* **Changes.**  A later sync reads the transactions whose commit starts in
  ``[state lsn, upto)``, ``upto`` being the server's flushed WAL position at plan
  time (logical decoding reads nothing past it); the next sync starts at ``upto``,
  so each transaction is read by exactly one sync.  A delete is a tombstone row
  (primary key, ``_pg_deleted = true``, other columns null); an update that changes
  the primary key is a tombstone of the old key followed by the new row.
* **Advancing.**  The slot moves to the state's LSN only after the engine
  saved that state (``Stream.on_state_committed``); a sync killed in between
  re-reads those transactions next time and skips every one whose commit LSN
  is below the saved state, so nothing is applied twice or lost.

Limits: a TRUNCATE is logged and skipped; an update that leaves a large
(TOASTed) column unchanged sends no value for it unless the table has
``REPLICA IDENTITY FULL``, so give such tables that identity.  A key change is
seen through the old key pgoutput sends, so the replica identity must be the
primary key (``DEFAULT``) or ``FULL``.
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
from headwater.connectors.postgres._cdc_cursor import LsnCursor
from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._misfits import misfit_note, misfit_text
from headwater.sdk import Partition
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
    """One partition: the transactions committed in ``[state lsn, flushed WAL position)``."""
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
    """The constant change-data-capture columns of snapshot rows (the LSN as a parameter).

    ``_pg_lsn`` is the slot's consistent point less one: every change the slot
    replays commits at or after that point, so it orders after every snapshot row.
    """
    return (sql.SQL("pg_lsn(current_setting('headwater.snapshot_lsn')) - '0/0'::pg_lsn - 1 "
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
    """The table's changes whose commit starts in ``[changes_from, changes_upto)``, as rows.

    Why both bounds here: the slot may replay a transaction committed before
    ``changes_from`` (a sync killed before it moved the slot), and the peek may go
    one record past ``changes_upto`` (a record that starts after it when the
    position is a page boundary); the next sync reads from ``changes_upto`` on.
    """
    from headwater.connectors.postgres._errors import connect

    publication, slot = names(settings, table)
    after = lsn_to_int(str(params["changes_from"]))
    upto = lsn_to_int(str(params["changes_upto"]))
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
                rows = decoder.feed(lsn_to_int(lsn), bytes(data))
                if rows and after <= decoder.commit_lsn < upto:
                    yield from rows
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

    def feed(self, lsn: int, data: bytes) -> list[dict[str, Any]]:
        """The rows one message stands for (most: none; an update of the key: two)."""
        kind, fields = decode_message(data)
        if kind == "B":
            self.commit_lsn = fields["final_lsn"]
        elif kind == "R":
            if (fields["namespace"], fields["name"]) == (self.table.schema, self.table.name):
                self._relations[fields["relid"]] = fields["columns"]
        elif kind in "IUD" and fields["relid"] in self._relations:
            return self._rows(kind, lsn, fields)
        elif kind == "T" and any(r in self._relations for r in fields["relids"]):
            log.warning("%s.%s was truncated at %s; change data capture skips TRUNCATE",
                        self.table.schema, self.table.name, int_to_lsn(lsn))
        return []

    def _rows(self, kind: str, lsn: int, fields: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Rows stamped with the transaction's commit LSN (see the module docs: order)."""
        columns = self._relations[fields["relid"]]
        old = self._values(columns, fields["old"]) if fields["old"] else {}
        if kind == "D":
            return [self._tombstone(old)]
        row = self._values(columns, fields["new"])
        for name, value in list(row.items()):
            if value is _UNCHANGED:
                row[name] = old.get(name)
                if name not in old:
                    log.warning("%s.%s: update at %s sent no value for the unchanged large "
                                "column %r; set REPLICA IDENTITY FULL on the table",
                                self.table.schema, self.table.name, int_to_lsn(lsn), name)
        rows = []
        old_key = self._key_of(old)
        if old_key is not None and old_key != self._key_of(row):
            # The key changed (pgoutput sent the old one): close it before the new row,
            # which may take it again later in the same transaction.
            rows.append(self._tombstone(old))
        rows.append({**row, LSN_COLUMN: self.commit_lsn, DELETED_COLUMN: False})
        return rows

    def _key_of(self, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The primary key in ``values``; None when they hold none (no old tuple, or an
        old key of a replica identity that is not the primary key: its columns are null)."""
        key = tuple(values.get(name) for name in self.table.primary_key)
        return None if any(v is None or v is _UNCHANGED for v in key) else key

    def _tombstone(self, old: Mapping[str, Any]) -> dict[str, Any]:
        row = {name: value for name, value in old.items() if name in self._key}
        return {**row, LSN_COLUMN: self.commit_lsn, DELETED_COLUMN: True}

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
