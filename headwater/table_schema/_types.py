"""Arrow types from a stream's JSON Schema: one typed column per property.

Objects with ``properties`` become structs, arrays lists, and an open value (an
object without ``properties``, mixed types, no type: :func:`is_open`) travels as
JSON text, marked in the field's metadata (:data:`LOGICAL_KEY`) as text the
destination stores as a VARIANT or, as the user asked (``json_columns``), as text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from headwater.table_schema._meta import LOCAL_TIMESTAMP, UTC_TIMESTAMP


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


def _has_leaf(kind: pa.DataType, leaf: Callable[[pa.DataType], bool]) -> bool:
    if pa.types.is_struct(kind):
        return any(_has_leaf(field.type, leaf) for field in kind)
    if pa.types.is_list(kind):
        return _has_leaf(kind.value_type, leaf)
    return leaf(kind)


def has_decimal(kind: pa.DataType) -> bool:
    """A decimal, or a struct or list with a decimal leaf at any depth."""
    return _has_leaf(kind, pa.types.is_decimal)


def has_binary(kind: pa.DataType) -> bool:
    """Bytes (a base64 string's column), or a struct or list with such a leaf at any depth:
    a reader's text there is base64 to decode, never the bytes themselves."""
    return _has_leaf(kind, lambda leaf: pa.types.is_binary(leaf)
                     or pa.types.is_large_binary(leaf))


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


__all__ = ["JSON_TEXT", "LOGICAL_KEY", "VARIANT", "arrow_field_for", "arrow_schema_for",
           "arrow_type_for", "column_type_label", "has_binary", "has_decimal", "is_nested",
           "is_open", "json_columns_problem", "json_kind", "json_kinds_differ", "map_leaf_types",
           "struct_type_for", "variant_columns"]
