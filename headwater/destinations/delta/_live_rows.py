"""A Delta table's rows at one version, read by Spark's Parquet reader from the files the log
replay found (``_live_files.py``), each row with the file and position it sits at, and the
rows its deletion vectors delete left out.

Why not Delta's reader: a history checkpoint reads the table at the version its own commit
will follow, and Delta plans that scan as a dozen small jobs (the snapshot's state at the
version, then a filtering of its files each time the rule's query is planned again): at
1,000,000 keys that was about a quarter of the checkpoint (``bench/RESULTS.md``, "fifth
pass").  The replay the commit needs anyway already names every live file and its vector,
so the rows read and the files the commit re-adds come from the same replay.

Where it reads: the own history commit's tables only (``_history_commit.history_refusal``:
no column mapping, partitions, generated columns or constraints), so a file holds the
table's columns under their own names, as Spark's reader finds them.  Not read here (Delta's
reader instead, the reason logged): files whose names Spark would not give back as they
are, two live files of one name, and more deleted rows than a broadcast holds well.

Proven against Delta's reader, rows *and* places, at every version of a table written by
Spark (appends, ``DELETE`` and ``MERGE`` with vectors, a checkpoint, a new column):
``tests/integration/destinations/delta/test_live_rows.py``; on the own commit's tables (its
vectors), through the tables ``test_history_commit.py`` holds equal to Spark's MERGE's.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _deletion_vectors
from headwater.destinations.delta._live_files import LiveFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

#: Where each row is stored: its file (Spark's URI of it) and its position in the file.
FILE_COLUMN, ROW_COLUMN = "_hw_file", "_hw_row"
#: Deleted rows beyond which the anti-join's broadcast side grows too large (each row a
#: file name and a position); Delta's reader applies more vectors than that instead.
MAX_DELETED_ROWS = 2_000_000
#: Names whose percent-encoding in the log and whose form in Spark's ``file_path`` are the
#: name itself (Spark's and Headwater's data files are named so).
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
#: The deleted rows' columns: their file's name and their position in it.
_DELETED_FILE, _DELETED_ROW = "_hw_deleted_file", "_hw_deleted_row"


def with_places(table: DataFrame) -> DataFrame:
    """``table``'s rows with the file and row position each is stored at."""
    from pyspark.sql import functions as F

    return table.select("*", F.col("_metadata.file_path").alias(FILE_COLUMN),
                        F.col("_metadata.row_index").alias(ROW_COLUMN))


def live_rows(spark: SparkSession, folder: TableFolder, location: str, live: LiveFiles,
              schema: StructType) -> DataFrame | None:
    """The table's rows at ``live.version`` with their places (:func:`with_places`' columns),
    read from ``live``'s files; None where Delta's reader must read them (logged why).

    ``location`` is the table as Spark names it, ``schema`` its schema at that version.
    """
    refusal = _refusal(live)
    if refusal is not None:
        log.info("the table at %s is read through Delta's reader: %s", location, refusal)
        return None
    deleted = _deleted_rows(folder, live)
    if deleted is not None and deleted.num_rows > MAX_DELETED_ROWS:
        log.info("the table at %s is read through Delta's reader: its deletion vectors "
                 "delete %d rows (more than %d)", location, deleted.num_rows,
                 MAX_DELETED_ROWS)
        return None
    from pyspark.sql import functions as F

    root = location.rstrip("/")
    paths = [f"{root}/{path}" for path in sorted(live.adds)]
    if not paths:
        return spark.createDataFrame([], schema).select(
            "*", F.lit(None).cast("string").alias(FILE_COLUMN),
            F.lit(None).cast("long").alias(ROW_COLUMN))
    placed = with_places(spark.read.schema(schema).parquet(*paths))
    if deleted is None:
        return placed
    name = F.substring_index(F.col(FILE_COLUMN), "/", -1)
    return placed.join(F.broadcast(spark.createDataFrame(deleted)),
                       (name == F.col(_DELETED_FILE)) & (F.col(ROW_COLUMN) == F.col(_DELETED_ROW)),
                       "left_anti")


def _refusal(live: LiveFiles) -> str | None:
    """Why ``live``'s files are not read here, or None."""
    names: set[str] = set()
    for path in live.adds:
        name = path.rsplit("/", 1)[-1]
        if not all(_PLAIN_NAME.match(part) for part in path.split("/")):
            return f"a file's path needs encoding ({path!r})"
        if name in names:
            return f"two live files are named {name!r}"
        names.add(name)
    return None


def _deleted_rows(folder: TableFolder, live: LiveFiles) -> pa.Table | None:
    """The rows the live files' deletion vectors delete, as an Arrow table of file name and
    position; None when no file has a vector."""
    import numpy as np

    names: list[pa.Array] = []
    rows: list[pa.Array] = []
    for path, add in live.adds.items():
        vector = add.get("deletionVector")
        if not vector:
            continue
        positions = _deletion_vectors.read(folder, _deletion_vectors.Descriptor.of(vector))
        names.append(pa.repeat(pa.scalar(path.rsplit("/", 1)[-1]), len(positions)))
        rows.append(pa.array(np.asarray(positions.to_array(), dtype=np.int64)))
    if not names:
        return None
    return pa.table({_DELETED_FILE: pa.chunked_array(names, pa.string()),
                     _DELETED_ROW: pa.chunked_array(rows, pa.int64())})


__all__ = ["FILE_COLUMN", "MAX_DELETED_ROWS", "ROW_COLUMN", "live_rows", "with_places"]
