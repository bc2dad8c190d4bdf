"""What a bulk JSON decoder may hand over for values it had to infer the type of.

A field outside the stream's schema (or an open column) is typed by Arrow's JSON
reader from the text; the per-record path keeps the value ``json.loads`` made
(noted as ``json.dumps`` text, or written back as JSON text).  Both agree only
where the inferred type gives every value back unchanged, which
:func:`exact_json_values` tells.  Keys inside an object that its declared
properties do not name are typed by Arrow's inference either way (of the text,
or of the dicts, ``pa.array``): :func:`undeclared_alike` tells where both agree.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["exact_json_values", "inferred_alike", "no_dates", "undeclared_alike"]

#: Inferred types whose values ``json.dumps`` writes back exactly as they were read.
_EXACT_LEAVES = (pa.string(), pa.int64(), pa.bool_())


def exact_json_values(column: pa.Array) -> bool:
    """No nulls anywhere and only types whose values JSON text gives back unchanged.

    Not a double (``1`` and ``1.0``, a huge integer, all read as one), a date or a
    date-time (text Arrow took for one).  A null may have been a missing key (which
    the per-record path skips), so it makes the column ambiguous.
    """
    if column.null_count:
        return False
    kind = column.type
    if kind in _EXACT_LEAVES:
        return True
    if pa.types.is_null(kind):
        return len(column) == 0
    if pa.types.is_struct(kind):
        return all(exact_json_values(child) for child in column.flatten())
    if pa.types.is_list(kind):
        return exact_json_values(column.flatten())
    return False


def undeclared_alike(column: pa.Array, declared: pa.DataType) -> bool:
    """Whether every key outside the declared properties, at any depth of a struct
    column read under its declared type, is typed as the per-record path's Arrow
    inference of the dicts types it (:func:`inferred_alike`)."""
    if pa.types.is_struct(declared) and pa.types.is_struct(column.type):
        types = {field.name: field.type for field in declared}
        for field, child in zip(column.type, column.flatten(), strict=True):
            if field.name in types:
                if not undeclared_alike(child, types[field.name]):
                    return False
            elif not inferred_alike(child):
                return False
        return True
    if pa.types.is_list(declared) and pa.types.is_list(column.type):
        return undeclared_alike(column.flatten(), declared.value_type)
    return True


#: Arrow's JSON reader reads an integer past int64 as a double; ``pa.array`` of the
#: dicts refuses it, and the per-record path then keeps the integer (in its note).
_INT64_EDGE = 2.0**63


def inferred_alike(column: pa.Array) -> bool:
    """Whether a column Arrow's JSON reader inferred has the values and type the
    per-record path's ``pa.array`` of the dicts infers: no text taken for a date or
    a date-time (:func:`no_dates`), no double that may have been an integer past
    int64 (or past any double: ``1e400`` is infinite)."""
    if not no_dates(column.type):
        return False
    if pa.types.is_floating(column.type):
        largest = pc.max(pc.abs(column)).as_py()
        return largest is None or largest < _INT64_EDGE
    if pa.types.is_struct(column.type):
        return all(inferred_alike(child) for child in column.flatten())
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return inferred_alike(column.flatten())
    return True


def no_dates(kind: pa.DataType) -> bool:
    """No date or timestamp anywhere in an inferred nested type.

    The per-record path infers a nested column's type from the dicts
    (``pa.array``) and casts it as a bulk path casts Arrow's: both agree but where
    Arrow's JSON reader takes text for a date-time, which the dicts keep as text.
    A null, or a missing key, is null in both.
    """
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return False
    if pa.types.is_struct(kind):
        return all(no_dates(field.type) for field in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return no_dates(kind.value_type)
    return True
