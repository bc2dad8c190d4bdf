"""The sample source: spec, check, partitions over cursor gaps, and exact reads."""

from __future__ import annotations

import pickle
from typing import Any

import jsonschema
import pyarrow as pa
import pytest
from conftest import latest_per_id, read_partitions, sync

import headwater.connectors.sample as sample_package
from headwater.connectors.sample import SampleSource
from headwater.errors import AuthenticationError, ConfigError, ConnectorError, SpecValidationError
from headwater.sdk import ConcurrentCursor, Partition


def test_public_surface_matches_all() -> None:
    public = {name for name in vars(sample_package) if not name.startswith("_")}
    assert set(sample_package.__all__) == public - {"annotations"}


# -- spec and check -------------------------------------------------------------------


def test_spec_is_draft7_and_accepts_its_own_defaults() -> None:
    spec = SampleSource.spec()
    jsonschema.Draft7Validator.check_schema(spec)
    validator = jsonschema.Draft7Validator(spec)
    defaults = {
        name: field["default"] for name, field in spec["properties"].items() if "default" in field
    }
    assert defaults["seed"] == 42 and defaults["start"] == "2024-01-01T00:00:00Z"
    validator.validate(defaults)
    validator.validate({})
    SampleSource(defaults)  # what the spec accepts, the source accepts


def test_spec_rejects_unknown_and_wrongly_typed_fields() -> None:
    validator = jsonschema.Draft7Validator(SampleSource.spec())
    assert not validator.is_valid({"userz": 5})
    assert not validator.is_valid({"users": -1})
    assert not validator.is_valid({"users": "ten"})
    assert not validator.is_valid({"schema_version": 3})
    assert not validator.is_valid({"rows_per_partition": 0})


def test_spec_marks_the_api_key_secret() -> None:
    api_key = SampleSource.spec()["properties"]["api_key"]
    assert api_key["airbyte_secret"] is True
    assert api_key["type"] == "string"


def test_config_errors_name_the_field() -> None:
    with pytest.raises(SpecValidationError) as excinfo:
        SampleSource({"users": -1, "colour": "red"})
    paths = [path for path, _ in excinfo.value.problems]
    assert paths == ["source.config.users", "source.config.colour"]
    with pytest.raises(SpecValidationError):
        SampleSource({"users": "10"})  # counts are integers, not strings
    with pytest.raises(ConfigError):
        SampleSource({"updates_per_generation": 50_000, "new_per_generation": 36_400})


def test_check_refuses_the_documented_invalid_api_key() -> None:
    with pytest.raises(AuthenticationError) as excinfo:
        SampleSource({"api_key": "invalid"}).check()
    assert excinfo.value.exit_code == 3
    assert "invalid" not in str(excinfo.value).replace("the sample source refused", "")
    SampleSource({"api_key": "anything-else"}).check()
    SampleSource({}).check()


def test_the_api_key_never_prints() -> None:
    source = SampleSource({"api_key": "s3cret-value"})
    assert "s3cret-value" not in repr(source._settings)
    assert "s3cret-value" not in str(source._settings)


# -- streams --------------------------------------------------------------------------


def test_streams_declare_key_cursor_and_start() -> None:
    source = SampleSource({"start": "2023-06-01T12:00:00+02:00"})
    assert [s.stream_name for s in source.streams()] == ["users", "orders"]
    for stream in source.streams():
        assert list(stream.primary_key) == ["id"]
        assert stream.cursor_field == "updated_at"
        assert stream.supported_sync_modes == ["full_refresh", "incremental"]
        assert stream.cursor_start() == "2023-06-01T10:00:00Z"


def test_full_plan_reads_each_id_once_and_equals_expected_rows(
    small_config: dict[str, Any],
) -> None:
    source = SampleSource({**small_config, "generation": 3})
    for name in ("users", "orders"):
        stream = source.stream(name)
        plan = stream.partitions(None)
        assert len({p.id for p in plan}) == len(plan)
        per_partition = [read_partitions(stream, [p]).num_rows for p in plan]
        assert all(0 < rows <= small_config["rows_per_partition"] for rows in per_partition)
        table = read_partitions(stream, plan)
        ids = table.column("id").to_pylist()
        assert len(ids) == len(set(ids))
        assert table.sort_by("id").equals(source.expected_rows(name))


def test_windows_are_contiguous_and_cut_where_the_data_is() -> None:
    source = SampleSource({"users": 2_500, "rows_per_partition": 1_000, "generation": 2})
    stream = source.stream("users")
    plan = stream.partitions(None)
    bounds = [(p.params["start"], p.params["end"]) for p in plan]
    assert bounds == [
        ("2024-01-01T00:00:00Z", "2024-01-01T00:16:40Z"),  # 1,000 initial rows
        ("2024-01-01T00:16:40Z", "2024-01-01T00:33:20Z"),
        ("2024-01-01T00:33:20Z", "2024-01-01T00:41:40Z"),  # the last 500
        ("2024-01-01T00:41:40Z", "2024-01-01T01:42:00Z"),  # quiet hour + generation 1
        ("2024-01-01T01:42:00Z", "2024-01-02T01:42:00Z"),  # quiet day + generation 2
    ]
    assert bounds[-1][1] == stream.now()
    assert plan[0] == Partition(
        "users",
        "users:2024-01-01T00:00:00Z/2024-01-01T00:16:40Z",
        {"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T00:16:40Z"},
    )


def test_an_empty_world_plans_nothing() -> None:
    source = SampleSource({"users": 0, "orders": 0})
    for name in ("users", "orders"):
        stream = source.stream(name)
        assert stream.now() == stream.cursor_start()
        assert stream.partitions(None) == []
    assert source.expected_rows("users").num_rows == 0


def test_next_generation_reads_exactly_the_changed_and_new_rows(
    small_config: dict[str, Any],
) -> None:
    g0 = SampleSource(small_config)
    g1 = SampleSource({**small_config, "generation": 1})
    for name in ("users", "orders"):
        _, state = sync(g0, name, None)
        changes, _ = sync(g1, name, state)
        before = {row["id"]: row for row in g0.expected_rows(name).to_pylist()}
        after = g1.expected_rows(name).to_pylist()
        expected = [row for row in after if before.get(row["id"]) != row]
        assert len(expected) == 7 + 5
        assert changes.sort_by("id").to_pylist() == expected


def test_incremental_syncs_over_generations_land_the_source(
    small_config: dict[str, Any],
) -> None:
    """``append_dedup`` of every incremental sync equals the world: nothing missed or stale."""
    state: dict[str, Any] | None = None
    landed: list[pa.Table] = []
    for generation in range(5):
        source = SampleSource({**small_config, "generation": generation})
        table, state = sync(source, "users", state)
        landed.append(table)
        assert latest_per_id(landed).equals(source.expected_rows("users"))
    # A sync with no new generation finds nothing to read.
    assert sync(source, "users", state)[0].num_rows == 0


def test_partitions_cover_only_the_gaps_of_out_of_order_state(
    small_config: dict[str, Any],
) -> None:
    source = SampleSource({**small_config, "generation": 2})
    stream = source.stream("orders")
    full = stream.partitions(None)
    done, missing = full[1::2], full[0::2]
    cursor = stream.cursor(None, incremental=True)
    assert isinstance(cursor, ConcurrentCursor)
    for partition in reversed(done):  # finished out of order
        cursor.close_partition(partition)

    plan = stream.partitions(cursor.state())
    assert [p.id for p in plan] == [p.id for p in missing]
    rest = read_partitions(stream, plan)
    already = read_partitions(stream, done)
    assert pa.concat_tables([rest, already]).sort_by("id").equals(source.expected_rows("orders"))


def test_gaps_with_odd_boundaries_keep_them_and_lose_no_row() -> None:
    source = SampleSource({"users": 3_000, "rows_per_partition": 1_000})
    stream = source.stream("users")
    # An earlier sync (other tool, other cuts) completed an oddly bounded window.
    state: dict[str, Any] = {
        "state_type": "date-range",
        "cursor_field": "updated_at",
        "slices": [{"start": "2024-01-01T00:05:00.5Z", "end": "2024-01-01T00:20:00Z"}],
    }
    plan = stream.partitions(state)
    assert plan[0].params == {"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T00:05:00.500000Z"}
    assert [p.params["start"] for p in plan[1:]] == ["2024-01-01T00:20:00Z", "2024-01-01T00:33:20Z"]
    done = read_partitions(
        stream,
        [Partition("users", "w", {"start": s["start"], "end": s["end"]}) for s in state["slices"]],
    )
    assert done.column("id").to_pylist() == list(range(301, 1200))  # 300.5 s rounds up
    merged = pa.concat_tables([read_partitions(stream, plan), done])
    assert merged.sort_by("id").equals(source.expected_rows("users"))


def test_sequential_state_reads_from_its_value() -> None:
    source = SampleSource({"users": 100, "generation": 1})
    stream = source.stream("users")
    plan = stream.partitions({"updated_at": "2024-01-01T00:01:40Z"})  # = start + 100 s
    table = read_partitions(stream, plan)
    assert table.num_rows == 20
    assert min(table.column("updated_at").to_pylist()).isoformat() == "2024-01-01T01:01:40+00:00"


def test_read_rejects_a_partition_without_a_window() -> None:
    stream = SampleSource({}).stream("users")
    with pytest.raises(ConnectorError) as excinfo:
        list(stream.read(Partition("users", "bad", {"from": "x"})))
    assert excinfo.value.context["partition"] == "bad"


def test_bad_values_and_schema_growth_reach_the_batches() -> None:
    source = SampleSource({"users": 50, "bad_value_every": 10, "schema_version": 2})
    stream = source.stream("users")
    batches: list[Any] = [b for p in stream.partitions(None) for b in stream.read(p)]
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert all(b.schema.field("age").type == pa.string() for b in batches)
    assert all("loyalty_tier" in b.schema.names for b in batches)
    table = pa.Table.from_batches(batches)
    unknown = [row["id"] for row in table.to_pylist() if row["age"] == "unknown"]
    assert unknown == [9, 19, 29, 39, 49]


def test_source_and_streams_pickle_and_read_the_same(small_config: dict[str, Any]) -> None:
    source = SampleSource({**small_config, "generation": 2, "api_key": "k"})
    for stream in source.streams():
        copy = pickle.loads(pickle.dumps(stream))
        plan = stream.partitions(None)
        assert copy.partitions(None) == plan
        assert read_partitions(copy, plan).equals(read_partitions(stream, plan))
        assert len(pickle.dumps(stream)) < 2_000  # config only, never rows
    assert (
        pickle.loads(pickle.dumps(source))
        .expected_rows("users")
        .equals(source.expected_rows("users"))
    )


def test_expected_rows_of_an_unknown_stream_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        SampleSource({}).expected_rows("payments")
