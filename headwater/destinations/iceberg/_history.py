"""``history`` on Iceberg: one checkpoint's versions closed and opened, copy-on-write.

The rule is the Delta destination's, from the same code (``_history_rule.py``):
the checkpoint's rows become events of their keys, the events newer than the
table's versions open versions, and each key's first one closes the key's current
version.  Done as ``_merge.py`` does ``append_dedup``, the rows never through the
driver:

1. the table's key, cursor and validity columns (with each row's file) are read
   by Spark's tasks (``_rewrite.read_files``) and the changes computed;
2. the files holding a version to close are read whole and written again with
   its ``_hw_valid_to`` and ``_hw_is_current`` set; the opened versions are
   written with them (the tasks' own files lack the validity columns, so they are
   never added as they are);
3. one ``overwrite`` snapshot removes the rewritten files and adds the new ones,
   with the checkpoint's marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.destinations._history_rule import (
    HISTORY_NAMES,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
    changes,
)
from headwater.destinations._merge_rule import keys_match, quote
from headwater.destinations.iceberg import _rewrite

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations._table_files._store import StoreAccess, TableFolder

#: Marks a closing row's side of a join (a table row with no match has it null).
_CLOSES = "_hw_closes"


def history(spark: SparkSession, table: Table, new_files: Sequence[str], *,
            folder: TableFolder, stream: str, keys: Sequence[str], cursor: str | None,
            partition_order: Sequence[str], planned_at: str) -> _rewrite.Rewrite:
    """The rewrite that applies the rows of ``new_files`` (a checkpoint's) to ``table``."""
    from pyspark.sql import functions as F

    store = folder.store
    current = _rewrite.data_files(table, stream)
    batch = _rewrite.read_files(spark, table, new_files, store=store).drop(*HISTORY_NAMES)
    compared = [*keys, *([cursor] if cursor else []), *HISTORY_NAMES]
    existing = (_rewrite.read_files(spark, table, [f.file_path for f in current], store=store,
                                    with_file=True, columns=compared) if current else None)
    found = changes(batch, existing, keys=keys, cursor=cursor,
                    partition_order=partition_order, planned_at=planned_at)
    output = found.opened
    touched = []
    if existing is not None:
        closed = found.closed.localCheckpoint(eager=True)
        on = F.expr(f"{keys_match(keys)} AND t.{quote(IS_CURRENT)} "
                    f"AND t.{quote(VALID_FROM)} <=> s.{quote(VALID_FROM)}")
        touched_uris = {r[0] for r in existing.alias("t").join(closed.alias("s"), on, "left_semi")
                        .select(_rewrite.FILE_COLUMN).distinct().collect()}
        touched = [f for f in current if f.file_path in touched_uris]
        if touched:
            output = output.unionByName(_closed(spark, table, [f.file_path for f in touched],
                                                closed, keys, store))
    written = [_rewrite.uri(folder, f) for f in _rewrite.write_files(output, table, folder)]
    return _rewrite.Rewrite(adding=written, removing=touched, written=written)


def _closed(spark: SparkSession, table: Table, paths: Sequence[str], closed: DataFrame,
            keys: Sequence[str], store: StoreAccess | None) -> DataFrame:
    """Every row of the files at ``paths``, each version ``closed`` names closed."""
    from pyspark.sql import functions as F

    names = _rewrite.arrow_schema(table).names
    rows = _rewrite.read_files(spark, table, paths, store=store)
    on = F.expr(f"{keys_match(keys)} AND t.{quote(IS_CURRENT)} "
                f"AND t.{quote(VALID_FROM)} <=> s.{quote(VALID_FROM)}")
    joined = rows.alias("t").join(closed.withColumn(_CLOSES, F.lit(True)).alias("s"), on, "left")
    closes = F.coalesce(F.col(f"s.{_CLOSES}"), F.lit(False))
    changed = {VALID_TO: F.when(closes, F.col(f"s.{quote(VALID_TO)}"))
               .otherwise(F.col(f"t.{quote(VALID_TO)}")),
               IS_CURRENT: F.when(closes, F.lit(False)).otherwise(F.col(f"t.{quote(IS_CURRENT)}"))}
    return joined.select(*[changed.get(n, F.col(f"t.{quote(n)}")).alias(n) for n in names])


__all__ = ["history"]
