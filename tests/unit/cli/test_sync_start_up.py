"""``headwater sync`` starts a source's early reads first, before what they never use.

The command runs in a process of its own (its imports are what is checked),
with a listener that looks at the process the moment the reads start and then
ends it: no call is awaited and no Spark starts.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from headwater.cli._start_up import full_collections_after

#: Modules the early reads do not need, which the command imports only after they start.
NOT_YET = ("pyspark", "headwater.engine._sync", "headwater.destinations.delta",
           "sqlalchemy.dialects.postgresql",
           "headwater.cli._render")

PROBE = textwrap.dedent("""
    import gc, json, os, sys
    from headwater import _events

    def started(moment):
        if moment == "early-reads-started":
            print(json.dumps({"imported": [m for m in sys.argv[2:] if m in sys.modules],
                              "threshold": gc.get_threshold(),
                              "frozen": gc.get_freeze_count()}), flush=True)
            os._exit(0)

    _events.listen(started)
    from headwater.cli.app import main
    main(["sync", sys.argv[1], "--json"])
""")


def connection(tmp_path: Path) -> Path:
    """A parent and a substream on an API that is never called (the probe ends first)."""
    path = tmp_path / "surveys.yaml"
    path.write_text(yaml.safe_dump({
        "name": "surveys",
        "source": {"type": "rest", "config": {
            "base_url": "http://127.0.0.1:9",
            "streams": [
                {"name": "surveys", "path": "/v3/surveys", "record_selector": "data",
                 "primary_key": ["id"], "cursor_field": "date_modified",
                 "cursor_format": "epoch", "start_date": "2024-01-01T00:00:00Z",
                 "end_date": "2024-03-01T00:00:00Z", "window_size_seconds": 2_592_000,
                 "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
                {"name": "responses", "path": "/v3/surveys/{parent.id}/responses",
                 "record_selector": "data", "primary_key": ["id"],
                 "parent": {"stream": "surveys"},
                 "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            ]}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "streams": [{"name": "surveys", "sync_mode": "incremental"}, {"name": "responses"}],
        "metadata_store": f"sqlite:///{tmp_path / 'store.db'}",
    }))
    return path


def test_the_reads_start_before_the_engine_the_output_the_destination_and_spark_load(
        tmp_path: Path) -> None:
    env = {**os.environ, "HEADWATER_HOME": str(tmp_path / "home")}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(connection(tmp_path)), *NOT_YET],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["imported"] == []
    # And no full collection while they run beside the start-up.
    assert seen["threshold"][2] >= 1 << 30
    assert seen["frozen"] > 0


@pytest.mark.parametrize("fails", [False, True])
def test_full_collections_wait_for_the_start_up_then_its_objects_are_frozen(
        fails: bool) -> None:
    found, frozen = gc.get_threshold(), gc.get_freeze_count()
    made: list[object] = []
    try:
        with full_collections_after():
            assert gc.get_threshold()[:2] == found[:2]  # young objects as usual
            assert gc.get_threshold()[2] >= 1 << 30
            made.append([object() for _ in range(100)])
            if fails:
                raise RuntimeError("the start-up failed")
    except RuntimeError:
        assert fails
    finally:
        unfrozen = gc.get_freeze_count()
        gc.unfreeze()  # the test process goes on: its objects are collectable again
    assert gc.get_threshold() == found
    assert unfrozen >= frozen + 100
