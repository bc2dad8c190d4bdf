"""The mysql source without a server: its registration, spec, example, type mapping and SQL."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.connectors import get_source_class
from headwater.connectors.mysql import MySQLSource
from headwater.connectors.mysql._sql import literal, text_literal, window_conditions
from headwater.connectors.mysql._types import map_type
from headwater.errors import SpecValidationError

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "mysql-source.yaml"


def test_mysql_is_a_built_in_source_with_a_secret_password() -> None:
    assert get_source_class("mysql") is MySQLSource
    spec = MySQLSource.spec()
    assert spec["properties"]["password"]["airbyte_secret"] is True
    assert set(spec["required"]) == {"database", "username"}
    with pytest.raises(SpecValidationError):
        MySQLSource({"database": "shop", "username": "u", "rows_per_partition": 0})


def test_the_example_connection_validates(tmp_path: Path) -> None:
    from headwater.cli.app import app

    result = CliRunner().invoke(app, ["validate", str(EXAMPLE)],
                                env={"HEADWATER_HOME": str(tmp_path),
                                     "MYSQL_PASSWORD": "example"})
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("data_type", "column_type", "precision", "scale", "expected"), [
    ("bigint", "bigint(20) unsigned", 20, 0,
     {"type": ["number", "null"], "format": "decimal", "precision": 20, "scale": 0}),
    ("tinyint", "tinyint(1)", 3, 0, {"type": ["integer", "null"]}),
    ("decimal", "decimal(65,30)", 65, 30, {"type": ["string", "null"], "format": "decimal"}),
    ("decimal", "decimal(38,10)", 38, 10,
     {"type": ["number", "null"], "format": "decimal", "precision": 38, "scale": 10}),
    ("bit", "bit(64)", 64, 0,
     {"type": ["number", "null"], "format": "decimal", "precision": 20, "scale": 0}),
    ("timestamp", "timestamp(6)", 0, 0, {"type": ["string", "null"], "format": "date-time",
                                         "airbyte_type": "timestamp_with_timezone"}),
    ("datetime", "datetime(6)", 0, 0, {"type": ["string", "null"], "format": "date-time",
                                       "airbyte_type": "timestamp_without_timezone"}),
    ("enum", "enum('a','it''s')", 0, 0, {"type": ["string", "null"],
                                         "x-mysql-enum": ["a", "it's"]}),
    ("varbinary", "varbinary(10)", 0, 0, {"type": ["string", "null"],
                                          "contentEncoding": "base64"}),
])
def test_types_map_to_what_holds_every_value(data_type: str, column_type: str, precision: int,
                                             scale: int, expected: dict[str, object]) -> None:
    assert map_type(data_type, column_type, precision, scale).schema == expected


def test_an_unmapped_type_is_carried_as_text_and_reported() -> None:
    kind = map_type("point", "point", 0, 0)
    assert not kind.mapped and kind.select("p") == "CAST(`p` AS CHAR) AS `p`"


def test_bounds_are_literals_no_text_reaches_the_sql_unquoted() -> None:
    assert literal(2**64 - 1) == "18446744073709551615"
    assert literal(dt.datetime(2024, 1, 2, 4, 5, 6, 7, tzinfo=dt.timezone(dt.timedelta(hours=1)))) \
        == "'2024-01-02 03:05:06.000007'"
    assert text_literal("a'); DROP TABLE t; --") == \
        "_utf8mb4 X'6127293b2044524f50205441424c4520743b202d2d' COLLATE utf8mb4_bin"
    with pytest.raises(TypeError):
        literal(1.5)
    conditions = window_conditions({"column": "at`x", "lo": 1, "hi": 9, "top_at": 8,
                                    "top_keys": ["[3]"], "key": ["id"]})
    assert conditions == ["`at``x` >= 1", "`at``x` < 9",
                          "(`at``x` <> 8 OR CAST(JSON_ARRAY(`id`) AS CHAR) IN "
                          "(_utf8mb4 X'5b335d' COLLATE utf8mb4_bin))"]
