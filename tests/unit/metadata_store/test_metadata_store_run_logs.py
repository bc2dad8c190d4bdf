"""A run's log lines in the store: bounded per run, read back in order; schema 1 stores
gain the table when opened."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from headwater.metadata_store import SCHEMA_VERSION, MetadataStore, RunLogLine


def _line(seq: int) -> RunLogLine:
    return RunLogLine(seq=seq, at=datetime(2026, 11, 20, 14, 0, seq % 60, tzinfo=UTC),
                      level="INFO", logger="headwater.engine", message=f"line {seq}")


def _run(store: MetadataStore) -> str:
    return store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                            config_redacted={})


def test_lines_read_back_after_a_sequence_number(tmp_path: Path) -> None:
    store = MetadataStore(MetadataStore.default_url(tmp_path))
    run_id = _run(store)
    store.append_run_logs(run_id, [_line(1), _line(2), _line(3)], keep_first=10, keep_last=10)
    lines, omitted = store.run_logs(run_id)
    assert [(line.seq, line.message) for line in lines] == [(1, "line 1"), (2, "line 2"),
                                                             (3, "line 3")]
    assert lines[0].at == datetime(2026, 11, 20, 14, 0, 1, tzinfo=UTC)
    assert omitted == 0
    assert [line.seq for line in store.run_logs(run_id, after=2)[0]] == [3]
    assert store.run_logs(_run(store)) == ([], 0)


def test_a_chatty_run_keeps_its_first_and_last_lines_and_counts_the_rest(tmp_path: Path) -> None:
    store = MetadataStore(MetadataStore.default_url(tmp_path))
    run_id = _run(store)
    for first in range(1, 101, 10):  # 100 lines in batches, as the capture flushes them
        store.append_run_logs(run_id, [_line(s) for s in range(first, first + 10)],
                              keep_first=5, keep_last=7)
    lines, omitted = store.run_logs(run_id)
    assert [line.seq for line in lines] == [1, 2, 3, 4, 5, *range(94, 101)]
    assert omitted == 88


def test_a_schema_1_store_gains_run_logs_when_opened(tmp_path: Path) -> None:
    url = MetadataStore.default_url(tmp_path)
    MetadataStore(url).close()
    path = tmp_path / ".headwater" / "headwater.db"
    with sqlite3.connect(path) as db:  # as Headwater before run_logs left it
        db.execute("DROP TABLE run_logs")
        db.execute("DROP INDEX ix_runs_finished_seq")  # and before finished_seq (version 3)
        db.execute("ALTER TABLE runs DROP COLUMN finished_seq")
        db.execute("DELETE FROM meta WHERE key = 'finished_seq'")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store = MetadataStore(url)
    run_id = _run(store)
    store.append_run_logs(run_id, [_line(1)], keep_first=1, keep_last=1)
    assert [line.seq for line in store.run_logs(run_id)[0]] == [1]
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)
