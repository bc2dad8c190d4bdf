"""One connection that meets every kind of schema change under every contract setting,
for any destination: a stream per setting, so three syncs cover the whole matrix.

The source is the object storage source over local JSON Lines (one folder per stream):

1. the baseline: every ``s_*`` and ``f_*`` stream lands ``{id, score: integer}``;
2. the change: each gets rows whose ``score`` is text now and that carry a new ``tier``
   column (both declared in the stream's schema), and ``n_*`` streams appear (new tables);
   the ``f_*`` streams freeze one kind each: the sync fails at plan time with exit
   code 5, naming every frozen change, and nothing moves;
3. the same without the frozen streams: each setting lands what it says;
4. a field only records carry (outside the sampled schema) under ``new_columns:
   freeze``: the task fails before its checkpoint commits.

Fields only records carry under the other settings are the unit tests'
(``tests/unit/schema_contracts/test_row_contract.py``, the tasks' own path).

A destination's test supplies :class:`Lake` (how its tables read back) and the
``destination`` section; :func:`run_matrix` runs the syncs and checks them all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process, sync_in_process

#: Rows of the change: a text score (a type change) and a new column, or neither.
CHANGED = [{"id": 4, "score": "x4", "tier": "gold"}, {"id": 5, "score": None, "tier": "silver"},
           {"id": 6, "score": None, "tier": None}]
BASELINE = [{"id": i, "score": i} for i in range(4)]
#: A record with a field the schema, sampled from the first objects, lacks.
RECORD_ONLY = {"id": 8, "score": None, "surprise": {"b": "x"}}
#: How many objects the object storage source samples a schema from.
SAMPLED_OBJECTS = 10

#: Stream -> its contract: one per setting (the whole matrix).
EXISTING = {"s_evolve": "evolve", "s_discard_row": "discard_row",
            "s_discard_value": "discard_value", "s_rescue": {"new_columns": "rescue"}}
#: New tables: a stream each, but only ``n_evolve`` is read (the others are kept out).
NEW = {"n_evolve": "evolve", "n_discard_row": "discard_row",
       "n_discard_value": "discard_value"}
#: The sync that fails at plan time: two existing streams freezing one kind each (the
#: first two of the streams synced), and a new one.
FROZEN = ({"new_columns": "freeze"}, {"type_changes": "freeze"})
#: A subset that still covers every setting, for the destinations after Delta: one
#: stream discards both kinds' rows; one rescues new columns and discards changed
#: types' values; the frozen sync and the new tables kept out are as in the matrix.
SUBSET = {"s_evolve": "evolve", "s_discard_row": "discard_row",
          "s_rescue": {"new_columns": "rescue", "type_changes": "discard_value"}}


@dataclass(frozen=True)
class Lake:
    """How a destination's tables read back, from outside the sync."""

    #: The stream's rows as dicts (None: no table).
    rows: Callable[[str], list[dict[str, Any]] | None]
    #: Something that changes with every commit to the stream's table (its version).
    commits: Callable[[str], Any]
    #: The destination section of the connection file.
    destination: Mapping[str, Any]


def _write(folder: Path, stream: str, name: str, rows: list[dict[str, Any]]) -> None:
    (folder / stream).mkdir(parents=True, exist_ok=True)
    (folder / stream / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _connection(tmp_path: Path, lake: Lake, contracts: Mapping[str, Any], *,
                changed: bool) -> Path:
    folder = tmp_path / "landing"
    changed_schema = {"score": {"type": ["null", "string"]},
                      "tier": {"type": ["null", "string"]}}
    source_streams = [
        {"name": name, "globs": [f"{name}/*.jsonl"], "format": {"type": "jsonl"},
         **({"schema": changed_schema} if changed else {})}
        for name in contracts]
    streams = [{"name": name, "sync_mode": "incremental", "destination_sync_mode": "append",
                "schema_contract": contract} for name, contract in contracts.items()]
    return connection_file(tmp_path, name="contracts", source_type="object_storage",
                           source={"url": str(folder), "streams": source_streams},
                           streams=streams, destination=dict(lake.destination),
                           checkpoint={"partitions_per_checkpoint": 1,
                                       "concurrent_checkpoints": 1})


def _store(tmp_path: Path) -> MetadataStore:
    return MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")


def _states(tmp_path: Path) -> dict[str, Any]:
    return _store(tmp_path).get_states("contracts")


def _by_id(rows: list[dict[str, Any]] | None) -> dict[int, dict[str, Any]]:
    assert rows is not None
    return {int(r["id"]): r for r in rows}


def _reasons(row: dict[str, Any]) -> list[tuple[str, str]]:
    notes = row.get("_hw_notes") or []
    if isinstance(notes, str):  # PostgreSQL's jsonb, read as text
        notes = json.loads(notes)
    return sorted((n["field"], n["reason"]) for n in notes)


def run_matrix(tmp_path: Path, lake: Lake, existing: Mapping[str, Any] = EXISTING, *,
               record_level: bool = True) -> None:
    """The syncs of the module docstring, each checked: every stream of ``existing``
    (:data:`EXISTING`, or :data:`SUBSET`), and the record-level freeze (sync 4) when
    ``record_level``."""
    folder = tmp_path / "landing"
    for name in existing:
        _write(folder, name, "a.jsonl", BASELINE)
    first = sync_in_process(tmp_path, _connection(tmp_path, lake, existing, changed=False))
    assert first.exit_code == 0, first.describe()

    # 2. Every kind frozen somewhere: nothing of the sync commits, no state moves.
    for name in existing:
        _write(folder, name, "b.jsonl", CHANGED)
    for name in [*NEW, "n_freeze"]:
        _write(folder, name, "a.jsonl", CHANGED)
    commits = {name: lake.commits(name) for name in existing}
    states = _states(tmp_path)
    columns, types = list(existing)[:2]
    path = _connection(tmp_path, lake, {**existing, **NEW, columns: FROZEN[0],
                                        types: FROZEN[1], "n_freeze": {"new_tables": "freeze"}},
                       changed=True)
    _check_plan(tmp_path, path, columns, types)
    frozen = sync_in_process(tmp_path, path)
    assert frozen.exit_code == 5, frozen.describe()
    said = frozen.stderr + frozen.stdout
    for change in (f"stream {columns}: new column tier (string), not in the table",
                   f"stream {types}: column score changed type: the stream's string, "
                   "the table's long", "stream n_freeze: new table"):
        assert change in said, said
    assert {name: lake.commits(name) for name in existing} == commits
    assert _states(tmp_path) == states
    assert all(lake.rows(name) is None for name in [*NEW, "n_freeze"])
    if existing is EXISTING:  # a replay of the first run holds to the same contracts,
        # at plan time as the sync: refused before it reads, nothing recorded
        assert first.document is not None
        runs = len(_store(tmp_path).list_runs("contracts", limit=100))
        replay = run_in_process(tmp_path, "replay", first.document["run_id"], "-c", str(path),
                                "--stream", types, "--json")
        assert replay.exit_code == 5, replay.describe()
        assert f"stream {types}: column score changed type" in replay.stderr + replay.stdout
        assert {name: lake.commits(name) for name in existing} == commits
        assert len(_store(tmp_path).list_runs("contracts", limit=100)) == runs

    # 3. Without the frozen streams: each setting does what it says.
    new = NEW if existing is EXISTING else {k: NEW[k] for k in ("n_discard_row",)}
    result = sync_in_process(tmp_path, _connection(tmp_path, lake, {**existing, **new},
                                                   changed=True))
    assert result.exit_code in (0, 4), result.describe()  # warned: rows noted
    assert result.document is not None
    summary = {s["name"]: s for s in result.document["streams"]}
    _check_settings(lake, summary, existing)
    if not record_level:
        return

    # 4. A field only records carry (in an object past the ten the schema is sampled
    # from), frozen: the task fails, the checkpoint never commits, no state moves.
    for number in range(SAMPLED_OBJECTS):
        _write(folder, "s_evolve", f"c{number:02d}.jsonl", [{"id": 10 + number}])
    _write(folder, "s_evolve", "d.jsonl", [RECORD_ONLY])
    commits = lake.commits("s_evolve")
    states = _states(tmp_path)
    broken = sync_in_process(tmp_path, _connection(
        tmp_path, lake, {"s_evolve": {"new_columns": "freeze"}}, changed=True))
    assert broken.exit_code == 5, broken.describe()
    assert "stream s_evolve: new column surprise (object), not in the table" in \
        broken.stderr + broken.stdout, broken.describe()
    assert lake.commits("s_evolve") == commits
    assert _states(tmp_path) == states


def _check_plan(tmp_path: Path, path: Path, columns: str, types: str) -> None:
    """``headwater plan --json`` shows the changes the sync will meet, and each action."""
    plan = run_in_process(tmp_path, "plan", str(path), "--json")
    assert plan.exit_code == 0, plan.describe()
    assert plan.document is not None
    changes = {s["name"]: s["schema_changes"] for s in plan.document["streams"]}
    tier = {"kind": "new_column", "column": "tier", "stream_type": "string",
            "table_type": None}
    score = {"kind": "type_change", "column": "score", "stream_type": "string",
             "table_type": "long"}
    assert changes[columns] == [{**tier, "action": "freeze"}, {**score, "action": "evolve"}]
    # A stream's contract is whole: what it does not freeze evolves.
    assert changes[types] == [{**tier, "action": "evolve"}, {**score, "action": "freeze"}]
    new_table = {"kind": "new_table", "column": None, "stream_type": None, "table_type": None}
    assert changes["n_freeze"] == [{**new_table, "action": "freeze"}]
    assert changes["n_discard_row"] == [{**new_table, "action": "discard_row"}]
    shown = run_in_process(tmp_path, "plan", str(path))
    assert f"{columns}: new column tier (string): schema_contract freeze, the sync fails " \
        "before it commits anything" in shown.stdout, shown.describe()


def _check_settings(lake: Lake, summary: dict[str, Any], existing: Mapping[str, Any]) -> None:
    type_reason = ("column score changed type (the stream's string, the table's long): {} "
                   "by schema_contract type_changes: {}")
    column_reason = "new column tier, not in the table: {} by schema_contract new_columns: {}"

    if "s_evolve" in existing:  # today's behaviour: the column is added, the misfit noted
        rows = _by_id(lake.rows("s_evolve"))
        assert sorted(rows) == [0, 1, 2, 3, 4, 5, 6]
        assert [rows[i]["tier"] for i in (4, 5, 6)] == ["gold", "silver", None]
        assert rows[4]["score"] is None and rows[3]["score"] == 3
        assert [f for f, _ in _reasons(rows[4])] == ["score"]

    # discard_row: rows holding a new column's or a changed type's value are kept out.
    rows = _by_id(lake.rows("s_discard_row"))
    assert sorted(rows) == [0, 1, 2, 3, 6]
    assert "tier" not in rows[6] and rows[3]["score"] == 3
    assert summary["s_discard_row"]["records_discarded"] == 2
    assert summary["s_discard_row"]["discarded"] == {
        type_reason.format("row kept out", "discard_row"): 1,
        column_reason.format("row kept out", "discard_row"): 1}

    if "s_discard_value" in existing:  # the values are nulled, each noted with its reason
        rows = _by_id(lake.rows("s_discard_value"))
        assert sorted(rows) == [0, 1, 2, 3, 4, 5, 6] and "tier" not in rows[4]
        assert rows[4]["score"] is None
        assert _reasons(rows[4]) == sorted([
            ("score", type_reason.format("value discarded", "discard_value")),
            ("tier", column_reason.format("value discarded", "discard_value"))])
        assert _reasons(rows[5]) == [("tier", column_reason.format("value discarded",
                                                                   "discard_value"))]
        assert summary["s_discard_value"]["records_rejected"] == 2

    # rescue: the new column's values as JSON in _hw_rescued.
    rows = _by_id(lake.rows("s_rescue"))
    assert "tier" not in rows[4] and rows[4]["score"] is None and rows[3]["score"] == 3
    assert [rows[i]["_hw_rescued"] for i in (3, 4, 5, 6)] == [
        None, '{"tier": "gold"}', '{"tier": "silver"}', None]
    if existing["s_rescue"].get("type_changes") == "discard_value":
        assert _reasons(rows[4]) == [("score", type_reason.format("value discarded",
                                                                  "discard_value"))]

    # New tables: evolve creates it; discard_row / discard_value keep the stream out.
    if "s_discard_value" in existing:
        assert sorted(_by_id(lake.rows("n_evolve"))) == [4, 5, 6]
        assert lake.rows("n_discard_value") is None
    assert lake.rows("n_discard_row") is None and "n_discard_row" not in summary
