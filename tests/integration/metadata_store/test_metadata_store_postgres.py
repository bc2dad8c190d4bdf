"""The metadata store's behaviour on a real PostgreSQL server (the team set-up).

The unit tests run against SQLite; the test functions imported below run
again here, against PostgreSQL: pytest resolves fixtures where a test is
collected, so this module's ``store_url`` (a fresh database) replaces theirs, and
``store`` (``tests/_stores.py``, theirs too) opens it.
The cases that need two stores or two processes on one server follow.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from headwater.errors import ConnectionLockedError, MetadataStoreError
from headwater.metadata_store import MetadataStore
from tests import _stores
from tests._postgres import PostgresServer

# Imported to be collected again, on PostgreSQL (see the module docstring).
from tests.unit.metadata_store.test_metadata_store_figures import (  # noqa: F401
    clock,
    test_a_connection_whose_only_run_is_running_has_no_last_run,
    test_a_stopped_then_resumed_run_enters_the_durations_once_finished,
    test_figures_of_an_empty_store_are_empty,
    test_run_counts_durations_and_last_runs,
    test_states_are_the_current_ones,
    test_stream_totals_stay_right_as_runs_finish_between_calls,
    test_stream_totals_sum_durable_checkpoints_once_each,
)
from tests.unit.metadata_store.test_metadata_store_figures_incremental import (  # noqa: F401
    BUCKETS,
    exact,
    from_scratch,
    test_a_schema_2_store_is_numbered_when_opened_and_counts_the_same,
    test_a_stopped_run_resumed_by_another_process_counts_once_it_finishes,
    test_each_call_equals_the_figures_from_scratch_as_the_history_grows,
)
from tests.unit.metadata_store.test_metadata_store_live import (  # noqa: F401
    test_live_figures_are_replaced_whole_and_count_only_while_their_run_runs,
)
from tests.unit.metadata_store.test_metadata_store_lock import (  # noqa: F401
    HOLD_LOCK,
    REPO_ROOT,
    test_heartbeat_keeps_a_held_lock_fresh,
    test_lock_is_released_when_the_block_raises,
    test_lock_with_an_old_heartbeat_is_taken_over,
    test_second_acquire_in_the_same_process_is_refused,
    test_set_run_id_is_shown_to_others,
)
from tests.unit.metadata_store.test_metadata_store_runs import (  # noqa: F401
    test_a_finished_run_cannot_change,
    test_a_stopped_run_stays_unfinished_and_is_resumed_as_running,
    test_list_runs_newest_first_by_connection_and_limit,
    test_plan_that_is_not_json_is_refused,
    test_release_checkpoint_moves_state_and_marks_it_released_together,
    test_run_lifecycle_with_attempts_and_checkpoints,
    test_unfinished_run_is_found_and_resumed_with_a_new_attempt,
    test_unknown_runs_attempts_and_statuses_are_refused,
)
from tests.unit.metadata_store.test_metadata_store_state import (  # noqa: F401
    test_checkpoint_indices_are_contiguous_blocks_that_survive_a_reset,
    test_checkpoint_indices_never_overlap_across_threads_and_stores,
    test_non_json_state_is_refused_and_nothing_is_written,
    test_reset_state_of_some_or_all_streams,
    test_save_state_upserts_and_keeps_history,
    test_state_never_moves_back_to_a_lower_checkpoint,
)


@pytest.fixture
def store_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A plain ``postgresql://`` URL, as a user writes it in a connection file."""
    with postgres_server.database() as name:
        yield postgres_server.database_url(name)


#: The unit tests' ``store`` fixture, opening this module's ``store_url``.
store = _stores.store


def test_the_store_is_on_postgres_and_hides_the_password(store: MetadataStore) -> None:
    assert store.url.startswith("postgresql+psycopg://headwater:***@127.0.0.1")
    assert MetadataStore(store.url.replace("***", "headwater")).store_id == store.store_id


def test_a_wrong_password_is_a_metadata_store_error_without_it(
        postgres_server: PostgresServer) -> None:
    url = postgres_server.database_url("headwater", password="not-the-password")
    with pytest.raises(MetadataStoreError) as info:
        MetadataStore(url).get_state("c", "s")
    assert "not-the-password" not in str(info.value)


def test_lock_of_a_killed_process_is_taken_over(store: MetadataStore, store_url: str) -> None:
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, store_url], env=env)
    try:
        deadline = time.monotonic() + 60
        while store.lock_holder("orders_to_lake") is None:
            assert child.poll() is None, "the child died before taking the lock"
            assert time.monotonic() < deadline, "the child never took the lock"
            time.sleep(0.05)
        with pytest.raises(ConnectionLockedError, match=f"pid {child.pid}"), \
                store.lock("orders_to_lake"):
            pass
        child.send_signal(signal.SIGKILL)
        child.wait()
        with store.lock("orders_to_lake"):
            holder = store.lock_holder("orders_to_lake")
            assert holder is not None and holder.pid == os.getpid()
    finally:
        child.kill()
        child.wait()


def test_runs_finished_at_once_by_several_processes_are_each_counted_once(
        store: MetadataStore, store_url: str) -> None:
    """``finished_seq`` follows the commits: writers finishing runs at the same time,
    each on its own connection, while the serving store reads its figures over and
    over, leave it with the figures a new process computes from scratch."""
    writers = [MetadataStore(store_url) for _ in range(3)]
    runs = [[w.create_run(f"c{n}", plan={}, state_before={}, config_redacted={})
             for _ in range(12)] for n, w in enumerate(writers)]
    for writer, run_ids in zip(writers, runs, strict=True):
        for run_id in run_ids:
            writer.start_attempt(run_id, pid=1, host="h")
            writer.record_checkpoint(run_id, "s", 1, "cp", status="committed",
                                     stats={"records_written": 1})
    go = threading.Barrier(len(writers) + 1)

    def finish(writer: MetadataStore, run_ids: list[str]) -> None:
        go.wait()
        for run_id in run_ids:
            writer.finish_run(run_id, status="succeeded", stats={}, state_after={},
                              error=None)

    threads = [threading.Thread(target=finish, args=pair) for pair in zip(writers, runs,
                                                                        strict=True)]
    try:
        for thread in threads:
            thread.start()
        go.wait()
        while any(thread.is_alive() for thread in threads):
            store.figures(BUCKETS)
        for thread in threads:
            thread.join()
        figures = store.figures(BUCKETS)
        assert exact(figures) == exact(from_scratch(store))
        assert sum(c.count for c in figures.run_counts if c.status == "succeeded") == 36
        assert sum(t.records_written for t in figures.stream_totals) == 36
        with store._db.engine.connect() as db:
            numbers = db.exec_driver_sql("SELECT finished_seq FROM runs").scalars().all()
        assert sorted(numbers) == list(range(1, 37))
    finally:
        for writer in writers:
            writer.close()
