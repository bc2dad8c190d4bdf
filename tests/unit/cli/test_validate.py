"""``headwater validate``: offline checks of connection files, with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app

GOOD = """\
name: good
source:
  type: sample
  config:
    users: 100
schedule: "0 * * * *"
after_sync: ["dbt build"]
"""

WRONG_FIELD = """\
name: wrong
source:
  type: sample
  config:
    users: 100
    orders: ten
streams:
  - name: users
    sync_mode: incremental
"""

BAD_SCHEDULE = """\
source: {type: sample}
schedule: "every day"
destination:
  config: {path: 7, colour: blue}
"""


def test_a_wrong_field_is_reported_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "nested").mkdir()
    wrong = tmp_path / "nested" / "wrong.yml"
    wrong.write_text(WRONG_FIELD)
    result = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"{wrong}:6: source.config.orders:" in result.stdout
    assert "good.yaml" not in result.stdout


def test_json_lists_every_problem_of_every_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_SCHEDULE)
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    result = CliRunner().invoke(app, ["validate", str(bad), str(good), "--json"])
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    assert document["files"] == 2 and document["status"] == "failed"
    found = {(p["field"], p["line"]) for p in document["problems"]}
    assert ("schedule", 2) in found
    assert all(p["file"] == str(bad) for p in document["problems"])


def test_destination_config_is_checked_against_its_spec(tmp_path: Path) -> None:
    bad = tmp_path / "dest.yaml"
    bad.write_text("source: {type: sample}\ndestination:\n  config:\n    path: 7\n")
    result = CliRunner().invoke(app, ["validate", str(bad), "--json"])
    problems = json.loads(result.stdout)["problems"]
    assert [(p["field"], p["line"]) for p in problems] == [("destination.config.path", 4)]


def test_valid_files_pass(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    result = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "all valid" in result.stdout


ORC_TABLE = """\
name: orc
source: {type: sample}
destination:
  type: iceberg
  config: {warehouse: wh}
streams:
  - name: orders
    table_properties:
      write.parquet.compression-codec: zstd
      write.format.default: orc
"""


def test_a_table_property_the_writer_would_not_honour_is_refused_with_its_line(
        tmp_path: Path) -> None:
    path = tmp_path / "orc.yaml"
    path.write_text(ORC_TABLE)
    result = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 2, result.output
    [problem] = json.loads(result.stdout)["problems"]
    assert problem["field"] == "streams[0].table_properties"
    assert problem["line"] == 8  # the table_properties line
    assert problem["message"].startswith(
        "stream 'orders': table_properties: write.format.default: 'orc': the iceberg "
        "destination's tasks write Parquet files only")
    path.write_text(ORC_TABLE.replace("default: orc", "default: parquet"))  # honoured: valid
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 0
