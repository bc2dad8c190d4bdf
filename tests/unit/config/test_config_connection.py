"""Connection files: loading, defaults, and errors that name field, line and variable."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from headwater.config import (
    ConnectionConfig,
    ConnectorRef,
    DestinationSyncMode,
    SparkConfig,
    StreamConfig,
    SyncMode,
    load_connection,
)
from headwater.errors import ConfigError, SpecValidationError

FIXTURES = Path(__file__).parent / "fixtures"


def write(tmp_path: Path, text: str, name: str = "conn.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env=env or {})
    return dict(info.value.problems)


def test_full_file_loads_with_every_section() -> None:
    connection = load_connection(FIXTURES / "quickstart.yaml", env={"SAMPLE_API_KEY": "k-123"})

    assert connection.name == "quickstart"
    assert connection.source == ConnectorRef(
        type="sample", config={"users": 1000, "seed": 42, "api_key": "k-123"}
    )
    assert connection.destination.config == {"path": "./lakehouse"}
    users, orders = connection.streams or []
    assert users.sync_mode is SyncMode.INCREMENTAL
    assert users.destination_sync_mode is DestinationSyncMode.APPEND_DEDUP
    assert users.primary_key == ["id"]  # a single string becomes a one-column key
    assert users.cursor_field == "updated_at"
    assert (orders.sync_mode, orders.destination_sync_mode) == ("full_refresh", "overwrite")
    assert connection.spark.master == "local[*]"
    assert connection.spark.conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.ansi.enabled": "true",
    }
    assert connection.metadata_store == "sqlite:///.headwater/headwater.db"
    assert connection.checkpoint.partitions_per_checkpoint == 8
    assert connection.checkpoint.concurrent_checkpoints == 2
    assert connection.path == FIXTURES / "quickstart.yaml"


def test_minimal_file_gets_defaults_and_its_name_from_the_file() -> None:
    connection = load_connection(FIXTURES / "minimal.yaml", env={})

    assert connection.name == "minimal"
    assert connection.destination == ConnectorRef(type="delta", config={})
    assert connection.streams is None
    assert connection.spark == SparkConfig()
    assert connection.metadata_store is None
    assert connection.checkpoint.partitions_per_checkpoint is None


def test_destination_type_defaults_to_delta_when_only_config_is_given(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\ndestination: {config: {path: /tmp/x}}\n")
    assert load_connection(path, env={}).destination == ConnectorRef(
        type="delta", config={"path": "/tmp/x"}
    )


def test_path_is_not_dumped_and_secrets_are_not_in_repr() -> None:
    connection = load_connection(FIXTURES / "quickstart.yaml", env={"SAMPLE_API_KEY": "k-999"})
    assert "path" not in connection.model_dump()
    assert "k-999" not in repr(connection)


def test_field_lines_map_paths_to_file_lines() -> None:
    connection = load_connection(FIXTURES / "quickstart.yaml", env={"SAMPLE_API_KEY": "k"})
    lines = connection.field_lines
    assert lines["source.config.users"] == 6
    assert lines["streams[0].sync_mode"] == 14
    assert lines["streams[1]"] == 18
    assert lines['spark.conf["spark.sql.shuffle.partitions"]'] == 22
    # A field not written in the file points at its nearest ancestor.
    assert connection.field_line("source.config.auth.token") == 5


def test_structure_errors_name_each_field_with_its_line() -> None:
    problems = problems_of(FIXTURES / "typos.yaml")

    assert problems == {
        "streams[0].sync_mode": (
            "expected 'full_refresh' or 'incremental' (got 'incremntal') (line 7)"
        ),
        "streams[1].sync_mod": (
            "unknown field (did you mean 'sync_mode'? allowed: name, sync_mode, "
            "destination_sync_mode, cursor_field, primary_key, json_columns, partition_by, "
            "cluster_by, table_properties, on_warning, schema_contract, expectations, deletes) "
            "(line 9)"
        ),
        "checkpoint.concurrent_checkpoints": "must be >= 1 (line 11)",
        "checkpoint.partitions_per_checkpoint": "expected an integer (got string) (line 12)",
    }


def test_a_malformed_partition_transform_names_its_field_and_the_expected_shape(
        tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\ndestination: {type: iceberg}\nstreams:\n"
                 "  - {name: users, partition_by: [country, 'bucket(id)']}\n")
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})
    assert info.value.problems == [(
        "streams[0].partition_by",
        "'bucket(id)' is not bucket(N, column) with N a positive whole number (line 4)")]
    fine = write(tmp_path, "source: {type: sample}\ndestination: {type: iceberg}\nstreams:\n"
                 "  - {name: users, partition_by: [country, 'days(updated_at)', "
                 "'bucket(16, id)']}\n")
    assert load_connection(fine, env={}).streams[0].partition_by[2] == "bucket(16, id)"


def test_error_message_lists_problems_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\nstreams: [{name: a, sync_mode: nope}]\n")
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})
    text = str(info.value)
    assert str(path) in text
    assert "  - streams[0].sync_mode: expected 'full_refresh' or 'incremental'" in text


def test_missing_required_field_points_at_the_enclosing_mapping(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: x
        source:
          config: {users: 1}
        """,
    )
    assert problems_of(path) == {"source.type": "required field is missing (line 2)"}


def test_wrong_type_shows_the_type_not_the_value(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample, config: hunter2-password}\n")
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})
    assert info.value.problems == [("source.config", "expected a mapping (got string) (line 1)")]
    assert "hunter2" not in str(info.value)
    # pydantic's error repeats input values: it must not travel along as a cause.
    assert info.value.__cause__ is None
    assert info.value.__context__ is None


def test_unknown_top_level_field_and_path_key_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\nstreem: []\npath: /etc\n")
    problems = problems_of(path)
    assert set(problems) == {"streem", "path"}
    assert "did you mean 'streams'?" in problems["streem"]
    assert problems["path"].endswith("(line 3)")


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (
            "{name: a, sync_mode: full_refresh, destination_sync_mode: append_dedup}",
            "full_refresh + append_dedup is not a sync mode",
        ),
        (
            "{name: a, sync_mode: incremental, destination_sync_mode: overwrite}",
            "incremental + overwrite is not a sync mode",
        ),
        (
            "{name: a, sync_mode: incremental, destination_sync_mode: append_dedup, "
            "primary_key: []}",
            "append_dedup needs a primary key",
        ),
    ],
)
def test_invalid_sync_mode_combinations(tmp_path: Path, stream: str, message: str) -> None:
    path = write(tmp_path, f"source: {{type: sample}}\nstreams:\n  - {stream}\n")
    problems = problems_of(path)
    assert list(problems) == ["streams[0]"]
    assert problems["streams[0]"].startswith(message)
    assert problems["streams[0]"].endswith("(line 3)")


def test_duplicate_stream_names_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\nstreams: [{name: a}, {name: a}]\n")
    assert problems_of(path) == {"streams": "stream 'a' is listed more than once (line 2)"}


def test_empty_stream_list_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\nstreams: []\n")
    assert "leave streams out" in problems_of(path)["streams"]


def test_incremental_defaults_to_append() -> None:
    stream = StreamConfig(name="a", sync_mode=SyncMode.INCREMENTAL)
    assert stream.destination_sync_mode is DestinationSyncMode.APPEND


def test_master_and_remote_are_exclusive(tmp_path: Path) -> None:
    path = write(
        tmp_path, "source: {type: sample}\nspark: {master: 'local[2]', remote: 'sc://h:15002'}\n"
    )
    assert problems_of(path)["spark"].startswith("master and remote are mutually exclusive")


def test_remote_must_be_a_spark_connect_url() -> None:
    with pytest.raises(ValueError, match="sc://host:15002"):
        SparkConfig(remote="http://host:15002")


def test_invalid_name_from_file_says_where_it_came_from(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\n", name="my conn.yaml")
    problem = problems_of(path)["name"]
    assert "letters, digits" in problem
    assert "'my conn'" in problem


def test_bad_metadata_store_url_does_not_echo_it(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample}\nmetadata_store: 'not a url s3cret'\n")
    problem = problems_of(path)["metadata_store"]
    assert problem.startswith("is not a SQLAlchemy URL")
    assert "s3cret" not in problem


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "source:\n  type: sample\n  config: {users: 1\nstreams: []\n")
    with pytest.raises(ConfigError) as info:
        load_connection(path, env={})
    assert info.value.context["file"] == str(path)
    assert info.value.context["line"] == 4
    assert "cannot parse the connection file" in str(info.value)


def test_yaml_error_does_not_quote_the_offending_line(tmp_path: Path) -> None:
    path = write(tmp_path, "source:\n  type: sample\n  password: hunter2: oops\n")
    with pytest.raises(ConfigError) as info:
        load_connection(path, env={})
    assert info.value.context["line"] == 3
    assert "hunter2" not in str(info.value)
    # Not chained either: PyYAML's own message quotes the line, and tracebacks print causes.
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_duplicate_yaml_keys_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "source:\n  type: sample\n  type: other\n")
    with pytest.raises(ConfigError) as info:
        load_connection(path, env={})
    assert info.value.context == {
        "file": str(path),
        "field": "source.type",
        "line": 3,
    }


@pytest.mark.parametrize(("text", "message"), [("", "is empty"), ("- a\n- b\n", "not a list")])
def test_file_must_be_a_mapping(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_connection(write(tmp_path, text), env={})


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_connection(tmp_path / "absent.yaml")


def test_missing_variable_names_variable_field_and_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_connection(FIXTURES / "quickstart.yaml", env={})
    error = info.value
    assert not isinstance(error, SpecValidationError)
    assert error.context["variable"] == "SAMPLE_API_KEY"
    assert error.context["field"] == "source.config.api_key"
    assert error.context["line"] == 8
    assert "SAMPLE_API_KEY" in str(error)


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMPLE_API_KEY", "from-os-environ")
    connection = load_connection(FIXTURES / "quickstart.yaml")
    assert connection.source.config["api_key"] == "from-os-environ"


def test_interpolated_secret_with_yaml_syntax_stays_one_string(tmp_path: Path) -> None:
    path = write(tmp_path, "source: {type: sample, config: {password: '${PW}'}}\n")
    tricky = "a: b\n- c # {d} 'e\""
    connection = load_connection(path, env={"PW": tricky})
    assert connection.source.config == {"password": tricky}


def test_interpolated_values_feed_structured_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "source: {type: sample}\ncheckpoint: {concurrent_checkpoints: '${CONCURRENCY:-4}'}\n",
    )
    assert load_connection(path, env={}).checkpoint.concurrent_checkpoints == 4


class TestResolve:
    def test_source_defaults_fill_what_the_file_leaves_out(self) -> None:
        stream = StreamConfig(
            name="users",
            sync_mode=SyncMode.INCREMENTAL,
            destination_sync_mode=DestinationSyncMode.APPEND_DEDUP,
        )
        resolved = stream.resolve(cursor_field="updated_at", primary_key=("id",))
        assert (resolved.cursor_field, resolved.primary_key) == ("updated_at", ["id"])
        assert stream.cursor_field is None  # the original is unchanged

    def test_file_wins_over_source(self) -> None:
        stream = StreamConfig(
            name="users",
            sync_mode=SyncMode.INCREMENTAL,
            cursor_field="modified",
            primary_key=["a", "b"],
        )
        resolved = stream.resolve(cursor_field="updated_at", primary_key=["id"])
        assert (resolved.cursor_field, resolved.primary_key) == ("modified", ["a", "b"])

    def test_incremental_without_any_cursor(self) -> None:
        stream = StreamConfig(name="users", sync_mode=SyncMode.INCREMENTAL)
        with pytest.raises(ConfigError, match="needs a cursor field") as info:
            stream.resolve(cursor_field=None, primary_key=["id"])
        assert info.value.context == {"stream": "users"}

    def test_append_dedup_without_any_primary_key(self) -> None:
        stream = StreamConfig(
            name="users",
            sync_mode=SyncMode.INCREMENTAL,
            destination_sync_mode=DestinationSyncMode.APPEND_DEDUP,
            cursor_field="updated_at",
        )
        with pytest.raises(ConfigError, match="needs a primary key"):
            stream.resolve(primary_key=[])


def test_connection_built_in_code_has_no_path_or_lines() -> None:
    connection = ConnectionConfig(name="c", source=ConnectorRef(type="sample"))
    assert connection.path is None
    assert connection.field_lines == {}
    assert connection.destination.type == "delta"


@pytest.mark.parametrize("when", ["late", "stale"])
def test_a_health_hook_without_a_schedule_is_refused(tmp_path: Path, when: str) -> None:
    # serve watches scheduled connections only: the hook was accepted and never ran.
    hooks = f"after_sync:\n  - echo done\n  - {{command: notify, when: {when}}}\n"
    path = write(tmp_path, f"source: {{type: sample}}\nstale_after_s: 60\n{hooks}")
    problem = problems_of(path)["after_sync"]
    assert problem.startswith(f"[1].when: {when} needs a schedule"), problem
    scheduled = write(tmp_path, f"source: {{type: sample}}\nschedule: '0 * * * *'\n{hooks}",
                      name="scheduled.yaml")
    assert [h.when for h in load_connection(scheduled, env={}).after_sync] == ["success", when]


def test_retry_without_a_schedule_is_refused(tmp_path: Path) -> None:
    # serve retries the runs it schedules only: the section was accepted and never acted.
    path = write(tmp_path, "source: {type: sample}\nretry: {max_retries: 5}\n")
    assert problems_of(path)["retry"].startswith("is headwater serve's retrying")
    scheduled = write(tmp_path, "source: {type: sample}\nschedule: '0 * * * *'\n"
                      "retry: {max_retries: 5}\n", name="scheduled.yaml")
    assert load_connection(scheduled, env={}).retry.max_retries == 5
    assert load_connection(write(tmp_path, "source: {type: sample}\n", name="bare.yaml"),
                           env={}).retry.max_retries == 3  # the default needs nothing


@pytest.mark.parametrize("where", ["master: 'spark://cluster:7077'", "remote: 'sc://h:15002'"])
def test_a_jvm_priority_for_a_spark_elsewhere_is_refused(tmp_path: Path, where: str) -> None:
    # Only a local master's JVM is started here (and lowered): it was accepted and ignored.
    spark = f"spark: {{{where}, early_reads_jvm_nice: 9}}\n"
    path = write(tmp_path, f"source: {{type: sample}}\n{spark}")
    problem = problems_of(path)["spark"]
    assert "runs Spark elsewhere, so it would never act" in problem
    assert "cluster" not in problem and "h:15002" not in problem  # no URL quoted
    local = write(tmp_path, "source: {type: sample}\n"
                  "spark: {master: 'local[2]', early_reads_jvm_nice: 9}\n", name="local.yaml")
    assert load_connection(local, env={}).spark.early_reads_jvm_nice == 9
    assert load_connection(write(tmp_path, f"source: {{type: sample}}\nspark: {{{where}}}\n",
                                 name="default.yaml"), env={}).spark.early_reads_jvm_nice == 5
