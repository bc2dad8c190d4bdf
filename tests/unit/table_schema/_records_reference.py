"""The value-by-value typing of dict records as it was before the bulk path: the
reference :func:`headwater.table_schema.batch_from_records` must equal, kept
verbatim (only this docstring, the imports and the rules dated below are new)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from headwater.table_schema import (
    READER_NOTES,
    RowNotes,
    coerce_values,
    is_nested,
    json_kind,
    json_text_values,
)
from headwater.table_schema._batches import _nested_from_values
from headwater.table_schema._meta import _clip


def batch_from_records(records: Iterable[Mapping[str, Any]],
                       schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """Columns for a list of dict records, and their rows' notes.

    Fields outside the schema are kept as notes.
    """
    rows = list(records)
    notes = RowNotes(len(rows))
    known = set(schema.names) | {READER_NOTES}
    # The common case, plain dicts whose keys are all columns, needs no look at each
    # record: that look cost more than the columns themselves (an HTTP page, say).
    plain = (all(type(record) is dict for record in rows)
             and set(schema.names).issuperset(set().union(*rows)))
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
            if record[key] is not None:  # decided since (2026-11-27), as nested keys
                notes[row].append({"field": key, "reason": "not in the stream schema",
                                   "value": _clip(record[key])})
    columns = []
    for field in schema:
        values = [r.get(field.name) if isinstance(r, Mapping) else None for r in rows]
        if json_kind(field) is not None:
            columns.append(json_text_values(field.name, values, notes))
            continue
        if is_nested(field.type):
            columns.append(_nested_from_values(field.name, values, field.type, notes))
            continue
        if (pa.types.is_timestamp(field.type) or pa.types.is_date(field.type)) and any(
                isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            # Decided since (2026-11-27): a number in a date-time column is epoch
            # seconds, in a date column a misfit, whatever its neighbours are; Arrow's
            # own reading (days, microseconds) is never taken.
            columns.append(coerce_values(field.name, values, field.type, notes))
            continue
        if pa.types.is_integer(field.type) and any(isinstance(v, float) for v in values):
            # Decided since (2026-11-28, issue 35): a float in an integer column is
            # typed value by value (an integer's literal, or a misfit noted); Arrow
            # truncated it (0.5 landed as 0, unnoted).
            columns.append(coerce_values(field.name, values, field.type, notes))
            continue
        if pa.types.is_binary(field.type) or (pa.types.is_list(field.type)
                                             and pa.types.is_binary(field.type.value_type)):
            # Decided since (2026-11-29): a binary column's text is base64, decoded
            # (``base64.b64decode``, a misfit noted); ``pa.array`` kept the text's
            # own bytes (``"aGk="`` landed as ``b"aGk="``, unnoted).
            columns.append(coerce_values(field.name, values, field.type, notes))
            continue
        try:
            columns.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            columns.append(coerce_values(field.name, values, field.type, notes))
    return columns, notes
