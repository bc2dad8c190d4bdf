"""JSON Lines land as their text says, whichever path reads a block (issue 35).

The differential tests hold the bulk reader to the line-by-line path; this one
holds both to a reference of their own (:mod:`tests.unit.connectors._exact_cases`):
decimals beyond a float's digits, integers past 2**53 and int64's edges, and
date-times and dates at the calendar's edges, with the values computed from the
generated text.  Every object goes through the fallback on purpose (a malformed
line or a value no bulk reader takes) and, without it, through the bulk path;
both are read by the engine's task code.
"""

from __future__ import annotations

import io
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from headwater.connectors.object_storage._formats import ReadPosition, read_jsonl
from headwater.table_schema import arrow_schema_for
from tests.unit.connectors._exact_cases import (
    MALFORMED,
    WITH_DECIMALS,
    WITHOUT_DECIMALS,
    Expected,
    Record,
    Rejected,
    assert_lands,
    records,
    unfit,
)
from tests.unit.connectors._json_cases import differential
from tests.unit.connectors.object_storage.conftest import read_all, source, write


@st.composite
def objects(draw: st.DrawFn) -> tuple[dict[str, Any], list[Record], list[Expected]]:
    """Columns, an object's records, and the same with the fallback's trigger inserted."""
    columns = draw(st.sampled_from([WITH_DECIMALS, WITHOUT_DECIMALS]))
    rows = [draw(records(columns, number)) for number in range(draw(st.integers(1, 8)))]
    broken: list[Expected] = list(rows)
    at = draw(st.integers(0, len(rows)))
    broken.insert(at, Rejected(draw(MALFORMED)) if draw(st.booleans())
                  else draw(unfit(1000)))
    return columns, rows, broken


def text_of(lines: list[Expected]) -> bytes:
    return "".join(line.text + "\n" for line in lines).encode()


def landed(columns: dict[str, Any], block: bytes) -> list[tuple[dict[str, Any], Any]]:
    """The object's rows as the engine's task lands them, in record order."""
    with tempfile.TemporaryDirectory(prefix="hw-exact-") as folder:
        write(Path(folder), "a.jsonl", block)
        stream = source(folder, globs=["*.jsonl"], schema=columns).streams()[0]
        rows = read_all(stream).sort_by("_source_record").to_pylist()
    return [(row, row["_hw_notes"]) for row in rows]


def went_line_by_line(columns: dict[str, Any], block: bytes) -> bool:
    """Whether the reader refused the block (the line-by-line path yields dicts)."""
    schema = pa.schema([f for f in arrow_schema_for({"properties": columns})])
    items = read_jsonl(io.BytesIO(block), "a.jsonl", schema, ReadPosition())
    return any(isinstance(item, dict) for item in items)


@differential(40)
@given(objects())
def test_jsonl_lands_its_text_in_bulk_and_line_by_line(
        case: tuple[dict[str, Any], list[Record], list[Expected]]) -> None:
    columns, rows, broken = case
    block = text_of(broken)
    assert went_line_by_line(columns, block)
    assert_lands(columns, landed(columns, block), broken)
    assert_lands(columns, landed(columns, text_of(list(rows))), list(rows))


def test_a_malformed_line_does_not_round_the_object_s_decimals() -> None:
    """Issue 35 as reported: one broken line sent the object line by line, where
    ``12345678901234567890.123456789012345678`` landed as ...567000.000... with no note
    and the valid extreme was rejected, noted as ``-1e+20``."""
    columns = {"d": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
               "i": {"type": "integer"}}
    good = [b'{"d":12345678901234567890.123456789012345678,"i":9007199254740993}',
            b'{"d":-99999999999999999999.999999999999999999,"i":-9223372036854775808}',
            b'{"d":123456789012345678901,"i":9223372036854775808}']
    for block in (b"\n".join(good) + b"\n", b"\n".join([good[0], b"{bad", *good[1:]]) + b"\n"):
        rows = [row for row, _ in landed(columns, block) if row["_hw_notes"] is None
                or row["_hw_notes"][0]["field"]]
        assert [(r["d"], r["i"]) for r in rows] == [
            (Decimal("12345678901234567890.123456789012345678"), 9007199254740993),
            (Decimal("-99999999999999999999.999999999999999999"), -(2**63)),
            (None, None)]
        assert rows[0]["_hw_notes"] is None and rows[1]["_hw_notes"] is None
        assert sorted((n["field"], n["value"]) for n in rows[2]["_hw_notes"]) == [
            ("d", "123456789012345678901"), ("i", "9223372036854775808")]
