"""Iceberg table properties that tell writers how to write: honoured, or refused up front.

Why: an Iceberg table's ``write.*`` properties are instructions to every writer
of the table (Spark's, Trino's, PyIceberg's).  A stream's ``table_properties``
are set on its table; one this destination's writer then ignores leaves a table
that says one thing while its files are another (``write.format.default: orc``
over Parquet files, ``write.parquet.compression-codec: zstd`` over snappy ones),
and tells every later writer to follow it.  So each ``write.*`` property is
either honoured or refused, before anything runs (``headwater validate`` and the
start of every sync), with the property named and why:

* honoured by the tasks' Parquet writer (``_table_files/_parquet.ParquetFiles``), which
  reads them from the table itself (:func:`file_settings`), so a table that has
  them from another engine is written as it asks too:
  ``write.parquet.compression-codec`` (``zstd``, ``snappy``, ``gzip``, ``lz4``,
  ``brotli``, ``uncompressed``; unset: snappy, as before), ``write.parquet.
  compression-level``, ``write.target-file-size-bytes`` (a file is closed once
  that many bytes of Arrow data went into it; compressed, it is smaller);
* honoured by PyIceberg when it commits: ``write.metadata.previous-versions-max``,
  ``write.metadata.delete-after-commit.enabled``, ``write.metadata.metrics.*``,
  ``write.avro.compression-codec`` (manifests), ``write.summary.partition-limit``;
* ``write.format.default`` only as ``parquet``, and ``write.delete.mode``,
  ``write.update.mode``, ``write.merge.mode`` only as ``copy-on-write`` (what
  every rewrite here does);
* any other ``write.*`` property is refused: the writer ignores it
  (``write.data.path`` and ``write.object-storage.*``: the tasks write into the
  table's ``data`` folder; bloom filters, page and row-group sizes, ORC and
  Spark settings: not written).

Other properties (``owner``, ``commit.*``, ``history.*``...) are no writer's
instructions about files, and are set as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FORMAT = "write.format.default"
CODEC = "write.parquet.compression-codec"
LEVEL = "write.parquet.compression-level"
TARGET_SIZE = "write.target-file-size-bytes"

#: Iceberg's codec names, as pyarrow's Parquet writer names them.
CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4",
          "brotli": "brotli", "uncompressed": "none"}
#: The codec of a table that names none: what the tasks always wrote.
DEFAULT_CODEC = "snappy"
#: Codecs whose level pyarrow takes.
_LEVELLED = frozenset({"zstd", "gzip", "brotli"})

#: Write properties PyIceberg honours when it commits (manifests, metadata files, metrics).
_COMMITTER_HONOURS = frozenset({
    "write.metadata.previous-versions-max", "write.metadata.delete-after-commit.enabled",
    "write.metadata.metrics.default", "write.avro.compression-codec",
    "write.summary.partition-limit"})
_COMMITTER_HONOURS_PREFIXES = ("write.metadata.metrics.column.",)
#: Row-level operation modes: every rewrite here is copy-on-write.
_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


def refusal(properties: Mapping[str, str]) -> str | None:
    """Why the iceberg destination cannot honour one of ``properties`` (None: it honours all)."""
    for key, value in properties.items():
        problem = _problem(key, str(value).strip())
        if problem is not None:
            return f"table_properties: {key}: {value!r}: {problem}"
    codec = CODECS[str(properties.get(CODEC, DEFAULT_CODEC)).strip().lower()]
    level = properties.get(LEVEL)
    if level is not None and codec in _LEVELLED:
        import pyarrow as pa

        low, high = pa.Codec.minimum_compression_level(codec), \
            pa.Codec.maximum_compression_level(codec)
        if not low <= int(level) <= high:
            return (f"table_properties: {LEVEL}: {level!r}: {codec} takes levels {low} to "
                    f"{high}")
    return None


def _problem(key: str, value: str) -> str | None:
    if key == FORMAT:
        return (None if value.lower() == "parquet" else
                "the iceberg destination's tasks write Parquet files only, and a table whose "
                "default format says otherwise would tell every later writer to write it; "
                "leave it out, or set it to parquet")
    if key == CODEC:
        return None if value.lower() in CODECS else (
            f"the tasks' Parquet writer knows the codecs {', '.join(CODECS)}")
    if key == LEVEL:
        return None if _is_int(value) else "a compression level is a whole number"
    if key == TARGET_SIZE:
        return None if _is_int(value) and int(value) > 0 else (
            "a target file size is a positive number of bytes")
    if key in _MODES:
        return None if value.lower() == "copy-on-write" else (
            "the iceberg destination rewrites the data files holding changed rows "
            "(copy-on-write) and writes no delete files; leave it out, or set it to "
            "copy-on-write")
    if not key.startswith("write.") or key in _COMMITTER_HONOURS \
            or key.startswith(_COMMITTER_HONOURS_PREFIXES):
        return None
    return ("the iceberg destination's writer does not honour this property (it honours "
            f"{FORMAT}: parquet, {CODEC}, {LEVEL}, {TARGET_SIZE}, and PyIceberg's "
            "write.metadata.* and write.avro.compression-codec when it commits), so the "
            "table would ask every writer for what this one does not do; leave it out")


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class FileSettings:
    """How the tasks write a table's Parquet files, as its properties ask (picklable)."""

    compression: str = DEFAULT_CODEC
    compression_level: int | None = None
    max_bytes_per_file: int | None = None



def file_settings(properties: Mapping[str, str]) -> FileSettings:
    """What a table's properties ask of its Parquet files' writer.

    Read from the table, not the connection file: a table another engine made
    with ``zstd`` is written with ``zstd``.  A value this writer cannot follow
    (set on the table by someone else) is a DestinationError naming it.
    """
    from headwater.errors import DestinationError

    for key in (CODEC, LEVEL, TARGET_SIZE):  # the format is the files': Parquet, each says so
        if key in properties:
            problem = _problem(key, str(properties[key]).strip())
            if problem is not None:
                raise DestinationError(f"the table's property {key} is "
                                       f"{properties[key]!r}: {problem}")
    codec = CODECS[str(properties.get(CODEC, DEFAULT_CODEC)).strip().lower()]
    level = properties.get(LEVEL)
    target = properties.get(TARGET_SIZE)
    return FileSettings(
        compression=codec,
        compression_level=int(level) if level is not None and codec in _LEVELLED else None,
        max_bytes_per_file=int(target) if target is not None else None)


__all__ = ["CODECS", "FileSettings", "file_settings", "refusal"]
