"""Capturing a run's log lines: only that run's (its threads and the pools it submits to),
masked, flushed to the store when the run ends."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from headwater.config import register_secrets
from headwater.engine._run_logs import capture_run_logs, name_run_logs, submit_in_run
from headwater.metadata_store import MetadataStore

log = logging.getLogger("headwater.test_run_logs")


def test_a_run_keeps_its_own_lines_masked_and_no_other_threads(tmp_path: Path) -> None:
    store = MetadataStore(MetadataStore.default_url(tmp_path))
    run_id = store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                              config_redacted={})
    register_secrets(["s3cr3t-token-value"])
    log.setLevel(logging.INFO)
    other_may_log = threading.Event()
    other_logged = threading.Event()

    def another_run() -> None:  # a thread of this process not running the run
        other_may_log.wait()
        log.warning("not this run's line")
        other_logged.set()

    other = threading.Thread(target=another_run)
    other.start()
    with capture_run_logs(store, every_s=0.05):
        log.info("planning, before the run has an id")
        name_run_logs(run_id)
        log.info("reading with token %s", "s3cr3t-token-value")
        with ThreadPoolExecutor(max_workers=2) as pool:
            submit_in_run(pool, log.warning, "from a lane thread").result()
            pool.submit(log.warning, "from a pool thread not carrying the run").result()
        other_may_log.set()
        other_logged.wait()
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("it failed")
    other.join()
    lines, omitted = store.run_logs(run_id)
    assert [(line.level, line.message.splitlines()[0]) for line in lines] == [
        ("INFO", "planning, before the run has an id"),
        ("INFO", "reading with token **********"),
        ("WARNING", "from a lane thread"),
        ("ERROR", "it failed"),
    ]
    assert "ValueError: boom" in lines[-1].message
    assert lines[0].logger == "headwater.test_run_logs" and omitted == 0
    assert not any(isinstance(h, logging.Handler) and type(h).__name__ == "RunLogCapture"
                   for h in logging.getLogger().handlers)


def test_a_resumed_attempt_adds_its_lines_after_the_earlier_attempts(tmp_path: Path) -> None:
    """A stopped or killed run resumed by a later sync: the new capture numbers its lines
    after those stored, rather than from 1 again (which the store refused: lost lines)."""
    store = MetadataStore(MetadataStore.default_url(tmp_path))
    run_id = store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                              config_redacted={})
    log.setLevel(logging.INFO)
    with capture_run_logs(store, every_s=60):
        name_run_logs(run_id)
        log.info("attempt 1: checkpoint 1 committed")
        log.warning("attempt 1: stopped")
    with capture_run_logs(store, every_s=60):
        log.info("attempt 2: planning, before the run is named")
        name_run_logs(run_id)
        log.info("attempt 2: checkpoint 2 committed")
    lines, omitted = store.run_logs(run_id)
    assert [(line.seq, line.message) for line in lines] == [
        (1, "attempt 1: checkpoint 1 committed"), (2, "attempt 1: stopped"),
        (3, "attempt 2: planning, before the run is named"),
        (4, "attempt 2: checkpoint 2 committed")]
    assert omitted == 0


def test_a_run_keeps_its_info_lines_when_the_console_shows_warnings_only(
        tmp_path: Path) -> None:
    """Defect 3 of issue 39: ``headwater sync`` without ``-v`` (root logger at WARNING) kept
    no per-checkpoint INFO line, so a CLI run's page showed none; nor may its console start
    printing them."""
    from headwater.cli._common import setup_logging

    store = MetadataStore(MetadataStore.default_url(tmp_path))
    run_id = store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                              config_redacted={})
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    engine_log = logging.getLogger("headwater.engine._stream_runner")
    # The package's level as a process that never logged has it: earlier tests of this
    # process (a page's sync, a caplog) may have left their own.
    package = logging.getLogger("headwater")
    package_level = package.level
    package.setLevel(logging.NOTSET)
    printed: list[str] = []
    try:
        setup_logging(0, as_json=False)  # what `headwater sync` does without -v
        assert not engine_log.isEnabledFor(logging.INFO)
        [console] = root.handlers
        console.emit = lambda record: printed.append(record.getMessage())  # type: ignore[method-assign]
        with capture_run_logs(store, run_id, every_s=60):
            engine_log.info("stream users checkpoint 1: 10 rows in 0.1s")
            engine_log.error("stream users checkpoint 2 failed: boom")
        assert package.level == logging.NOTSET  # its level is back
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        package.setLevel(package_level)
    lines, _ = store.run_logs(run_id)
    assert [(line.level, line.message) for line in lines] == [
        ("INFO", "stream users checkpoint 1: 10 rows in 0.1s"),
        ("ERROR", "stream users checkpoint 2 failed: boom")]
    assert printed == ["stream users checkpoint 2 failed: boom"]
