"""The connection lock: one sync per connection, across threads, processes and hosts."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import headwater.metadata_store
from headwater.errors import ConnectionLockedError
from headwater.metadata_store import LockHolder, MetadataStore
from headwater.metadata_store._lock import stale_reason, this_host

REPO_ROOT = Path(headwater.metadata_store.__file__).resolve().parents[2]

HOLD_LOCK = """
import sys, time
from headwater.metadata_store import MetadataStore
store = MetadataStore(sys.argv[1])
with store.lock("orders_to_lake", run_id="run-in-child"):
    time.sleep(120)
"""


@pytest.fixture
def child_holding_lock(store: MetadataStore, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    stderr = (tmp_path / "child.err").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, MetadataStore.default_url(tmp_path)],
        env=env,
        stderr=stderr,
    )
    try:
        deadline = time.monotonic() + 30
        while store.lock_holder("orders_to_lake") is None:
            assert proc.poll() is None, (tmp_path / "child.err").read_text()
            assert time.monotonic() < deadline, "the child never took the lock"
            time.sleep(0.05)
        yield proc
    finally:
        proc.kill()
        proc.wait()
        stderr.close()


def test_second_acquire_in_the_same_process_is_refused(store: MetadataStore) -> None:
    with store.lock("orders_to_lake", run_id="run-1"):
        with pytest.raises(ConnectionLockedError) as info, store.lock("orders_to_lake"):
            pass
        message = str(info.value)
        assert f"pid {os.getpid()} on host {this_host()}" in message
        assert "connection 'orders_to_lake' is already being synced" in message
        assert "(run run-1)" in message
        assert "wait for it to finish, or stop that process" in message
        # Another connection is independent.
        with store.lock("other"):
            pass
    assert store.lock_holder("orders_to_lake") is None


def test_lock_is_released_when_the_block_raises(store: MetadataStore) -> None:
    with pytest.raises(RuntimeError), store.lock("c"):
        raise RuntimeError("sync failed")
    assert store.lock_holder("c") is None
    with store.lock("c"):
        pass


def test_set_run_id_is_shown_to_others(store: MetadataStore) -> None:
    with store.lock("c") as handle:
        assert handle.run_id is None
        handle.set_run_id("run-42")
        holder = store.lock_holder("c")
        assert holder is not None and holder.run_id == "run-42"
        assert holder.pid == os.getpid() and holder.host == this_host()
        assert holder.started_at.tzinfo is not None


def test_lock_of_a_live_process_blocks_and_is_taken_over_once_it_is_killed(
    store: MetadataStore,
    child_holding_lock: subprocess.Popen[bytes],
    caplog: pytest.LogCaptureFixture,
) -> None:
    child = child_holding_lock
    with pytest.raises(ConnectionLockedError) as info, store.lock("orders_to_lake"):
        pass
    assert f"pid {child.pid} on host {this_host()}" in str(info.value)
    assert "(run run-in-child)" in str(info.value)

    child.send_signal(signal.SIGKILL)
    child.wait()
    caplog.set_level(logging.WARNING, logger="headwater.metadata_store")
    with store.lock("orders_to_lake") as handle:
        holder = store.lock_holder("orders_to_lake")
        assert holder is not None and holder.pid == os.getpid()
        assert not handle.lost
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"pid {child.pid}" in warning.getMessage()
    assert "no longer running" in warning.getMessage()
    assert store.lock_holder("orders_to_lake") is None


def test_lock_with_an_old_heartbeat_is_taken_over(
    store: MetadataStore, caplog: pytest.LogCaptureFixture
) -> None:
    with store.lock("c", run_id="old") as first:
        time.sleep(0.3)  # the default heartbeat (30 s) will not beat in this time
        caplog.set_level(logging.WARNING, logger="headwater.metadata_store")
        with store.lock("c", run_id="new", stale_after_s=0.1):
            assert "last heartbeat was" in caplog.text
            holder = store.lock_holder("c")
            assert holder is not None and holder.run_id == "new"
            with pytest.raises(ConnectionLockedError, match="taken over"):
                first.ensure_held()
            assert first.lost
        # The first holder's release must not remove the second one's lock.
    assert store.lock_holder("c") is None


def test_heartbeat_keeps_a_held_lock_fresh(store: MetadataStore) -> None:
    with store.lock("c", stale_after_s=0.6) as handle:
        time.sleep(1.0)  # heartbeats every 0.2 s
        holder = store.lock_holder("c")
        assert holder is not None and holder.heartbeat_at > holder.started_at
        with pytest.raises(ConnectionLockedError), store.lock("c", stale_after_s=0.6):
            pass
        handle.ensure_held()
        assert not handle.lost


def _holder(*, host: str, pid: int, heartbeat_age_s: float) -> LockHolder:
    now = datetime.now(UTC)
    return LockHolder(
        connection="c",
        pid=pid,
        host=host,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(seconds=heartbeat_age_s),
        run_id=None,
    )


def test_stale_reason_trusts_pids_only_on_this_host() -> None:
    now = datetime.now(UTC)
    here = this_host()
    dead_pid = 2**22 + 12345  # above the default pid_max
    live = _holder(host=here, pid=os.getpid(), heartbeat_age_s=5)
    assert stale_reason(live, now=now, stale_after_s=600, host=here) is None
    dead_here = _holder(host=here, pid=dead_pid, heartbeat_age_s=5)
    assert "no longer running" in (
        stale_reason(dead_here, now=now, stale_after_s=600, host=here) or ""
    )
    elsewhere = _holder(host=here + "-other", pid=dead_pid, heartbeat_age_s=5)
    assert stale_reason(elsewhere, now=now, stale_after_s=600, host=here) is None
    silent = _holder(host=here + "-other", pid=dead_pid, heartbeat_age_s=700)
    assert "heartbeat" in (stale_reason(silent, now=now, stale_after_s=600, host=here) or "")
