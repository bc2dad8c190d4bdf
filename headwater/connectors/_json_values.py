"""What a bulk JSON decoder may hand over for values it had to infer the type of.

A field outside the stream's schema (or an open column) is typed by Arrow's JSON
reader from the text; the per-record path keeps the value ``json.loads`` made
(noted as ``json.dumps`` text, or written back as JSON text).  Both agree only
where the inferred type gives every value back unchanged, which
:func:`exact_json_values` tells.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["exact_json_values"]

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
