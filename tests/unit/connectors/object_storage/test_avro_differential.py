"""Avro objects land as fastavro decodes their records, for generated records.

Spark's Avro reader (``spark-avro``) is not in PySpark's jars nor in the project's
cache, and the suite fetches nothing, so the reference is the file's own records
as fastavro decodes them: hypothesis writes records with logical types (decimal,
date, timestamp-millis and -micros, uuid), enums, fixed, bytes, maps, arrays with
null items, nested records and unions with null, a sync's inference types the
stream from the file, and every landed value must be the decoded one (a uuid as
its text, a map as a struct of its keys), with no note.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
from pathlib import Path
from typing import Any

import fastavro
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.connectors._json_cases import comparable, differential
from tests.unit.connectors.object_storage.conftest import read_all, source, write


def _nullable(kind: Any) -> list[Any]:
    return ["null", kind]


SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": name, "type": _nullable(kind)} for name, kind in [
        ("dec", {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}),
        ("d", {"type": "int", "logicalType": "date"}),
        ("tm", {"type": "long", "logicalType": "timestamp-millis"}),
        ("tu", {"type": "long", "logicalType": "timestamp-micros"}),
        ("u", {"type": "string", "logicalType": "uuid"}),
        ("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
        ("fx", {"type": "fixed", "name": "F", "size": 2}),
        ("b", "bytes"), ("s", "string"), ("f", "double"), ("l", "long"),
        ("m", {"type": "map", "values": "long"}),
        ("arr", {"type": "array", "items": ["null", "long"]}),
        ("n", {"type": "record", "name": "N",
               "fields": [{"name": "x", "type": ["null", "long"]},
                          {"name": "t", "type": ["null", "string"]}]}),
    ]]}

_LONGS = st.integers(-(2**63), 2**63 - 1)
_UTC = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31),
                    timezones=st.just(dt.UTC))
_DECIMALS = st.integers(-(10**38) + 1, 10**38 - 1).map(lambda n: decimal.Decimal(f"{n}E-10"))
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "dec": _DECIMALS, "d": st.dates(),
    "tm": _UTC.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "tu": _UTC, "u": st.uuids(), "e": st.sampled_from(["A", "B"]),
    "fx": st.binary(min_size=2, max_size=2), "b": st.binary(max_size=5),
    "s": st.text(st.characters(blacklist_categories=["Cs"])),
    "f": st.floats() | st.just(-0.0), "l": _LONGS,
    "m": st.dictionaries(st.text(max_size=3), _LONGS, max_size=3),
    "arr": st.lists(st.none() | _LONGS, max_size=3),
    "n": st.fixed_dictionaries({"x": st.none() | _LONGS, "t": st.none() | st.text(max_size=3)}),
}
RECORDS = st.lists(st.fixed_dictionaries({name: st.none() | values
                                          for name, values in VALUES.items()}),
                   min_size=1, max_size=12)


def _expected(name: str, value: Any) -> Any:
    """A decoded value as the table must hold it."""
    if name == "u" and value is not None:
        return str(value)
    return value


def _landed(name: str, value: Any, decoded: Any) -> Any:
    """A landed map (a struct of the sample's keys, or JSON text when every sampled map
    is empty) as the keys this record has."""
    if name == "m" and value is not None and decoded is not None:
        items = json.loads(value) if isinstance(value, str) else value
        return {key: item for key, item in items.items() if key in decoded}
    return value


@differential(150)
@given(RECORDS)
def test_avro_lands_as_fastavro_decodes_it(tmp_path_factory: Any,
                                           records: list[dict[str, Any]]) -> None:
    root: Path = tmp_path_factory.mktemp("avro")
    out = io.BytesIO()
    fastavro.writer(out, SCHEMA, records)
    write(root, "in/a.avro", out.getvalue())
    decoded = list(fastavro.reader(io.BytesIO(out.getvalue())))
    table = read_all(source(str(root), globs=["in/*"], format={"type": "avro"})
                     .streams()[0]).sort_by("_source_record")
    landed = table.to_pylist()
    assert [row["_source_record"] for row in landed] == list(range(len(decoded)))
    for row, record in zip(landed, decoded, strict=True):
        assert row["_hw_notes"] is None, row["_hw_notes"]
        for name, value in record.items():
            if name not in table.column_names:  # a column null in every sampled record
                assert value is None, name
                continue
            got = _landed(name, row[name], value)
            assert comparable(got) == comparable(_expected(name, value)), (name, got, value)
