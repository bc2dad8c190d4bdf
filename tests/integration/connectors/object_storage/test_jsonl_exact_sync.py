"""Issue 35, case 1: a JSON Lines object with one malformed line lands its decimals and
big integers exactly, read back from Delta with plain Spark.

One broken line sends the whole block line by line, where numbers were parsed as
floats: ``12345678901234567890.123456789012345678`` landed as
``12345678901234567000.000000000000000000`` with no note, and the valid extreme
``-99999999999999999999.999999999999999999`` was rejected, noted as ``-1e+20``.
The lines that fit, alone in an object (the bulk path), must land the same rows.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine
from headwater.metadata_store import MetadataStore
from tests.integration._cli import HOME, LAKEHOUSE
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SCHEMA = {"id": {"type": "integer"},
          "d": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
          "i": {"type": "integer"}}
LINES = [
    '{"id":1,"d":12345678901234567890.123456789012345678,"i":9007199254740993}',
    '{"id":2,"d":-99999999999999999999.999999999999999999,"i":-9223372036854775808}',
    '{"id":3,"d":99999999999999999999.999999999999999999,"i":9223372036854775807}',
    '{"id":4,"d":123456789012345678901,"i":9223372036854775808}',
    '{"id":5,"d":0.0000000000000000001,"i":9007199254740993.0}',
]
#: What lands for each id: (d, i, the notes' (field, value)).
EXPECTED = {
    1: (Decimal("12345678901234567890.123456789012345678"), 9007199254740993, []),
    2: (Decimal("-99999999999999999999.999999999999999999"), -(2**63), []),
    3: (Decimal("99999999999999999999.999999999999999999"), 2**63 - 1, []),
    4: (None, None, [("d", "123456789012345678901"), ("i", "9223372036854775808")]),
    5: (None, 9007199254740993, [("d", "0.0000000000000000001")]),
}


def test_a_malformed_line_does_not_round_the_object_s_numbers(spark: Any,
                                                              tmp_path: Path) -> None:
    """One sync of two objects: the lines that fit (read in bulk), and all of them with
    a broken one among them (read line by line)."""
    folder = tmp_path / "landing"
    folder.mkdir()
    (folder / "a-whole.jsonl").write_text("".join(line + "\n" for line in LINES[:3]))
    (folder / "b-broken.jsonl").write_text("".join(
        line + "\n" for line in [*LINES[:2], '{"id": 6, "d": 1.5', *LINES[2:]]))
    path = connection_file(
        tmp_path, name="numbers", source_type="object_storage",
        source={"url": str(folder), "streams": [
            {"name": "numbers", "globs": ["*.jsonl"], "format": {"type": "jsonl"},
             "schema": SCHEMA}]},
        streams=[{"name": "numbers", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"}],
        lake=str(tmp_path / LAKEHOUSE), store_file=f"{HOME}/headwater.db")
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()

    table = spark.read.format("delta").load(str(tmp_path / LAKEHOUSE / "numbers"))
    assert dict(table.dtypes)["d"] == "decimal(38,18)"
    landed: dict[str, dict[int | None, Any]] = {"a-whole.jsonl": {}, "b-broken.jsonl": {}}
    for row in table.collect():
        landed[row["_source_key"].rsplit("/", 1)[-1]][row["id"]] = (
            row["d"], row["i"], sorted((n["field"], n["value"]) for n in row["_hw_notes"] or []))
    assert landed["a-whole.jsonl"] == {i: EXPECTED[i] for i in (1, 2, 3)}
    assert landed["b-broken.jsonl"].pop(None) == (None, None, [("", '{"id": 6, "d": 1.5')])
    assert landed["b-broken.jsonl"] == EXPECTED
