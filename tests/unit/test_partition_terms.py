"""``partition_by`` entries: columns and Iceberg transforms, read the same everywhere."""

from __future__ import annotations

import pytest

from headwater.partition_terms import PartitionTerm, parse_term


@pytest.mark.parametrize(("entry", "term", "field_name"), [
    ("country", PartitionTerm("country"), "country"),
    ("days(updated_at)", PartitionTerm("updated_at", "day"), "updated_at_day"),
    ("years( ts )", PartitionTerm("ts", "year"), "ts_year"),
    ("MONTHS(ts)", PartitionTerm("ts", "month"), "ts_month"),
    ("hours(ts)", PartitionTerm("ts", "hour"), "ts_hour"),
    ("bucket(16, id)", PartitionTerm("id", "bucket", 16), "id_bucket"),
    ("truncate(4,name)", PartitionTerm("name", "truncate", 4), "name_trunc"),
])
def test_columns_and_transforms(entry: str, term: PartitionTerm, field_name: str) -> None:
    assert parse_term(entry) == term
    assert term.field_name == field_name


@pytest.mark.parametrize(("entry", "says"), [
    ("days(updated_at", "years(column), months(column)"),
    ("day(ts)", "bucket(N, column) or truncate(W, column)"),
    ("bucket(id)", "bucket(N, column) with N a positive whole number"),
    ("bucket(0, id)", "bucket(N, column)"),
    ("truncate(x, name)", "truncate(N, column)"),
    ("days(a, b)", "is not days(column)"),
    ("a,b", "is not a column"),
])
def test_a_bad_entry_says_the_expected_shape(entry: str, says: str) -> None:
    with pytest.raises(ValueError, match=f"{entry!r}".replace("(", r"\(").replace(")", r"\)")
                       ) as bad:
        parse_term(entry)
    assert says in str(bad.value)
