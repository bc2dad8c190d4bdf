"""A stream's table as a Spark DataFrame: the files its current manifests name, read by
the tasks (``Destination.read_table``, what ``headwater verify`` and the kit read).

The driver reads only the log (``_read.stream_log``, ``_manifests.current``: from the
last ``replace`` on) and hands Spark the list of files; each task reads its files with
the same pyarrow reader a reader without Spark uses (``_read.read_file``, typed by the
file's manifest), so the rows never pass through the driver and both readers agree.
Manifests of different schemas (a column added later) are read as one schema, the
columns a file predates null (``promote_options="permissive"``, as ``_read.read_table``
concatenates them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._read_frames import conform, present, work_items
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.files._manifests import Manifest, current
from headwater.destinations.files._read import read_file, read_schema, stream_log
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_frame"]


@dataclass(frozen=True)
class _ReadListed:
    """What each task runs: the listed files of its rows (manifest number, path) read and
    conformed to ``schema``.  Plain values only: pickled to the executors."""

    root: TableFolder
    stream: str
    manifests: tuple[Manifest, ...]
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filesystem, base = self.root.filesystem()
        for batch in batches:
            for index, path in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                   strict=True):
                table = read_file(filesystem, f"{base}/{self.stream}/{path}",
                                  self.manifests[index])
                for piece in table.to_batches():
                    yield conform(piece, self.schema)


def read_frame(spark: SparkSession, root: TableFolder, stream: str,
               columns: Sequence[str] | None) -> DataFrame:
    """The stream's current rows under ``root`` (the destination's folder), ``columns``
    of them (those the table has), one Spark task per group of files."""
    from pyspark.sql.pandas.types import from_arrow_schema

    filesystem, base = root.filesystem()
    manifests = tuple(current(stream_log(filesystem, f"{base}/{stream}").manifests()))
    if not manifests:
        raise DestinationError(f"the files destination holds no table of stream {stream} "
                               f"under {root.uri} yet (no manifest)", stream=stream)
    whole = pa.unify_schemas([read_schema(m) for m in manifests],
                             promote_options="permissive")
    schema = pa.schema([whole.field(c) for c in present(whole.names, columns)])
    listed = [(i, f.path) for i, m in enumerate(manifests) for f in m.files]
    spark_schema = from_arrow_schema(schema)
    names = work_items(spark, listed, "manifest int, path string")
    return names.mapInArrow(_ReadListed(root, stream, manifests, schema), spark_schema)
