"""``_hw_rescued`` of an Arrow batch, made by Arrow's compute functions.

``new_columns: rescue`` keeps a row's values of columns the table does not have as
one JSON object's text: ``json.dumps`` of those values, keys sorted
(``_rows._rescued_text``, which records still take).  Made row by row in Python
for a batch, that cost about 4 µs of CPU a row (0.51 CPU-s per 125,000 ``sample`` rows
with one new column, measured; 0.011 s this way): at 5,000,000 rows some 20
CPU-seconds, more than twice the rest of the sync.
Here the text is joined column by column instead, and is the same text:

* a string of printable ASCII without ``"`` or ``\\`` is itself in quotes;
  integers are their digits; booleans ``true``/``false``; with one column the
  whole object is one join (key, quotes and braces around the values);
* any other value (text ``json.dumps`` escapes, floats, dates, decimals, nested
  values) is dumped value by value in Python, as the row path dumps it, so only
  the rare values pay Python's price.

A test checks both ways against each other on edge values
(``tests/unit/schema_contracts/test_rescue.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater import json_numbers

#: What ``json.dumps`` escapes in text (it writes only ``" "`` to ``~`` as they are, less
#: ``"`` and ``\\``): a string holding any of it is dumped by Python (RE2 syntax).
_ESCAPED = '[^\\x20-\\x7e]|["\\\\]'


def rescued_column(columns: Mapping[str, pa.Array]) -> pa.Array:
    """Per row, the JSON object of ``columns``' non-null values (sorted keys), or null
    when the row has none."""
    names = sorted(columns)
    if len(names) == 1:  # the usual case: one join makes the whole text
        opening, text, closing = _json_texts(columns[names[0]])
        return pc.binary_join_element_wise("{" + json.dumps(names[0]) + ": " + opening, text,
                                           closing + "}", "")
    joined: pa.Array | None = None
    for name in names:
        opening, text, closing = _json_texts(columns[name])
        member = pc.binary_join_element_wise(json.dumps(name) + ": " + opening, text, closing,
                                             "")
        if joined is None:
            joined = member
        else:  # ", " between two members; either alone where the other is null
            both = pc.binary_join_element_wise(joined, member, ", ")
            joined = pc.coalesce(both, joined, member)
    if joined is None:
        raise ValueError("no column to rescue")
    return pc.binary_join_element_wise("{", joined, "}", "")


def _json_texts(column: pa.Array) -> tuple[str, pa.Array, str]:
    """Each value's JSON text (null for null), as ``json.dumps`` writes it, as the text to
    put before every value, the values' own part, and the text after: strings' quotes are
    the first and the last, so that joining the whole member is one pass."""
    kind = column.type
    if pa.types.is_integer(kind):
        return "", pc.cast(column, pa.string()), ""
    if pa.types.is_boolean(kind):
        return "", pc.if_else(column, "true", "false"), ""
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return "", _dumped(column, np.ones(len(column), dtype=bool)), ""
    text = pc.cast(column, pa.string())
    slow = np.asarray(pc.fill_null(pc.match_substring_regex(text, _ESCAPED), False)
                      .to_numpy(zero_copy_only=False), dtype=bool)
    if not slow.any():
        return '"', text, '"'
    # Rows with an escape are dumped whole (quotes included): the rest get their quotes
    # here, so every row's part is its whole JSON text.
    quoted = pc.binary_join_element_wise('"', text, '"', "")
    return "", pc.replace_with_mask(quoted, pa.array(slow),
                                    _dumped(text, slow).filter(pa.array(slow))), ""


def _dumped(column: pa.Array, rows: np.ndarray[Any, Any]) -> pa.Array:
    """``column``'s values dumped one by one in Python where ``rows`` says (null elsewhere)."""
    values = column.to_pylist()
    return pa.array([json_numbers.dumps(v, default=str, sort_keys=True)
                     if wanted and v is not None else None
                     for v, wanted in zip(values, rows, strict=True)], pa.string())


__all__ = ["rescued_column"]
