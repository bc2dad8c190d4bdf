"""Table schema of a stream: typed Arrow columns from its JSON Schema, plus metadata columns.

Runs on executors, on every batch a stream yields, so the common case (the
reader already produced the right Arrow type) costs nothing, a column of the
wrong type is cast with Arrow's vectorised kernels, and only a column whose cast
fails falls back to value-by-value conversion.  A value that does not fit its
column becomes null and leaves a note ``{field, reason, value}`` in the row's
``_hw_notes``: never dropped silently, never fatal to the sync.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater import json_numbers
from headwater.json_numbers import JsonFloat, exact_decimal

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")
LOCAL_TIMESTAMP = pa.timestamp("us")

NOTE_TYPE = pa.struct([("field", pa.string()), ("reason", pa.string()), ("value", pa.string())])
NOTES_TYPE = pa.list_(NOTE_TYPE)

#: Metadata columns, first in every table so Delta always keeps statistics on them.
META_FIELDS: list[pa.Field] = [
    pa.field("_hw_raw_id", pa.string(), nullable=False),
    pa.field("_hw_extracted_at", UTC_TIMESTAMP, nullable=False),
    pa.field("_hw_run_id", pa.string(), nullable=False),
    pa.field("_hw_partition_id", pa.string(), nullable=False),
    pa.field("_hw_checkpoint", pa.int64(), nullable=False),
    pa.field("_hw_notes", NOTES_TYPE),
]
META_NAMES = [f.name for f in META_FIELDS]


def unwritten_columns(existing: Iterable[str], data_schema: pa.Schema) -> list[str]:
    """The columns of a table (``existing``, in its order) that neither the metadata
    columns nor ``data_schema`` write: what a destination's ``unwritten_columns`` says."""
    written = {*META_NAMES, *data_schema.names}
    return [name for name in existing if name not in written]


#: Notes keep at most this much of a misfit value: enough to debug, bounded per row.
MAX_NOTE_VALUE = 1000

#: A reader may attach notes to its own rows (a line it could not parse, a ragged
#: CSV row) in a column or dict key of this name, of :data:`NOTES_TYPE` shape; they are
#: merged with the notes the engine writes, so such rows count as rejected too.
READER_NOTES = "_hw_notes"


Note = dict[str, str]


class RowNotes:
    """The notes of a batch's rows, kept sparse: ``notes[row]`` is that row's list.

    Almost no row has a note, and one Python list per row cost about 0.6 µs a
    row, more than the rest of the engine's per-batch work together
    (bench/RESULTS.md); here a row's list exists only once something is noted.
    """

    def __init__(self, length: int = 0) -> None:
        self._length = length
        self._rows: dict[int, list[Note]] = {}

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, row: int) -> list[Note]:
        if not 0 <= row < self._length:
            raise IndexError(row)
        return self._rows.setdefault(row, [])

    def any(self) -> bool:
        """Whether some row has a note."""
        return any(self._rows.values())

    def to_lists(self) -> list[list[Note]]:
        """Every row's notes (empty lists included): for tests and small batches."""
        return [self._rows.get(row, []) for row in range(self._length)]

    def array(self) -> pa.Array:
        """Per-row notes, null for rows without any (so ``count(_hw_notes)`` counts misfits)."""
        noted = {row: found for row, found in self._rows.items() if found}
        if not noted:
            return pa.nulls(self._length, NOTES_TYPE)
        return pa.array([noted.get(row) for row in range(self._length)], type=NOTES_TYPE)


class NoteRows(Protocol):
    """Where notes go: a batch's :class:`RowNotes`, or a view of it for nested values."""

    def __getitem__(self, row: int) -> list[Note]: ...


class _NestedRows:
    """The notes of a nested column's values (a list's items): value ``i`` is on row ``rows[i]``."""

    def __init__(self, notes: NoteRows, rows: np.ndarray[Any, Any]) -> None:
        self._notes, self._rows = notes, rows

    def __getitem__(self, row: int) -> list[Note]:
        return self._notes[int(self._rows[row])]


def _types_of(prop: Mapping[str, Any]) -> list[str]:
    declared = prop.get("type", [])
    types = [declared] if isinstance(declared, str) else list(declared)
    if not types:
        for key in ("anyOf", "oneOf"):
            for branch in prop.get(key, []):
                types += _types_of(branch)
    return [t for t in types if t != "null"]


def arrow_type_for(prop: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type a JSON Schema property lands as.

    An object that declares its ``properties`` is a struct of them (typed by the
    same rules, recursively), an array of such objects a list of structs, an array
    of arrays a nested list.  Open values (:func:`is_open`: an object without
    ``properties``, mixed types, no type, arrays of those) travel as JSON text, a
    string column; the field made by :func:`arrow_field_for` says the destination
    stores them as VARIANT.
    """
    if is_open(prop):
        return pa.string()
    types = _types_of(prop)
    if len(types) != 1:
        return pa.string()
    kind = types[0]
    fmt = prop.get("format")
    airbyte_type = prop.get("airbyte_type")
    if kind == "integer":
        return pa.int64()
    if kind == "number":
        if fmt == "decimal" and _decimal_bounds(prop) is not None:
            precision, scale = _decimal_bounds(prop) or (0, 0)
            return pa.decimal128(precision, scale)
        return pa.int64() if airbyte_type == "integer" else pa.float64()
    if kind == "boolean":
        return pa.bool_()
    if kind == "string":
        if fmt == "date-time":
            if airbyte_type == "timestamp_without_timezone":
                return LOCAL_TIMESTAMP
            return UTC_TIMESTAMP
        if fmt == "date":
            return pa.date32()
        if prop.get("contentEncoding") == "base64":
            return pa.binary()
        return pa.string()
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, Mapping):
            return pa.list_(arrow_type_for(items))
        return pa.string()
    if kind == "object":
        struct = struct_type_for(prop)
        if struct is not None:
            return struct
    return pa.string()


def struct_type_for(prop: Mapping[str, Any]) -> pa.StructType | None:
    """The struct an object with declared ``properties`` lands as, or None (an open object).

    Keys the properties do not name are not columns: a value that has some keeps
    them as notes on its row (``{field: "parent.key"}``), as top-level fields are.
    """
    props = prop.get("properties")
    if not isinstance(props, Mapping) or not props:
        return None
    return pa.struct([pa.field(str(name), arrow_type_for(child) if isinstance(child, Mapping)
                               else pa.string()) for name, child in props.items()])


def map_leaf_types(kind: pa.DataType,
                   leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``kind`` with each type that is neither a struct nor a list replaced by
    ``leaf(type)``, at any depth (how a reader is asked to read a nested column)."""
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, map_leaf_types(f.type, leaf)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(map_leaf_types(kind.value_type, leaf))
    return leaf(kind)


def has_decimal(kind: pa.DataType) -> bool:
    """A decimal, or a struct or list with a decimal leaf at any depth."""
    if pa.types.is_struct(kind):
        return any(has_decimal(field.type) for field in kind)
    if pa.types.is_list(kind):
        return has_decimal(kind.value_type)
    return pa.types.is_decimal(kind)


def is_nested(target: pa.DataType) -> bool:
    """A struct, or a list whose items are structs or lists (typed by :func:`_nested_value`)."""
    if pa.types.is_struct(target):
        return True
    return pa.types.is_list(target) and (pa.types.is_struct(target.value_type)
                                         or pa.types.is_list(target.value_type))


def _decimal_bounds(prop: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(precision, scale)`` of a ``{"type": "number", "format": "decimal"}`` property.

    Only when both fit a Delta decimal (precision 1..38, 0 <= scale <= precision);
    otherwise the number stays a double, as before decimals were known.
    """
    precision, scale = prop.get("precision"), prop.get("scale", 0)
    if isinstance(precision, int) and isinstance(scale, int) and 1 <= precision <= 38 \
            and 0 <= scale <= precision:
        return precision, scale
    return None


def arrow_schema_for(json_schema: Mapping[str, Any],
                     json_columns: Iterable[str] = ()) -> pa.Schema:
    """Data columns for a stream, in the schema's property order.

    ``json_columns`` are the columns the user asked to keep as JSON text
    (the stream's ``json_columns`` in the connection file).
    """
    props = json_schema.get("properties") or {}
    as_text = set(json_columns)
    return pa.schema([arrow_field_for(name, prop, json_text=name in as_text)
                      for name, prop in props.items()])


# --------------------------------------------------------------------- open values

#: Field metadata key saying what a string column's text is (:data:`VARIANT`, :data:`JSON_TEXT`).
LOGICAL_KEY = b"headwater.logical"
#: JSON text the destination stores as a VARIANT (Delta: ``parse_json`` by Spark's writer).
VARIANT = b"variant"
#: JSON text stored as text, as the user asked (``json_columns``): the source's own bytes
#: where the reader still had them.
JSON_TEXT = b"json"

#: JSON Schema types a value of ``json_columns`` may have: what holds nested data.
_NESTED_TYPES = frozenset({"object", "array"})


def is_open(prop: Mapping[str, Any]) -> bool:
    """Whether a property's values have no one column type: an object without
    ``properties`` (``additionalProperties``/``patternProperties`` alone do not
    name columns), mixed types or none, or an array of such values (or of
    unknown items).  Such values land as VARIANT, not as a struct or a scalar."""
    types = _types_of(prop)
    if len(types) != 1:
        return True
    if types[0] == "object":
        return not prop.get("properties")
    if types[0] == "array":
        items = prop.get("items")
        return not isinstance(items, Mapping) or is_open(items)
    return False


def arrow_field_for(name: str, prop: Mapping[str, Any], *, json_text: bool = False) -> pa.Field:
    """The column a property lands as, with what its text means.

    An open value (:func:`is_open`) is a string column of JSON text marked
    :data:`VARIANT`; with ``json_text`` (the user asked for JSON text) the
    column is JSON text marked :data:`JSON_TEXT`, whatever the property's type.
    """
    if json_text:
        return pa.field(name, pa.string(), metadata={LOGICAL_KEY: JSON_TEXT})
    if is_open(prop):
        return pa.field(name, pa.string(), metadata={LOGICAL_KEY: VARIANT})
    return pa.field(name, arrow_type_for(prop))


def json_kind(field: pa.Field) -> bytes | None:
    """:data:`VARIANT` or :data:`JSON_TEXT` for a column that carries JSON text, else None."""
    found = (field.metadata or {}).get(LOGICAL_KEY)
    return found if found in (VARIANT, JSON_TEXT) else None


def json_kinds_differ(own: pa.Schema, landing: pa.Schema | None) -> list[pa.Field]:
    """The fields of ``landing`` (the columns records land in) that are JSON text or
    VARIANT where ``own`` (the stream's columns) is not, or the other way round.

    A reader that types records by ``own`` would hand the engine structs or numbers
    it then writes back as text (or text it parses): not the record's own text, and
    not what the engine makes of the record's values (``Stream.lands_in``).
    """
    if landing is None:
        return []
    kinds = {field.name: json_kind(field) for field in own}
    return [field for field in landing
            if field.name in kinds and kinds[field.name] != json_kind(field)]


def variant_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` the destination stores as VARIANT."""
    return [field.name for field in schema if json_kind(field) == VARIANT]


def column_type_label(prop: Mapping[str, Any], *, json_text: bool = False) -> str:
    """The table type a property lands as, for people (``headwater discover``)."""
    kind = json_kind(arrow_field_for("_", prop, json_text=json_text))
    if kind == VARIANT:
        return "variant"
    if kind == JSON_TEXT:
        return "string (JSON text)"
    return str(arrow_type_for(prop))


def json_columns_problem(json_schema: Mapping[str, Any], names: Iterable[str]) -> str | None:
    """Why ``names`` cannot be kept as JSON text in this stream, or None when they can.

    A listed column must be in the stream's schema and hold nested or open
    values (an object, an array, mixed or no types): a number or a plain
    string has no JSON text of its own to keep.
    """
    props = json_schema.get("properties") or {}
    for name in names:
        prop = props.get(name)
        if prop is None:
            return f"json_columns: the stream has no column {name!r}"
        types = _types_of(prop)
        if not is_open(prop) and not _NESTED_TYPES.intersection(types):
            return (f"json_columns: column {name!r} is a {'/'.join(types)}, not an object, "
                    "an array or an untyped value; only those are kept as JSON text")
    return None


class JsonText(str):
    """A value that already is JSON text (a source's own bytes for it), kept as it is.

    A reader that still has a record's raw bytes puts ``JsonText`` in the
    record for its open columns; any other value is serialized by
    :func:`to_json_text`.  In an Arrow batch a JSON-text column of type string
    is read as JSON text already (the reader's contract), so only dict records
    need the mark: there a plain ``str`` is a JSON string value.
    """

    __slots__ = ()


def to_json_text(value: Any) -> str:
    """``value`` as JSON text: as it is when it is :class:`JsonText`, else serialized
    compactly with its keys in the order the record has them (never re-sorted) and
    non-ASCII characters as they are.  What a dict lost of the source's text (number
    formatting, spacing) it cannot give back: readers that have the bytes pass them.

    Raises ``ValueError`` for what JSON cannot hold (NaN, infinities).
    """
    if isinstance(value, JsonText):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)


def json_text_values(name: str, values: Sequence[Any], notes: RowNotes) -> pa.Array:
    """A JSON-text column from Python values; a value JSON cannot hold is null plus a note."""
    out: list[str | None] = []
    for row, value in enumerate(values):
        if value is None:
            out.append(None)
            continue
        try:
            out.append(to_json_text(value))
        except (ValueError, TypeError, RecursionError) as exc:
            out.append(None)
            notes[row].append({"field": name, "reason": f"not representable as JSON: {exc}",
                               "value": _clip(value)})
    return pa.array(out, type=pa.string())


def json_text_column(name: str, column: pa.Array | pa.ChunkedArray,
                     notes: RowNotes) -> pa.Array:
    """A reader's column for a JSON-text field: a string column is JSON text already
    (kept byte for byte); any other type (a struct Arrow inferred, numbers) is
    serialized value by value."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), pa.string())
    return json_text_values(name, python_values(column), notes)


def python_values(column: pa.Array) -> list[Any]:
    """A column's values in Python, maps (a Parquet or Avro map, at any depth) as
    dicts: their JSON is an object, not a list of pairs.  A map with a key twice
    stays its pairs, all of them."""
    try:
        return column.to_pylist(maps_as_pydicts="strict")
    except KeyError:
        return column.to_pylist()


# --------------------------------------------------------------------------- values


def note_text(value: Any) -> str:
    """A value as a string column holds it, and as a note shows it: a string as it
    is (a UUID, which fastavro gives for Avro's ``uuid``, as its text), any other
    value as JSON with sorted keys."""
    if isinstance(value, str):
        return value
    if isinstance(value, JsonFloat):
        return value.text  # as the source wrote it, not the float's repr
    if isinstance(value, uuid.UUID):
        return str(value)
    return json_numbers.dumps(value, default=str, sort_keys=True)


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("boolean is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, JsonFloat):
        return _integral(exact_decimal(value))  # 9007199254740993.0 is not ...992
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("has a fractional part")
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(f"{type(value).__name__} is not an integer")


#: Digits past which an integral decimal is refused before it becomes a Python int
#: (``1e999999999`` would take minutes): far past any Arrow integer.
_INT_DIGITS = 40


def _integral(number: decimal.Decimal) -> int:
    if not number.is_finite() or number.adjusted() > _INT_DIGITS:
        raise ValueError("out of range")
    if number != number.to_integral_value():
        raise ValueError("has a fractional part")
    return int(number)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("boolean is not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        result = float(value.strip())
        if math.isnan(result) and value.strip().lower() != "nan":
            raise ValueError("not a number")
        return result
    raise ValueError(f"{type(value).__name__} is not a number")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0"}:
        return value.strip().lower() in {"true", "1"}
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{value!r} is not a boolean")


def _to_datetime(value: Any, aware: bool) -> dt.datetime:
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        parsed = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        parsed = dt.datetime.fromisoformat(text)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        parsed = dt.datetime.fromtimestamp(value, tz=dt.UTC)
    else:
        raise ValueError(f"{type(value).__name__} is not a date-time")
    if aware:
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=dt.UTC)
        return parsed.astimezone(dt.UTC)
    if parsed.tzinfo is not None:
        return parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _to_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return dt.date.fromisoformat(value.strip()[:10])
    raise ValueError(f"{type(value).__name__} is not a date")


def _to_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        raise ValueError("boolean is not a number")
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, JsonFloat):
        return exact_decimal(value)  # the literal's digits, not the float's
    if isinstance(value, int | float | str):
        try:
            return decimal.Decimal(str(value).strip())
        except decimal.InvalidOperation as exc:
            raise ValueError(f"{value!r} is not a decimal number") from exc
    raise ValueError(f"{type(value).__name__} is not a decimal number")


def _to_binary(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError("not base64") from exc
    raise ValueError(f"{type(value).__name__} is not binary")


#: Room for any decimal a column can hold while one is checked against it.
_WIDE_DECIMALS = decimal.Context(prec=100)


def _fitting_decimal(number: decimal.Decimal, target: pa.DataType) -> decimal.Decimal:
    """``number`` when ``target`` (a decimal type) holds it exactly; a misfit is noted
    at its own path (inside a struct too), not found by Arrow for the whole value."""
    whole = target.precision - target.scale
    if not number.is_finite() or (number and number.adjusted() >= whole):
        raise ValueError(f"out of range: more than {whole} integer digits")
    exact = number.quantize(decimal.Decimal(1).scaleb(-target.scale), context=_WIDE_DECIMALS)
    if exact != number:
        raise ValueError(f"out of range: more than {target.scale} fractional digits")
    return exact


def _fitting_int(number: int, target: pa.DataType) -> int:
    """``number`` when the integer type ``target`` holds it (see :func:`_fitting_decimal`)."""
    bounds = np.iinfo(target.to_pandas_dtype())
    if not int(bounds.min) <= number <= int(bounds.max):
        raise ValueError(f"out of range: past {target}")
    return number


def _converter(target: pa.DataType) -> Callable[[Any], Any]:
    if pa.types.is_decimal(target):
        return lambda v: _fitting_decimal(_to_decimal(v), target)
    if pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return _to_binary
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return note_text
    if pa.types.is_integer(target):
        return lambda v: _fitting_int(_to_int(v), target)
    if pa.types.is_floating(target):
        return _to_float
    if pa.types.is_boolean(target):
        return _to_bool
    if pa.types.is_timestamp(target):
        aware = target.tz is not None
        return lambda v: _to_datetime(v, aware)
    if pa.types.is_date(target):
        return _to_date
    if pa.types.is_list(target):
        item = _converter(target.value_type)

        def to_list(value: Any) -> list[Any]:
            if isinstance(value, str):
                value = json_numbers.loads(value)
            if not isinstance(value, list | tuple):
                raise ValueError(f"{type(value).__name__} is not an array")
            return [None if v is None else item(v) for v in value]

        return to_list
    return lambda v: v


def _describe(target: pa.DataType) -> str:
    if pa.types.is_timestamp(target):
        return "date-time"
    if pa.types.is_date(target):
        return "date"
    if pa.types.is_list(target):
        return f"array of {_describe(target.value_type)}"
    if pa.types.is_struct(target):
        return "object"
    return str(target)


#: What a value that does not fit raises; OSError is how ``datetime.fromtimestamp``
#: refuses a number past its platform's range (it must not fail the sync).
_MISFITS = (ValueError, TypeError, OverflowError, OSError, json.JSONDecodeError)


def _nested_value(value: Any, target: pa.DataType, path: str, found: list[Note]) -> Any:
    """``value`` as a value of a struct or list ``target``; a misfit inside becomes null.

    Each misfit leaves a note at its dotted path (``parent.child``, a list's items
    share the list's path), so one bad field costs that field, not the record.
    Raises only when ``value`` itself does not fit ``target`` (the caller notes it).
    """
    if isinstance(value, str) and (pa.types.is_struct(target) or pa.types.is_list(target)):
        value = json_numbers.loads(value)  # JSON text (a CSV column, an API's field)
    if pa.types.is_struct(target):
        if not isinstance(value, Mapping):
            raise ValueError(f"{type(value).__name__} is not an object")
        out: dict[str, Any] = {}
        for field in target:
            out[field.name] = _nested_field(value.get(field.name), field.type,
                                            f"{path}.{field.name}", found)
        for key in value.keys() - out.keys():
            if value[key] is not None:
                found.append({"field": f"{path}.{key}", "reason": "not in the stream schema",
                              "value": _clip(value[key])})
        return out
    if pa.types.is_list(target) and is_nested(target):
        if not isinstance(value, list | tuple):
            raise ValueError(f"{type(value).__name__} is not an array")
        return [_nested_field(item, target.value_type, path, found) for item in value]
    return _converter(target)(value)


def _nested_field(value: Any, target: pa.DataType, path: str, found: list[Note]) -> Any:
    if value is None:
        return None
    try:
        return _nested_value(value, target, path, found)
    except _MISFITS as exc:
        found.append({"field": path, "reason": f"expected {_describe(target)}: {exc}",
                      "value": _clip(value)})
        return None


def _clip(value: Any) -> str:
    text = note_text(value)
    return text if len(text) <= MAX_NOTE_VALUE else text[:MAX_NOTE_VALUE] + "…"


def coerce_values(
    name: str, values: Sequence[Any], target: pa.DataType, notes: NoteRows
) -> pa.Array:
    """Convert values one by one; each misfit becomes null plus a note on its row.

    Inside a struct or a list of structs only the misfit field is null (its note
    names it ``name.child``); the rest of the value is kept.
    """
    out: list[Any] = []
    if is_nested(target):
        for row, value in enumerate(values):
            found: list[Note] = []
            out.append(_nested_field(value, target, name, found))
            if found:
                notes[row].extend(found)
    else:
        convert = _converter(target)
        for row, value in enumerate(values):
            if value is None:
                out.append(None)
                continue
            try:
                out.append(convert(value))
            except _MISFITS as exc:
                out.append(None)
                notes[row].append(
                    {"field": name, "reason": f"expected {_describe(target)}: {exc}",
                     "value": _clip(value)}
                )
    try:
        return pa.array(out, type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        # Values that converted in Python but still overflow the Arrow type.
        fixed: list[Any] = []
        for row, value in enumerate(out):
            try:
                pa.array([value], type=target)
                fixed.append(value)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                fixed.append(None)
                notes[row].append({"field": name, "reason": f"out of range: {exc}",
                                   "value": _clip(values[row])})
        return pa.array(fixed, type=target)


def _is_temporal(target: pa.DataType) -> bool:
    """Whether ``target`` is a date or a date-time, whose numbers Arrow and the
    value-by-value path read differently.

    A number in a date-time column is Unix epoch seconds (:func:`_to_datetime`,
    as Spark's JSON reader reads one) and a number in a date column is a misfit
    (:func:`_to_date`).  Arrow's ``pa.array(..., type=...)`` and its casts read
    the same number as days or microseconds, and truncate a fraction, so a
    value's meaning would depend on its neighbours: alone in its batch it was
    microseconds, beside one ISO text it was seconds.  Numbers there always
    go value by value.
    """
    return pa.types.is_timestamp(target) or pa.types.is_date(target)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def coerce_column(
    name: str, column: pa.Array | pa.ChunkedArray, target: pa.DataType,
    notes: NoteRows,
) -> pa.Array:
    """One column of a reader's batch, cast to its table type."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type == target:
        return column
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), target)
    if pa.types.is_struct(target) and pa.types.is_struct(column.type):
        return _conform_struct(name, column, target, notes)
    # A list where a struct belongs is a misfit, noted value by value below.
    if is_nested(target) and pa.types.is_list(target) and (
            pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return _conform_list(name, column, target, notes)
    if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(target):
        return _cast_timestamps(name, column, target, notes)
    if _is_temporal(target) and (pa.types.is_integer(column.type)
                                 or pa.types.is_floating(column.type)
                                 or pa.types.is_decimal(column.type)):
        # Arrow's cast reads a number as days or microseconds (_is_temporal).
        return coerce_values(name, column.to_pylist(), target, notes)
    if pa.types.is_string(column.type) and (target in (UTC_TIMESTAMP, LOCAL_TIMESTAMP)
                                            or pa.types.is_date32(target)):
        # Arrow's cast reads text Python's fromisoformat refuses (year 0, say), so
        # only the shapes both read alike are cast; the rest go value by value.
        typed = (_iso_dates(column) if pa.types.is_date32(target)
                 else _iso_date_times(column, target))
        return typed if typed is not None else coerce_values(name, column.to_pylist(),
                                                             target, notes)
    if pa.types.is_decimal(target) and pa.types.is_string(column.type) \
            and not _decimal_text_fits(column, target):
        return coerce_values(name, column.to_pylist(), target, notes)
    if not (pa.types.is_string(target) and not pa.types.is_string(column.type)) \
            or pa.types.is_decimal(column.type):  # a decimal's text, not JSON of it
        try:
            return pc.cast(column, target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    if pa.types.is_string(column.type) and pa.types.is_timestamp(target) and target.tz:
        # Date-time text without an offset ("2024-01-01 10:00:00", common in CSV) is
        # UTC, as the value-by-value path reads it, but Arrow's cast wants an offset.
        try:
            naive = pc.cast(column, pa.timestamp(target.unit), safe=True)
            return pc.assume_timezone(naive, "UTC").cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    return coerce_values(name, python_values(column), target, notes)


_UNIT_TICKS = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_INT64_MAX = 2**63 - 1


def _decimal_text_fits(column: pa.Array, target: pa.Decimal128Type) -> bool:
    """Whether every value is plain decimal text with no more digits than ``target``
    holds: Arrow's cast of text with more integer digits than the precision wraps
    around (40 ones cast to decimal(38, 0) gave 902640...), so only such text is
    cast in bulk; the rest goes value by value, where a misfit is noted."""
    whole = target.precision - target.scale
    pattern = rf"^[+-]?\d{{0,{whole}}}(\.\d{{0,{target.scale}}})?$"
    return bool(pc.all(pc.match_substring_regex(column.drop_null(), pattern)).as_py()
                is not False)


def _cast_timestamps(name: str, column: pa.Array, target: pa.TimestampType,
                     notes: NoteRows) -> pa.Array:
    """A timestamp column in another unit (or zone) as ``target``.

    A naive column is UTC.  A value the target's unit cannot hold exactly
    (nanoseconds that do not divide into microseconds, seconds or milliseconds
    past the microseconds an int64 holds) is null with a note keeping the
    source's value: Arrow's safe cast refuses the whole column for one such value
    (which failed the read), and an unsafe cast would land a truncated or
    wrapped instant.
    """
    if column.type.tz is None and target.tz is not None:
        column = pc.assume_timezone(column, "UTC")
    try:
        return pc.cast(column, target)
    except pa.ArrowInvalid:
        pass
    source, wanted = _UNIT_TICKS[column.type.unit], _UNIT_TICKS[target.unit]
    ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if source > wanted:
        fits = ticks % (source // wanted) == 0
        reason = f"expected date-time: a {column.type.unit} value past the {target.unit} " \
            "a date-time holds"
    else:
        limit = _INT64_MAX // (wanted // source)
        fits = (ticks >= -limit) & (ticks <= limit)
        reason = f"out of range: a date-time past what {target.unit} since 1970 hold"
    bad = ~fits & column.is_valid().to_numpy(zero_copy_only=False)
    texts = pc.cast(column.filter(pa.array(bad)), pa.string()).to_pylist()
    for row, tick, text in zip(np.flatnonzero(bad).tolist(), ticks[bad].tolist(), texts,
                               strict=True):
        # Arrow's text of an instant past its calendar is not a date: the count is.
        shown = text if source > wanted else f"{tick} {column.type.unit} since 1970-01-01"
        notes[row].append({"field": name, "reason": reason, "value": shown})
    kept = pc.if_else(pa.array(bad), pa.scalar(None, column.type), column)
    return pc.cast(kept, target)


def _conform_struct(name: str, column: pa.StructArray, target: pa.StructType,
                    notes: NoteRows) -> pa.Array:
    """A struct column in ``target``'s fields, each child cast as a column of its own.

    Fields are matched by name: a missing one is null, one ``target`` lacks is
    noted (``name.child``) on the rows that have a value for it.
    """
    children = dict(zip([f.name for f in column.type], column.flatten(), strict=True))
    arrays = []
    for field in target:
        child = children.pop(field.name, None)
        path = f"{name}.{field.name}"
        arrays.append(pa.nulls(len(column), field.type) if child is None
                      else coerce_column(path, child, field.type, notes))
    for key, child in children.items():
        if child.null_count == len(child):
            continue
        for row in pc.indices_nonzero(child.is_valid()).to_pylist():
            notes[row].append({"field": f"{name}.{key}", "reason": "not in the stream schema",
                               "value": _clip(child[row].as_py())})
    mask = pc.invert(column.is_valid()) if column.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask)


def _conform_list(name: str, column: pa.ListArray, target: pa.ListType,
                  notes: NoteRows) -> pa.Array:
    """A list column whose items are structs or lists: the items cast as one column."""
    offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    first = int(offsets[0])
    items = column.values.slice(first, int(offsets[-1]) - first)
    rows = np.repeat(np.arange(len(column)), np.diff(offsets))
    typed = coerce_column(name, items, target.value_type, _NestedRows(notes, rows))
    mask = column.is_null() if column.null_count else None
    return pa.ListArray.from_arrays(pa.array(offsets - first, pa.int32()), typed,
                                    type=target, mask=mask)


def batch_from_records(records: Iterable[Mapping[str, Any]],
                       schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """Columns for a list of dict records, and their rows' notes.

    Fields outside the schema are kept as notes.  Plain dicts are typed in bulk
    (:func:`_bulk_columns`): Arrow reads the whole list in C++ and the columns are
    cast with its kernels; a column the bulk path declines is typed value by value
    as before, so values, types and notes are the same either way.
    """
    rows = list(records)
    notes = RowNotes(len(rows))
    known = set(schema.names) | {READER_NOTES}
    dicts = all(type(record) is dict for record in rows)
    # The common case, plain dicts whose keys are all columns, needs no look at each
    # record: that look cost more than the columns themselves (an HTTP page, say).
    plain = dicts and set(schema.names).issuperset(set().union(*rows))
    for row, record in enumerate([] if plain else rows):
        if not isinstance(record, Mapping):
            notes[row].append({"field": "", "reason": "record is not an object",
                               "value": _clip(record)})
            continue
        given = record.get(READER_NOTES)
        if given:
            notes[row].extend(given)
        unknown = record.keys() - known
        for key in unknown:
            if record[key] is not None:  # a null loses nothing: not noted, at any depth
                notes[row].append({"field": key, "reason": "not in the stream schema",
                                   "value": _clip(record[key])})
    if dicts and rows:
        return _bulk_columns(rows, schema, notes), notes
    columns = [_column_from_values(field, [r.get(field.name) if isinstance(r, Mapping)
                                           else None for r in rows], notes)
               for field in schema]
    return columns, notes


def batch_from_plain_records(records: Sequence[dict[str, Any]],
                             schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """:func:`batch_from_records` for records the caller knows are plain: at least
    one, each a ``dict`` whose keys are all columns of ``schema`` (no reader notes).

    Saves looking at every record's keys a second time (about a tenth of the
    typing's CPU on an API page) where the caller had to look already.
    """
    notes = RowNotes(len(records))
    return _bulk_columns(records, schema, notes), notes


def _column_from_values(field: pa.Field, values: list[Any], notes: RowNotes) -> pa.Array:
    """One column from its Python values: the value-by-value path, the reference
    the bulk path (:func:`_bulk_columns`) must equal."""
    if json_kind(field) is not None:
        return json_text_values(field.name, values, notes)
    if is_nested(field.type):
        return _nested_from_values(field.name, values, field.type, notes)
    if _is_temporal(field.type) and any(_is_number(v) for v in values):
        return coerce_values(field.name, values, field.type, notes)  # _is_temporal's why
    try:
        if pa.types.is_integer(field.type):
            return pc.cast(pa.array(values, type=EXACT_INTS), field.type, safe=True)
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return coerce_values(field.name, values, field.type, notes)


#: The type ``pa.array`` is asked for where an integer belongs: Arrow truncates a
#: float into an integer type (``1.5`` landed as 1, ``9007199254740993.0`` as ...992,
#: unnoted) but refuses one for a decimal, and reads integers of up to 38 digits
#: exactly; the cast to the column's type then refuses what does not fit.
EXACT_INTS = pa.decimal128(38, 0)

#: What Arrow's inference of Python values may raise (mixed types, huge ints, odd objects).
_NOT_INFERRED = (pa.ArrowException, OverflowError, TypeError, ValueError, RecursionError)


def _bulk_columns(rows: Sequence[Mapping[str, Any]], schema: pa.Schema,
                  notes: RowNotes) -> list[pa.Array]:
    """The columns of plain dict records, typed by Arrow in C++ where it gives the same.

    Arrow reads the whole list as one struct (:func:`_read_rows`: one C++ pass, no
    per-value Python); each of its columns is then taken as it is, cast in bulk
    (:func:`_bulk_cast`), or, where neither gives exactly what the value-by-value
    path gives (a misfit, a type Arrow could not infer), typed value by value
    (:func:`_column_from_values`), with the same notes.  When the records as a
    whole have no one type (one column mixes strings and numbers, say), each
    column is inferred on its own.
    """
    read = _read_rows(rows, schema)
    names = set(read.type.names) if read is not None else set()
    columns = []
    for field in schema:
        values: list[Any] | None = None
        column: pa.Array | None
        if read is not None:
            column = read.field(field.name) if field.name in names else pa.nulls(len(rows))
        else:
            values = [r.get(field.name) for r in rows]
            column = _inferred(values) if _bulk_cast_worth(field) else None
        typed = (_bulk_cast(field, column, notes)
                 if column is not None and json_kind(field) is None else None)
        if typed is None:
            if values is None:
                values = [r.get(field.name) for r in rows]
            typed = _column_from_values(field, values, notes)
        columns.append(typed)
    return columns


def _read_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.StructArray | None:
    """The records as one struct array: in the columns' own types where the schema
    has no nested or JSON-text column (each column read as ``pa.array(values,
    type=...)`` reads it, the value-by-value path's first try; date-times and
    dates as text, integers as :data:`EXACT_INTS`), else, or when that fails, in
    the types Arrow infers (about twice the work).  None when neither reads them
    (or the result is chunked)."""
    requested = _requested_struct(schema)
    for kind in ([requested] if requested is not None else []) + [None]:
        try:
            found = pa.array(rows, type=kind)
        except _NOT_INFERRED:
            continue
        return found if isinstance(found, pa.StructArray) else None
    return None


def _requested_struct(schema: pa.Schema) -> pa.StructType | None:
    fields = []
    for field in schema:
        if json_kind(field) is not None or is_nested(field.type):
            return None  # only inference gives these as the value-by-value path does
        temporal = pa.types.is_timestamp(field.type) or pa.types.is_date32(field.type)
        fields.append(pa.field(field.name, pa.string() if temporal else EXACT_INTS
                               if pa.types.is_integer(field.type) else field.type))
    return pa.struct(fields)


def _inferred(values: list[Any]) -> pa.Array | None:
    try:
        found = pa.array(values)
    except _NOT_INFERRED:
        return None
    return found if isinstance(found, pa.Array) else None


def _bulk_cast_worth(field: pa.Field) -> bool:
    """Whether a column is worth inferring on its own: one whose values are
    typed in Python otherwise (date-times and dates from text)."""
    return json_kind(field) is None and (pa.types.is_timestamp(field.type)
                                         or pa.types.is_date32(field.type))


def _bulk_cast(field: pa.Field, column: pa.Array, notes: RowNotes) -> pa.Array | None:
    """``column`` (as Arrow read it) in ``field``'s type, or None where only the
    value-by-value path is sure to give the same values and notes."""
    target = field.type
    if is_nested(target):
        # The value-by-value path infers these too, then casts (_nested_from_values),
        # but for a decimal leaf (a double's cast is not the literal's digits).
        return None if has_decimal(target) else coerce_column(field.name, column, target,
                                                               notes)
    if column.type == target:
        return column
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), target)
    if column.type == EXACT_INTS and pa.types.is_integer(target):
        try:  # integers read exactly (_requested_struct); one past the column is noted
            return pc.cast(column, target, safe=True)
        except pa.ArrowInvalid:
            return None
    if pa.types.is_int64(column.type) and pa.types.is_float64(target):
        try:  # exact, as pa.array(ints, type=float64) is: beyond 2**53 both refuse
            return pc.cast(column, target, safe=True)
        except pa.ArrowInvalid:
            return None
    if pa.types.is_string(column.type):
        if target in (UTC_TIMESTAMP, LOCAL_TIMESTAMP):
            return _iso_date_times(column, target)
        if pa.types.is_date32(target):
            return _iso_dates(column)
    return None


# Date-times both Arrow's cast and Python's ``datetime.fromisoformat`` read alike:
# years 1000-8999 (no overflow when an offset moves the instant), hours 0-23, no
# leap second, 1-6 fractional digits, an offset ``Z`` or ``+HH:MM`` (hours 0-23).
_ISO_DATE_TIME = (r"^[1-8][0-9]{3}-[0-9]{2}-[0-9]{2}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]"
                  r":[0-5][0-9](?:\.[0-9]{1,6})?")
_ISO_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"


def _iso_date_times(column: pa.Array, target: pa.DataType) -> pa.Array | None:
    """ISO 8601 text as ``target`` (UTC or local microseconds), as :func:`_to_datetime`
    reads it: text with an offset is that instant, text without one is UTC (or the
    local time as written).  None unless every value has one of those shapes and
    Arrow parses it (a day 31 in a 30-day month goes value by value, to its note)."""
    with_offset = pc.match_substring_regex(column, _ISO_DATE_TIME + _ISO_OFFSET)
    without = pc.match_substring_regex(column, _ISO_DATE_TIME + "$")
    if not pc.all(pc.or_(with_offset, without), min_count=0).as_py():  # nulls fit
        return None
    try:
        aware = pc.cast(pc.if_else(with_offset, column, None), UTC_TIMESTAMP)
        naive = pc.cast(pc.if_else(without, column, None), LOCAL_TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if target == UTC_TIMESTAMP:
        return pc.if_else(with_offset, aware, pc.assume_timezone(naive, "UTC"))
    return pc.if_else(with_offset, aware.view(LOCAL_TIMESTAMP), naive)


_ISO_DATE_PREFIX = r"^[1-8][0-9]{3}-[0-9]{2}-[0-9]{2}"


def _iso_dates(column: pa.Array) -> pa.Array | None:
    """Text that starts with an ISO date as dates, as :func:`_to_date` reads it (the
    first ten characters); None unless every value does and Arrow parses it."""
    if not pc.all(pc.match_substring_regex(column, _ISO_DATE_PREFIX), min_count=0).as_py():
        return None
    try:
        return pc.cast(pc.utf8_slice_codeunits(column, 0, 10), pa.date32())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _nested_from_values(name: str, values: list[Any], target: pa.DataType,
                        notes: RowNotes) -> pa.Array:
    """Nested dicts and lists as a struct or list column.

    Arrow reads them with the types it infers and :func:`coerce_column` casts
    that in bulk (a typed ``pa.array`` would drop keys the struct lacks, unnoted);
    values Arrow cannot give one type go value by value.
    """
    if has_decimal(target):
        # Arrow's inference reads a number as a double: a decimal leaf is typed from
        # its literal's text (JsonFloat), value by value.
        return coerce_values(name, values, target, notes)
    try:
        inferred = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return coerce_values(name, values, target, notes)
    return coerce_column(name, inferred, target, notes)


def conform_batch(batch: pa.RecordBatch,
                  schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """Columns of an Arrow batch in ``schema``'s order and types, and their rows' notes.

    Missing columns become nulls; columns outside the schema are kept as notes
    so nothing a reader produced disappears silently.
    """
    notes = RowNotes(batch.num_rows)
    if READER_NOTES in batch.schema.names and READER_NOTES not in schema.names:
        column = batch.column(READER_NOTES)
        if column.null_count < len(column):
            for row, given in enumerate(column.to_pylist()):
                if given:
                    notes[row].extend(given)
    extra = [name for name in batch.schema.names
             if name not in schema.names and name != READER_NOTES]
    for name in extra:
        column = batch.column(name)
        if column.null_count == len(column):
            continue
        for row, value in enumerate(column.to_pylist()):
            if value is not None:
                notes[row].append({"field": name, "reason": "not in the stream schema",
                                   "value": _clip(value)})
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            columns.append(pa.nulls(batch.num_rows, field.type))
        elif json_kind(field) is not None:
            columns.append(json_text_column(field.name, batch.column(index), notes))
        else:
            columns.append(coerce_column(field.name, batch.column(index), field.type, notes))
    return columns, notes
