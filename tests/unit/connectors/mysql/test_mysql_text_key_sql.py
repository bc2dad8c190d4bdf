"""A text key's range is written for the column's collation; the boundary keys stay binary."""

from __future__ import annotations

from headwater.connectors.mysql._sql import window_conditions
from headwater.connectors.mysql._text_keys import server_ordered


def test_a_text_range_compares_under_the_columns_collation() -> None:
    # 'É' is C3 89 in UTF-8; no COLLATE: the column's collation (implicit) wins.
    assert window_conditions({"column": "k", "lo": "Éa", "hi": "b"}) == [
        "`k` >= _utf8mb4 X'c38961'", "`k` < _utf8mb4 X'62'"]


def test_integer_bounds_and_boundary_keys_are_unchanged() -> None:
    conditions = window_conditions({"column": "n", "lo": 5, "hi": None, "key": ["id"],
                                    "top_at": 9, "top_keys": ["[1]"]})
    assert conditions[0] == "`n` >= 5"
    assert "_utf8mb4 X'5b315d' COLLATE utf8mb4_bin" in conditions[1]


def test_cuts_keep_the_servers_order() -> None:
    assert server_ordered(["apple", "Banana", "éclair", "éclair", "Zebra"]) == [
        "apple", "Banana", "éclair", "Zebra"]
