"""``_hw_rescued`` made by Arrow (a batch's path) is the text the row path makes
(``json.dumps`` of the row's unknown fields, keys sorted), value for value: on the
values Arrow writes itself (ASCII text, integers, booleans) and on those it leaves to
Python (text ``json.dumps`` escapes, floats, decimals, dates, nested values), with
nulls, several columns and rows that have none."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headwater.schema_contracts._rescue import rescued_column
from headwater.schema_contracts._rows import _rescued_text

TEXTS = ["plain", "", 'a "quoted" word', "back\\slash", "tab\there", "new\nline", "\x00\x1f",
         "\x7f", "é", "日本", "emoji 😀", "\\u0041", "'single'", "/slash", None]


def row_way(columns: dict[str, pa.Array]) -> list[str | None]:
    """The row path: each row's non-null values in a dict, dumped."""
    values = {name: column.to_pylist() for name, column in columns.items()}
    rows = len(next(iter(columns.values())))
    return [_rescued_text({n: v[row] for n, v in values.items() if v[row] is not None})
            for row in range(rows)]


@pytest.mark.parametrize("column", [
    pa.array(TEXTS, pa.string()),
    pa.array(TEXTS, pa.large_string()),
    pa.array([0, -1, 2**63 - 1, -(2**63), None], pa.int64()),
    pa.array([0, 255, None], pa.uint8()),
    pa.array([True, False, None]),
    pa.array([1.5, 0.1, -0.0, float("nan"), float("inf"), 1e300, None], pa.float64()),
    pa.array([Decimal("1.50"), None], pa.decimal128(5, 2)),
    pa.array([date(2026, 1, 2), None]),
    pa.array([datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), None], pa.timestamp("us", "UTC")),
    pa.array([{"b": 1.5, "a": [1, None]}, None, {"b": None, "a": []}]),
    pa.array([["x", "é"], None, []]),
], ids=lambda c: str(c.type))
def test_one_column_as_the_row_path_writes_it(column: pa.Array) -> None:
    assert rescued_column({"extra": column}).to_pylist() == row_way({"extra": column})


def test_several_columns_keys_sorted_nulls_left_out() -> None:
    columns = {"zeta": pa.array(["z", None, None, 'q"']),
               "alpha": pa.array([1, 2, None, None]),
               "mid\"dle": pa.array([None, True, None, False])}
    made = rescued_column(columns).to_pylist()
    assert made == row_way(columns)
    assert made[0] == '{"alpha": 1, "zeta": "z"}' and made[2] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text()),
                          st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
                min_size=1, max_size=20))
def test_generated_text_and_integers(rows: list[tuple[Any, Any]]) -> None:
    columns = {"t": pa.array([r[0] for r in rows], pa.string()),
               "i": pa.array([r[1] for r in rows], pa.int64())}
    assert rescued_column(columns).to_pylist() == row_way(columns)
