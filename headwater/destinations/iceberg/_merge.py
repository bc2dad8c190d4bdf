"""``append_dedup`` on Iceberg: one checkpoint MERGEd on the primary key, copy-on-write.

The rule is the Delta destination's, from the same code (``_merge_rule.py``):
per key the checkpoint's latest row (cursor, then checkpoint, partition,
record), which replaces each table row of its key that it beats, else is
dropped; keys the table lacks are inserted.

How, with Spark's tasks reading the checkpoint's Parquet files and the table's
data files (``_rewrite.py``: pyarrow, from a local folder or S3 alike), never
the rows through the driver:

1. ``latest``: the checkpoint's rows, one per key;
2. ``hits``: the table's key columns (with each row's file) joined to
   ``latest``; the files holding a row that ``latest`` beats are *touched*;
3. the touched files are read whole and written again with each beaten row
   replaced by its winner; ``latest``'s keys found nowhere in the table are
   written with them;
4. one ``overwrite`` snapshot removes the touched files and adds the new ones,
   with the checkpoint's marker.  When nothing is touched and every row of the
   checkpoint is new (a first sync, new keys only), the tasks' own files are
   added as they are: no rewrite at all.

Why not PyIceberg's ``Table.upsert`` (read, not measured here): it takes the
rows as one Arrow table on the driver (a checkpoint of millions of rows would
travel through it), builds its key filter as one expression naming every key of
the batch (its size, and the planning over it, grow with the batch: 100 000
keys and more per checkpoint are common), decides by comparing whole rows
rather than by the latest-cursor rule and its ties, and commits a delete and an
append where a checkpoint must be one snapshot.  Copy-on-write at file
granularity keeps the rows on the executors, scans only the key columns to find
the touched files, and is one snapshot.  Its cost: every merge reads the key
columns of the whole table, and rewrites whole files for a few updated rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.destinations._merge_rule import keys_match, latest_rows, quote, update_when
from headwater.destinations.iceberg import _rewrite

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations._table_files._store import StoreAccess, TableFolder

#: Marks ``latest``'s side of a join (a table row with no match has it null).
_MATCHED = "_hw_matched"
_UPDATES = "_hw_updates"


def merge(spark: SparkSession, table: Table, new_files: Sequence[str], *, folder: TableFolder,
          stream: str, keys: Sequence[str], cursor: str | None,
          partition_order: Sequence[str], deleted: str | None = None) -> _rewrite.Rewrite:
    """The rewrite that MERGEs the rows of ``new_files`` (a checkpoint's) into ``table``.

    ``new_files`` are URIs (``file://``, ``s3://``) of Parquet files with the
    table's columns (or fewer); they are added as they are when nothing needs
    rewriting, else the rewrite's files, written into ``folder`` (the table's data
    folder, local or on S3), hold their winning rows and they stay out.
    ``deleted`` names the delete flag column of ``deletes: hard``: a winning
    delete removes its key's row, and is never written itself.
    """
    from pyspark.sql import functions as F

    store = folder.store
    current = _rewrite.data_files(table, stream)
    batch = _rewrite.read_files(spark, table, new_files, store=store)
    latest = latest_rows(batch, keys, cursor, partition_order)
    compared = [*keys, *([cursor] if cursor else []), "_hw_checkpoint"]
    if current:
        existing = _rewrite.read_files(spark, table, [f.file_path for f in current],
                                       store=store, with_file=True, columns=compared)
        beats = F.coalesce(F.expr(update_when(cursor)), F.lit(False))
        hits = (existing.alias("t")
                .join(latest.select(*compared).alias("s"), F.expr(keys_match(keys)))
                .select(*[F.col(f"s.{quote(k)}").alias(k) for k in keys],
                        F.col(f"t.{_rewrite.FILE_COLUMN}").alias(_rewrite.FILE_COLUMN),
                        beats.alias(_UPDATES))
                ).localCheckpoint(eager=True)
        touched_uris = {r[0] for r in hits.where(F.col(_UPDATES))
                        .select(_rewrite.FILE_COLUMN).distinct().collect()}
        touched = [f for f in current if f.file_path in touched_uris]
        inserts = latest.alias("s").join(hits.select(*keys).alias("t"),
                                         F.expr(keys_match(keys)), "left_anti")
    else:
        touched, inserts = [], latest
    if deleted is not None:
        inserts = inserts.where(~F.coalesce(F.col(quote(deleted)), F.lit(False)))
    if not touched and inserts.count() == batch.count():
        return _rewrite.Rewrite(adding=list(new_files), removing=[])
    output = inserts
    if touched:
        output = _updated(spark, table, [f.file_path for f in touched], latest, keys,
                          cursor, store, deleted).unionByName(inserts)
    written = [_rewrite.uri(folder, f) for f in _rewrite.write_files(output, table, folder)]
    return _rewrite.Rewrite(adding=written, removing=touched, written=written)


def _updated(spark: SparkSession, table: Table, paths: Sequence[str], latest: DataFrame,
             keys: Sequence[str], cursor: str | None, store: StoreAccess | None,
             deleted: str | None = None) -> DataFrame:
    """Every row of the files at ``paths``, each one ``latest`` beats replaced by its winner
    (or, beaten by a delete of ``deletes: hard``, left out)."""
    from pyspark.sql import functions as F

    names = _rewrite.arrow_schema(table).names
    rows = _rewrite.read_files(spark, table, paths, store=store)
    joined = rows.alias("t").join(latest.withColumn(_MATCHED, F.lit(True)).alias("s"),
                                  F.expr(keys_match(keys)), "left")
    beats = F.coalesce(F.col(f"s.{_MATCHED}") & F.expr(update_when(cursor)), F.lit(False))
    if deleted is not None:
        joined = joined.where(~(beats & F.coalesce(F.col(f"s.{quote(deleted)}"), F.lit(False))))
    return joined.select(*[F.when(beats, F.col(f"s.{quote(n)}"))
                           .otherwise(F.col(f"t.{quote(n)}")).alias(n) for n in names])


__all__ = ["merge"]
