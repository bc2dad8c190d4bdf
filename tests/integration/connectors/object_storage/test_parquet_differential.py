"""Parquet objects land as Spark's own reader reads them: generated files, value by value.

Differential: hypothesis writes folders of Parquet files with pyarrow (every
integer width, unsigned ones past int64's max too, NaN, ±inf and -0.0, decimals
at the edge precisions, plain, large and dictionary-encoded strings, binary,
dates, timestamps with and without a zone, nested structs, lists with empty and
null items, maps, nulls everywhere, small row groups, a column missing from one
file, a column int32 in one file and int64 in another).  One sync lands every
folder as a stream in Delta; ``spark.read.parquet`` (``mergeSchema``) of the same
files is the reference, matched row for row by ``_metadata.file_name`` and
``_metadata.row_index`` (Headwater's ``_source_key`` and ``_source_record``).

Where Spark differs by design the test holds Headwater to "lose nothing":

* an unsigned 64-bit value (Spark: ``decimal(20,0)``) lands as a ``bigint``; one
  past int64's max is null with a note holding its digits;
* a timestamp without a zone (Spark: ``timestamp_ntz``) lands as UTC, the same
  microseconds;
* integers land as ``bigint`` and floats as ``double`` (Spark keeps the file's
  width): the same numbers;
* a map (Spark: ``map``) lands as JSON text of an object;
* int32 in one file and int64 in another: Spark refuses to merge them
  (``CANNOT_MERGE_SCHEMAS``), so the reference reads the folder with the widened
  schema Spark infers from the int64 files.

Nanosecond and far-off timestamps Spark refuses to read at all
(``PARQUET_TYPE_ILLEGAL``, an overflow): see
``tests/unit/connectors/object_storage/test_parquet_typing.py``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from headwater.metadata_store import SUCCEEDED_STATUSES
from tests.integration._connections import connection_file, sync
from tests.unit.connectors._json_cases import comparable, differential

pytestmark = pytest.mark.spark

INT64_MAX = 2**63 - 1


def _ints(bits: int, signed: bool) -> st.SearchStrategy[int]:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    edges = [low, high, 0, -1 if signed else 1]
    if not signed and bits == 64:
        edges += [INT64_MAX, INT64_MAX + 1]
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def _decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    top = 10**precision - 1  # the unscaled digits; text keeps all 38 (a context has 28)
    unscaled = st.one_of(st.sampled_from([top, -top, 0, 1]), st.integers(-top, top))
    return unscaled.map(lambda n: decimal.Decimal(f"{n}E-{scale}"))


_INSTANTS = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))


@dataclass(frozen=True)
class Kind:
    """A column kind: its Arrow type in the files and its values."""

    arrow: pa.DataType
    values: st.SearchStrategy[Any]
    encode: Callable[[pa.Array], pa.Array] = lambda column: column


def _struct() -> Kind:
    kind = pa.struct([("a", pa.int32()), ("s", pa.string()), ("l", pa.list_(pa.int64())),
                      ("d", pa.decimal128(9, 2))])
    values = st.fixed_dictionaries({
        "a": st.none() | _ints(32, True), "s": st.none() | st.text(max_size=5),
        "l": st.none() | st.lists(st.none() | _ints(64, True), max_size=3),
        "d": st.none() | _decimals(9, 2)})
    return Kind(kind, values)


KINDS: dict[str, Kind] = {
    **{f"{'i' if s else 'u'}{b}": Kind(getattr(pa, f"{'int' if s else 'uint'}{b}")(), _ints(b, s))
       for b in (8, 16, 32, 64) for s in (True, False)},
    "f32": Kind(pa.float32(), st.floats(width=32) | st.sampled_from([-0.0, float("nan")])),
    "f64": Kind(pa.float64(), st.floats() | st.sampled_from(
        [-0.0, float("nan"), float("inf"), float("-inf"), 5e-324])),
    **{f"dec{p}_{s}": Kind(pa.decimal128(p, s), _decimals(p, s))
       for p, s in ((1, 0), (9, 9), (18, 4), (19, 0), (38, 0), (38, 10), (38, 38))},
    "str": Kind(pa.string(), st.text()),
    "large": Kind(pa.large_string(), st.text(max_size=8)),
    "dict": Kind(pa.string(), st.sampled_from(["a", "b", "ü", ""]),
                 lambda column: column.dictionary_encode()),
    "bin": Kind(pa.binary(), st.binary(max_size=6)),
    "bool": Kind(pa.bool_(), st.booleans()),
    "date": Kind(pa.date32(), st.dates()),
    "date64": Kind(pa.date64(), st.dates()),
    "ts_ms_utc": Kind(pa.timestamp("ms", tz="UTC"),
                      _INSTANTS.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000,
                                                        tzinfo=dt.UTC))),
    "ts_us_utc": Kind(pa.timestamp("us", tz="UTC"), _INSTANTS.map(
        lambda t: t.replace(tzinfo=dt.UTC))),
    "ts_us_zone": Kind(pa.timestamp("us", tz="Asia/Kolkata"), _INSTANTS.filter(
        lambda t: t.year > 1).map(lambda t: t.replace(tzinfo=dt.UTC))),
    "ts_us": Kind(pa.timestamp("us"), _INSTANTS),
    "ts_s": Kind(pa.timestamp("s"), _INSTANTS.map(lambda t: t.replace(microsecond=0))),
    "struct": _struct(),
    "list": Kind(pa.list_(pa.int32()), st.lists(st.none() | _ints(32, True), max_size=3)),
    "map": Kind(pa.map_(pa.string(), pa.int64()),
                st.dictionaries(st.text(max_size=3), _ints(64, True), max_size=3)
                .map(lambda d: list(d.items()))),
}


@dataclass
class Folder:
    """One stream: its files' tables, by file name."""

    files: dict[str, pa.Table] = field(default_factory=dict)
    row_group_size: int = 2
    widened: str | None = None  # a column int32 in some files, int64 in others


@st.composite
def folders(draw: st.DrawFn) -> Folder:
    names = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=6, unique=True))
    count = draw(st.integers(1, 3))  # the source samples three objects' schemas
    widen = count > 1 and draw(st.booleans())
    folder = Folder(row_group_size=draw(st.integers(1, 4)), widened="w" if widen else None)
    missing = draw(st.sampled_from([None, *names])) if count > 1 else None
    for index in range(count):
        rows = draw(st.integers(0 if index else 1, 6))
        columns: dict[str, pa.Array] = {}
        for name in names:
            if name == missing and index == count - 1:
                continue
            kind = KINDS[name]
            values = draw(st.lists(st.none() | kind.values, min_size=rows, max_size=rows))
            if pa.types.is_decimal(kind.arrow):  # pyarrow infers 0.xx's precision one too big
                array = pa.array([None if v is None else str(v) for v in values]).cast(kind.arrow)
            else:
                array = pa.array(values, kind.arrow)
            columns[name] = kind.encode(array)
        if widen:
            width = pa.int32() if index % 2 == 0 else pa.int64()
            bits = 32 if index % 2 == 0 else 64
            values = draw(st.lists(st.none() | _ints(bits, True), min_size=rows, max_size=rows))
            columns["w"] = pa.array(values, width)
        folder.files[f"part-{index}.parquet"] = pa.table(columns) if columns else \
            pa.table({"only_nulls": pa.nulls(rows, pa.int32())})
    return folder


# ------------------------------------------------------------------- comparison


def _plain(column: pa.ChunkedArray) -> list[Any]:
    """Values to compare: instants and dates as their numbers (Spark's years past 9999
    and before 1 have no Python datetime), maps as dicts."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        return column.cast(pa.int64()).to_pylist()
    if pa.types.is_date(kind):
        return column.cast(pa.int32()).to_pylist()
    return column.to_pylist(maps_as_pydicts="strict")


def _landed_type(spark_type: str) -> str:
    """The Delta column type Headwater gives a column Spark reads as ``spark_type``."""
    if spark_type in ("tinyint", "smallint", "int", "bigint", "decimal(20,0)"):
        return "bigint"
    if spark_type in ("float", "double"):
        return "double"
    if spark_type in ("timestamp", "timestamp_ntz"):
        return "timestamp"
    if spark_type.startswith("map<"):
        return "variant"
    if spark_type.startswith("array<"):
        return f"array<{_landed_type(spark_type[6:-1])}>"
    if spark_type.startswith("struct<"):
        return spark_type.replace("int,", "bigint,").replace("array<int>", "array<bigint>")
    return spark_type


def _expected(value: Any, spark_type: str, name: str) -> tuple[Any, list[tuple[str, str]]]:
    """Spark's value as Headwater must land it, and the notes it must carry."""
    if value is not None and spark_type == "decimal(20,0)":  # an unsigned 64-bit value
        number = int(value)
        return (number, []) if number <= INT64_MAX else (None, [(name, str(number))])
    if spark_type == "float" and value is not None:
        return float(value), []
    return value, []


def _same(values: Any, spark_values: Any) -> bool:
    return bool(comparable(values) == comparable(spark_values))


def compare(spark: Any, folder: Path, table: Path, widened: str | None) -> int:
    """Every row and column of the Delta table against ``spark.read.parquet``; rows compared."""
    reader = spark.read.option("mergeSchema", "true")
    if widened is not None:
        # Spark refuses to merge int and bigint: read with the schema it infers when
        # the narrow column is taken as bigint (its reader widens int32 to int64).
        schema = reader.parquet(*[str(p) for p in sorted(folder.iterdir())
                                  if pq.read_schema(p).field(widened).type == pa.int64()]).schema
        merged = {f.name: f for f in schema.fields}
        for path in sorted(folder.iterdir()):
            for extra in reader.parquet(str(path)).schema.fields:
                merged.setdefault(extra.name, extra)
        from pyspark.sql.types import StructType

        reader = spark.read.schema(StructType(list(merged.values())))
    reference = reader.parquet(str(folder)).select(
        "*", "_metadata.file_name", "_metadata.row_index")
    spark_types = dict(reference.dtypes)
    want = {(r["file_name"], r["row_index"]): r for r in _rows(reference.toArrow())}
    landed = spark.read.format("delta").load(str(table))
    landed_types = dict(landed.dtypes)
    # PySpark's toArrow fails on a null VARIANT: such columns come as their JSON text.
    landed = landed.selectExpr(*[f"to_json(`{c}`) AS `{c}`" if t == "variant" else f"`{c}`"
                                 for c, t in landed.dtypes])
    got = {(r["_source_key"].rsplit("/", 1)[-1], r["_source_record"]): r
           for r in _rows(landed.toArrow())}
    assert sorted(got) == sorted(want)
    columns = [c for c in spark_types if c not in ("file_name", "row_index")]
    for column in columns:
        assert landed_types[column] == _landed_type(spark_types[column]), column
    for key, spark_row in want.items():
        row = got[key]
        notes = sorted((n["field"], n["value"]) for n in row["_hw_notes"] or [])
        expected_notes: list[tuple[str, str]] = []
        for column in columns:
            value, noted = _expected(spark_row[column], spark_types[column], column)
            expected_notes += noted
            landed_value = row[column]
            if landed_types[column] == "variant" and landed_value is not None:
                landed_value = json.loads(landed_value)
            assert _same(landed_value, value), (key, column, landed_value, spark_row[column])
        assert notes == sorted(expected_notes), (key, row["_hw_notes"])
    return len(want)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    columns = {name: _plain(table.column(name)) for name in table.column_names}
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(),
                                                                        strict=True)]


# ------------------------------------------------------------------------- tests

STREAMS_PER_SYNC = 6


@settings(differential(4), phases=[Phase.explicit, Phase.generate])  # a shrink step is a sync
@given(st.lists(folders(), min_size=STREAMS_PER_SYNC, max_size=STREAMS_PER_SYNC))
def test_parquet_lands_as_sparks_reader_reads_it(spark: Any, tmp_path_factory: Any,
                                                 case: list[Folder]) -> None:
    root = tmp_path_factory.mktemp("parquet-diff")
    streams = []
    for index, folder in enumerate(case):
        for name, table in folder.files.items():
            path = root / "in" / f"s{index}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, row_group_size=folder.row_group_size)
        streams.append({"name": f"s{index}", "prefix": f"s{index}/",
                        "format": {"type": "parquet"}})
    path = connection_file(
        root, name="parquet", source_type="object_storage",
        source={"url": str(root / "in"), "streams": streams},
        streams=[{"name": s["name"]} for s in streams])
    # A generated stream may hold only misfits (every row noted): that run is `warned`.
    result = sync(path, expect=None)
    assert result.status in SUCCEEDED_STATUSES, result.to_dict()
    for index, folder in enumerate(case):
        compare(spark, root / "in" / f"s{index}", root / "lake" / f"s{index}", folder.widened)
