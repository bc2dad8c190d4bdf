"""Which columns Delta keeps file statistics on, chosen at table creation.

Delta computes min/max/null-count statistics for every row it writes, on the
first 32 columns by default, and that work is interpreted per row: on this
machine it was about a quarter of the CPU of writing a checkpoint, and about
half of it went to metadata columns nobody filters on (``_hw_raw_id`` is unique per row,
``_hw_partition_id`` mirrors the files, ``_hw_notes`` is a list).  So a table
Headwater creates lists its statistics columns (``delta.dataSkippingStatsColumns``):
the metadata columns a reader filters on (extraction time, run, checkpoint), then
the data columns, as many as Delta's default would have covered.  Columns of a
type Delta keeps no statistics for (boolean, arrays, maps) are left out, since
Delta refuses them in that list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from headwater.destinations.delta._sql import quote
from headwater.table_schema import META_NAMES

if TYPE_CHECKING:
    from pyspark.sql.types import StructField

STATS_PROPERTY = "delta.dataSkippingStatsColumns"
#: Metadata columns that readers filter on: incremental reads downstream, and
#: ``replay``'s ``replaceWhere _hw_run_id = ...``.
STATS_META_COLUMNS = ("_hw_extracted_at", "_hw_run_id", "_hw_checkpoint")
#: How many columns get statistics: Delta's own default (``dataSkippingNumIndexedCols``).
MAX_STATS_COLUMNS = 32

_ELIGIBLE = ("byte", "short", "integer", "long", "float", "double", "decimal", "date",
             "timestamp", "timestamp_ntz", "string")


def _eligible(field: StructField) -> bool:
    return field.dataType.typeName() in _ELIGIBLE


def stats_columns(fields: Iterable[StructField], already: str | None = None) -> str:
    """The ``delta.dataSkippingStatsColumns`` value for a table of ``fields``.

    ``already`` is the table's current value: columns in it keep their place,
    and eligible new ones are appended while there is room.
    """
    listed = [name for name in (already or "").split(",") if name]
    if not listed:
        listed = [quote(name) for name in STATS_META_COLUMNS]
    for field in fields:
        if len(listed) >= MAX_STATS_COLUMNS:
            break
        name = quote(field.name)
        if _eligible(field) and name not in listed and field.name not in META_NAMES:
            listed.append(name)
    return ",".join(listed)


def listed_columns(value: str | None) -> list[str]:
    """The column names a ``delta.dataSkippingStatsColumns`` value lists, unquoted."""
    names: list[str] = []
    current: list[str] = []
    quoted = False
    text = value or ""
    i = 0
    while i < len(text):
        char = text[i]
        if char == "`":
            if quoted and text[i + 1:i + 2] == "`":
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif char == "," and not quoted:
            names.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        i += 1
    names.append("".join(current).strip())
    return [name for name in names if name]


def with_columns(value: str, names: Iterable[str]) -> str:
    """``value`` (a ``delta.dataSkippingStatsColumns`` value) listing ``names`` as well.

    Liquid clustering needs statistics on its columns (Delta refuses to create a
    clustered table otherwise), whatever the cap on how many columns get them.
    """
    listed = [name for name in value.split(",") if name]
    have = set(listed_columns(value))
    return ",".join(listed + [quote(name) for name in names if name not in have])
