"""A stream that committed everything but rejected every record, or stopped writing a
column its table has, is ``warned`` (or ``failed`` with ``on_warning: fail``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from headwater.config import ConnectionConfig, load_connection
from headwater.engine._results import StreamStats, outcome, stream_warnings
from headwater.errors import ConfigError
from headwater.table_schema import META_NAMES, unwritten_columns


def stats(name: str = "s", read: int = 8, rejected: int = 8, status: str = "succeeded",
          warnings: list[str] | None = None) -> StreamStats:
    return StreamStats(name=name, mode="full_refresh+overwrite", status=status,
                       records_read=read, records_rejected=rejected, warnings=warnings or [])


@pytest.mark.parametrize(("read", "rejected", "unwritten", "expected"), [
    (8, 8, (), ["every record read was rejected (8 of 8; why is in the table's _hw_notes)"]),
    (8, 7, (), []),
    (0, 0, (), []),  # nothing read is nothing rejected
    (8, 0, ("id", "at"), ["the table has columns the stream's schema no longer has (null in "
                          "this run's rows): id, at"]),
])
def test_stream_warnings(read: int, rejected: int, unwritten: tuple[str, ...],
                         expected: list[str]) -> None:
    assert stream_warnings(stats(read=read, rejected=rejected), unwritten) == expected


def test_a_warned_stream_warns_the_run_and_a_failed_one_still_fails_it() -> None:
    warned = stats("a", status="warned", warnings=["every record read was rejected"])
    assert outcome([stats("b", rejected=0), warned], "stop") == (
        "warned", "a: every record read was rejected")
    failed = StreamStats(name="c", mode="m", status="failed", error="boom")
    assert outcome([warned, failed], "stop") == ("failed", "c: boom")
    assert warned.to_dict()["warnings"] == ["every record read was rejected"]
    assert "warnings" not in stats(rejected=0).to_dict()


def test_on_warning_is_the_streams_else_the_connections(tmp_path: Path) -> None:
    config = ConnectionConfig.model_validate({
        "name": "c", "source": {"type": "sample"}, "on_warning": "fail",
        "streams": [{"name": "a"}, {"name": "b", "on_warning": "warn"}]})
    assert [config.on_warning_of(s) for s in ("a", "b", "unlisted")] == ["fail", "warn", "fail"]
    assert ConnectionConfig.model_validate(
        {"name": "c", "source": {"type": "sample"}}).on_warning_of("a") == "warn"


def test_on_warning_takes_only_warn_or_fail(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: c\nsource: {type: sample}\non_warning: ignore\n")
    with pytest.raises(ConfigError, match="on_warning"):
        load_connection(path)


def test_unwritten_columns_are_the_tables_others_in_its_order() -> None:
    table = [*META_NAMES, "id", "tier", "name", "at"]
    assert unwritten_columns(table, pa.schema([("name", pa.string()), ("id", pa.int64()),
                                               ("new", pa.int64())])) == ["tier", "at"]
