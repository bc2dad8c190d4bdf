"""Which Delta tables the task-written path may write: an explicit allowlist, read from the table.

The task path (``_table_files/_parquet.py`` writes Parquet, ``_delta_rs.py`` adds the files
in one commit) knows nothing of what a table asks of its writers beyond
"add these files".  delta-rs's own protocol check does not help: its Python
build *accepts* column mapping, CHECK constraints, generated columns and
invariants, because its own ``write_deltalake`` enforces them while writing
the data, and ``create_write_transaction`` only commits files someone else
wrote.  So a table with any of them would silently get files that break it
(column mapping: the files hold logical names, readers look up physical
``col-<uuid>`` names and read NULL; constraints: rows Spark's writer refuses
are committed).

Hence the rule: the task path writes a table only when everything the table's
protocol and metadata ask of a writer is on the allowlist below, each item
because the task path is known to do what Spark's writer does for it; any
other table is written by Spark's Delta writer.  The decision is made on the
table's current protocol (``minReaderVersion``, ``minWriterVersion``, reader
and writer features) and metadata (configuration, partition columns, every
field's metadata and nullability, nested ones included).

What is allowed, and why:

* Protocol ``(1, 1)`` and ``(1, 2)``: what Spark and delta-rs create by
  default.  Writer version 2 implies ``appendOnly`` and ``invariants``
  support; both are checked by their use below, not by their presence.
* Reader version 3 / writer version 7 (table features) when every listed
  feature is on :data:`ALLOWED_READER_FEATURES` / :data:`ALLOWED_WRITER_FEATURES`.
  Spark lists ``appendOnly`` and ``invariants`` on every table it moves to
  table features (e.g. for a ``timestamp_ntz`` column), so they are allowed as
  listed and refused when used.
* ``timestampNtz``: only says the table may hold ``TIMESTAMP_NTZ`` columns; the
  task path writes them as Parquet timestamps not adjusted to UTC, as Spark does.
* ``deletionVectors``: new files need no deletion vector (Spark's appends write
  none either), and an overwrite's ``remove`` actions carry the removed file's
  deletion-vector descriptor (delta-rs 1.6.6 ``remove_action``), which is how
  the protocol identifies the file.  Checked against Spark in the tests.
* ``appendOnly`` / ``invariants``: allowed while unused; ``delta.appendOnly =
  true`` or any ``delta.invariants`` field metadata sends the table to Spark.
* Properties that ask writers for work: ``delta.autoOptimize.optimizeWrite`` and
  ``delta.autoOptimize.autoCompact`` (set, and not false) send the table to
  Spark, whose writer does it; the task path would set them and ignore them.

Everything else goes to Spark's writer: reader version 2 or writer versions
3 to 6 (legacy versions that imply CHECK constraints, generated columns,
change data feed, column mapping, identity columns), any feature not listed
(``columnMapping``, ``checkConstraints``, ``generatedColumns``,
``identityColumns``, ``changeDataFeed``, ``rowTracking``, ``domainMetadata``,
``clustering``, ``v2Checkpoint``, ``typeWidening``, ``icebergCompat*``,
``catalogOwned``... and any name not known today), column mapping set in the
configuration, ``delta.constraints.*``, partition columns (task files carry
no partition values), and any field that is NOT NULL or carries generation,
identity, invariant, column-mapping or default-value metadata.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Reader features whose tables the task path may write (protocol reader version 3).
ALLOWED_READER_FEATURES: frozenset[str] = frozenset({"timestampNtz", "deletionVectors"})
#: Writer features whose tables the task path may write (protocol writer version 7);
#: ``appendOnly`` and ``invariants`` only while the table does not use them.
ALLOWED_WRITER_FEATURES: frozenset[str] = frozenset(
    {"appendOnly", "invariants", "timestampNtz", "deletionVectors"})
#: Legacy protocol versions (no feature lists) the task path may write.
ALLOWED_READER_VERSIONS: frozenset[int] = frozenset({1})
ALLOWED_WRITER_VERSIONS: frozenset[int] = frozenset({1, 2})
#: The table-features versions: their features are listed, and checked one by one.
FEATURES_READER_VERSION = 3
FEATURES_WRITER_VERSION = 7

#: Table properties that ask every writer for work Spark's Delta writer does and the task
#: path does not (its files are as the tasks wrote them): such a table is Spark's to write.
_WRITER_WORK: tuple[tuple[str, str], ...] = (
    ("delta.autoOptimize.optimizeWrite", "optimized writes"),
    ("delta.autoOptimize.autoCompact", "auto compaction"),
)

#: Field metadata keys that ask a writer to compute or check a column's values.
_FIELD_METADATA: tuple[tuple[str, str], ...] = (
    ("delta.generationExpression", "is a generated column"),
    ("delta.identity.", "is an identity column"),
    ("delta.invariants", "has an invariant"),
    ("delta.columnMapping.", "has column-mapping metadata"),
    ("CURRENT_DEFAULT", "has a default value"),
)


@dataclass(frozen=True)
class TableProtocol:
    """What a Delta table asks of its writers: its protocol and metadata, as read from its log."""

    min_reader_version: int
    min_writer_version: int
    reader_features: Sequence[str] = ()
    writer_features: Sequence[str] = ()
    #: The table's configuration (``metaData.configuration``).
    properties: Mapping[str, str] = field(default_factory=dict)
    #: The table's schema in Delta's JSON form (``schemaString``), field metadata included.
    schema_json: Mapping[str, Any] = field(default_factory=dict)
    partition_columns: Sequence[str] = ()

    @property
    def versions(self) -> str:
        return f"({self.min_reader_version}, {self.min_writer_version})"


def task_path_refusal(table: TableProtocol) -> str | None:
    """Why the task path may not write ``table`` (Spark's writer must), or None when it may.

    The reason names the first thing found, in words a ``runs show`` reader can act on.
    """
    mode = table.properties.get("delta.columnMapping.mode")
    if mode is not None and mode.lower() != "none":
        return f"table uses column mapping (delta.columnMapping.mode={mode})"
    constraints = sorted(k for k in table.properties if k.startswith("delta.constraints."))
    if constraints:
        return f"table has CHECK constraints ({', '.join(constraints)})"
    refused = _protocol_refusal(table)
    if refused is not None:
        return refused
    if str(table.properties.get("delta.appendOnly", "false")).lower() == "true":
        return "table is append-only (delta.appendOnly=true)"
    for key, what in _WRITER_WORK:
        value = table.properties.get(key)
        if value is not None and value.strip().lower() not in ("false", "none"):
            return f"table asks its writers for {what} ({key}={value})"
    if table.partition_columns:
        return (f"table is partitioned by {', '.join(table.partition_columns)} (task files "
                "carry no partition values)")
    for path, spec in _fields(table.schema_json.get("fields") or [], ""):
        metadata = spec.get("metadata") or {}
        for key, what in _FIELD_METADATA:
            if any(k == key or (key.endswith(".") and k.startswith(key)) for k in metadata):
                return f"column {path} {what} ({key.rstrip('.')}...)"
        if spec.get("nullable") is False:
            return f"column {path} is NOT NULL"
    return None


def _protocol_refusal(table: TableProtocol) -> str | None:
    """Why the table's protocol versions or features are off the allowlist, or None."""
    reader, writer = table.min_reader_version, table.min_writer_version
    if reader == FEATURES_READER_VERSION:
        unknown = sorted(set(table.reader_features) - ALLOWED_READER_FEATURES)
        if unknown:
            return _features(unknown, "reader", table)
    elif reader not in ALLOWED_READER_VERSIONS:
        return (f"table protocol {table.versions}: reader version {reader} is not on the "
                "task path's allowlist" + (" (column mapping)" if reader == 2 else ""))
    if writer == FEATURES_WRITER_VERSION:
        unknown = sorted(set(table.writer_features) - ALLOWED_WRITER_FEATURES)
        if unknown:
            return _features(unknown, "writer", table)
    elif writer not in ALLOWED_WRITER_VERSIONS:
        return (f"table protocol {table.versions}: writer version {writer} is not on the "
                "task path's allowlist")
    return None


def _features(names: Sequence[str], kind: str, table: TableProtocol) -> str:
    named = {"columnMapping": "column mapping", "checkConstraints": "CHECK constraints",
             "generatedColumns": "generated columns", "identityColumns": "identity columns",
             "variantType": "VARIANT columns", "variantType-preview": "VARIANT columns",
             "clustering": "liquid clustering"}
    known = [named[n] for n in names if n in named]
    return (f"table {'uses ' + ', '.join(known) + '; ' if known else ''}"
            f"{kind} feature{'s' if len(names) > 1 else ''} {', '.join(names)} not on the "
            f"task path's allowlist (protocol {table.versions})")


def _fields(fields: Sequence[Mapping[str, Any]], prefix: str,
            ) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every field of a Delta JSON schema, nested ones included, with its dotted path.

    Array elements and map values that may not be null are reported as NOT NULL
    fields of their own (``col.element``, ``col.value``).
    """
    for spec in fields:
        path = f"{prefix}{spec.get('name')}"
        yield path, spec
        yield from _nested(spec.get("type"), path)


def _nested(data_type: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(data_type, Mapping):
        return
    kind = data_type.get("type")
    if kind == "struct":
        yield from _fields(data_type.get("fields") or [], f"{path}.")
    elif kind == "array":
        if data_type.get("containsNull") is False:
            yield f"{path}.element", {"nullable": False}
        yield from _nested(data_type.get("elementType"), f"{path}.element")
    elif kind == "map":
        if data_type.get("valueContainsNull") is False:
            yield f"{path}.value", {"nullable": False}
        yield from _nested(data_type.get("keyType"), f"{path}.key")
        yield from _nested(data_type.get("valueType"), f"{path}.value")


__all__ = ["ALLOWED_READER_FEATURES", "ALLOWED_WRITER_FEATURES", "TableProtocol",
           "task_path_refusal"]
