"""The sample world: deterministic, exact, and fast."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from headwater.connectors.sample._world import MAX_BATCH_ROWS, World
from headwater.errors import ConfigError

START = datetime(2024, 1, 1, tzinfo=UTC)


def test_same_seed_gives_the_same_rows_and_another_seed_differs() -> None:
    config: dict[str, Any] = {"users": 500, "orders": 800, "generation": 3}
    for stream in ("users", "orders"):
        first = World(seed=7, **config).table(stream)
        again = World(seed=7, **config).table(stream)
        other = World(seed=8, **config).table(stream)
        assert first.equals(again)
        assert not first.equals(other)
        assert first.num_rows == other.num_rows  # the seed changes values, not sizes


def test_initial_world_has_ids_in_order_one_second_apart() -> None:
    table = World(users=5, start=START).table("users")
    assert table.column("id").to_pylist() == [0, 1, 2, 3, 4]
    expected = [START + timedelta(seconds=i) for i in range(5)]
    assert table.column("created_at").to_pylist() == expected
    assert table.column("updated_at").to_pylist() == expected
    assert table.schema.field("updated_at").type == pa.timestamp("us", tz="UTC")


def test_generation_one_updates_and_adds_exactly_the_configured_rows() -> None:
    before = World(users=1000, updates_per_generation=13, new_per_generation=4).table("users")
    after = World(users=1000, generation=1, updates_per_generation=13, new_per_generation=4).table(
        "users"
    )

    assert after.column("id").to_pylist() == list(range(1004))
    old = after.slice(0, 1000)
    changed = [
        i for i in range(1000) if old.slice(i, 1).to_pylist() != before.slice(i, 1).to_pylist()
    ]
    assert len(changed) == 13
    # A changed row keeps its identity and creation time; its email and age move on.
    for column in ("id", "name", "country", "created_at"):
        assert old.column(column).take(changed).equals(before.column(column).take(changed))
    for column in ("email", "age", "updated_at"):
        new_values = old.column(column).take(changed).to_pylist()
        old_values = before.column(column).take(changed).to_pylist()
        assert all(a != b for a, b in zip(new_values, old_values, strict=True))
    # Events of generation 1 happen at G_1 = start + N s + 1 h, one per second.
    g1 = START + timedelta(seconds=1000 + 3600)
    updated = sorted(old.column("updated_at").take(changed).to_pylist())
    assert updated == [g1 + timedelta(seconds=j) for j in range(13)]
    fresh = after.slice(1000)
    assert fresh.column("created_at").to_pylist() == [
        g1 + timedelta(seconds=13 + j) for j in range(4)
    ]


def test_each_id_appears_once_at_its_latest_version() -> None:
    # Few ids and many generations: the same id is updated again and again.
    world = World(users=20, generation=30, updates_per_generation=10, new_per_generation=1)
    table = world.table("users")
    assert table.column("id").to_pylist() == list(range(50))
    assert table.num_rows == len(set(table.column("email").to_pylist()))
    created = table.column("created_at").to_numpy()
    updated = table.column("updated_at").to_numpy()
    assert (created <= updated).all()


def test_updates_never_exceed_existing_rows() -> None:
    # N = 0: generation 1 can update nothing, generation 2 updates the 3 rows of generation 1.
    world = World(users=0, generation=2, updates_per_generation=10, new_per_generation=3)
    table = world.table("users")
    assert table.column("id").to_pylist() == list(range(6))
    g2 = START + timedelta(seconds=86_400 + 3600)
    assert all(t >= g2 for t in table.column("updated_at").to_pylist())
    assert world.now_offset("users") == 86_400 + 3600 + 3 + 3


def test_now_is_the_exclusive_end_of_the_latest_event() -> None:
    assert World(users=0).now_offset("users") == 0
    assert World(users=10).now_offset("users") == 10
    quiet = World(users=10, generation=5, updates_per_generation=0, new_per_generation=0)
    assert quiet.now_offset("users") == 10
    busy = World(users=10, orders=3, generation=2)
    for stream in ("users", "orders"):
        last = max(busy.table(stream).column("updated_at").to_pylist())
        assert busy.at(busy.now_offset(stream)) == last + timedelta(seconds=1)


def test_batches_of_any_split_add_up_to_the_table() -> None:
    world = World(orders=3000, generation=4, updates_per_generation=50, new_per_generation=20)
    now = world.now_offset("orders")
    cuts = [0, 1, 999, 1000, 2999, 3000, 3001, 3000 + 3600 + 10, 100_000, now]
    pieces = [
        pa.Table.from_batches(list(world.batches("orders", lo, hi)), world.arrow_schema("orders"))
        for lo, hi in itertools.pairwise(cuts)
    ]
    merged = pa.concat_tables(pieces).sort_by("id")
    assert merged.equals(world.table("orders"))


def test_orders_have_two_decimal_amounts_and_known_users() -> None:
    table = World(users=40, orders=2000, generation=2).table("orders")
    amounts = table.column("amount").to_numpy()
    assert np.array_equal(np.round(amounts, 2), amounts)
    assert (amounts >= 1).all() and (amounts < 1000).all()
    user_ids = table.column("user_id").to_numpy()
    assert user_ids.min() >= 0 and user_ids.max() < 40
    assert set(table.column("status").to_pylist()) <= {"placed", "paid", "shipped", "delivered"}


def test_orders_without_users_have_no_user_id() -> None:
    table = World(users=0, orders=5).table("orders")
    assert table.column("user_id").null_count == 5


def test_bad_values_are_strings_every_nth_user() -> None:
    world = World(users=30, bad_value_every=7, generation=1, updates_per_generation=5)
    table = world.table("users")
    assert table.schema.field("age").type == pa.string()
    for row in table.to_pylist():
        if (row["id"] + 1) % 7 == 0:
            assert row["age"] == "unknown"
        else:
            assert row["age"].isdigit() and 18 <= int(row["age"]) < 88
    assert world.json_schema("users")["properties"]["age"] == {"type": "integer"}
    # The good values are exactly those of the same world without bad values.
    clean = World(users=30, generation=1, updates_per_generation=5).table("users")
    good = [(i + 1) % 7 != 0 for i in range(table.num_rows)]
    assert table.column("age").filter(good).to_pylist() == [
        str(age) for age in clean.column("age").filter(good).to_pylist()
    ]


def test_schema_version_two_adds_loyalty_tier() -> None:
    v1 = World(users=10)
    v2 = World(users=10, schema_version=2)
    assert "loyalty_tier" not in v1.table("users").column_names
    assert "loyalty_tier" not in v1.json_schema("users")["properties"]
    assert v2.table("users").column_names[-1] == "loyalty_tier"
    assert v2.json_schema("users")["properties"]["loyalty_tier"] == {"type": "string"}
    assert set(v2.table("users").column("loyalty_tier").to_pylist()) <= {
        "bronze", "silver", "gold", "platinum",
    }  # fmt: skip
    # Schema growth only adds a column: the others are unchanged.
    assert v2.table("users").drop_columns(["loyalty_tier"]).equals(v1.table("users"))
    assert v2.table("orders").equals(v1.table("orders"))


def test_json_schema_declares_every_column() -> None:
    world = World(schema_version=2)
    for stream in ("users", "orders"):
        properties = world.json_schema(stream)["properties"]
        assert list(properties) == world.arrow_schema(stream).names
        assert properties["updated_at"] == {"type": "string", "format": "date-time"}


def test_boundaries_with_microseconds_round_up_to_the_next_row() -> None:
    world = World(users=10)
    low = world.offset_ceil(START + timedelta(seconds=1, microseconds=500_000))
    high = world.offset_ceil(START + timedelta(seconds=3, microseconds=1))
    assert (low, high) == (2, 4)
    assert world.offset_ceil(START - timedelta(seconds=1, microseconds=1)) == -1


def test_a_generation_must_fit_in_its_day() -> None:
    with pytest.raises(ConfigError) as excinfo:
        World(updates_per_generation=86_000, new_per_generation=400)
    assert excinfo.value.context["field"] == "source.config.updates_per_generation"
    World(updates_per_generation=86_000, new_per_generation=399)


def test_a_generation_of_more_days_holds_more_events_and_keeps_its_order() -> None:
    """``days_per_generation`` (benchmarks at scale: 100,000 updates of 1,000,000 keys)."""
    with pytest.raises(ConfigError):
        World(users=200_000, updates_per_generation=100_000, new_per_generation=0)
    world = World(users=200_000, generation=2, updates_per_generation=100_000,
                  new_per_generation=10, days_per_generation=2)
    table = world.table("users")
    assert table.num_rows == 200_020
    assert len(set(table.column("id").to_pylist())) == 200_020
    # Generation 2 begins two days after generation 1, after all its events.
    g1 = START + timedelta(seconds=200_000 + 3600)
    g2 = g1 + timedelta(days=2)
    fresh = table.slice(200_000).column("created_at").to_pylist()
    assert fresh == [g1 + timedelta(seconds=100_000 + j) for j in range(10)] + \
        [g2 + timedelta(seconds=100_000 + j) for j in range(10)]
    assert max(table.column("updated_at").to_pylist()) == g2 + timedelta(seconds=100_009)
    with pytest.raises(ConfigError) as excinfo:
        World(days_per_generation=0)
    assert excinfo.value.context["field"] == "source.config.days_per_generation"


def test_batches_stay_under_the_batch_limit() -> None:
    world = World(users=250_001)
    sizes = [batch.num_rows for batch in world.batches("users", 0, 250_001)]
    assert sizes == [MAX_BATCH_ROWS, MAX_BATCH_ROWS, 50_001]


def test_reading_a_million_rows_is_fast() -> None:
    world = World(users=1_000_000, generation=3)
    began = time.perf_counter()
    rows = sum(batch.num_rows for batch in world.batches("users", 0, world.now_offset("users")))
    elapsed = time.perf_counter() - began
    print(f"\nsample world: {rows:,} users rows in {elapsed:.3f} s ({rows / elapsed:,.0f} rows/s)")
    assert rows == 1_000_030


def test_importing_the_source_imports_no_pandas() -> None:
    """Validating a connection file imports its source: the page and ``/metrics`` read a
    folder of them on their first request.  Building the value pools when the module
    loaded (``pa.array``) imported pandas, about a second of a first scrape's time."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", "import sys, headwater.connectors.sample; "
                               "print('pandas' in sys.modules)"],
        capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
