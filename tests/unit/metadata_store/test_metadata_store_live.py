"""A running run's live figures (``run_progress``): replaced whole, read back in order,
summed per connection and stream for ``/metrics`` only while the run is running."""

from __future__ import annotations

from datetime import UTC, datetime

from headwater.metadata_store import LiveFigure, MetadataStore

BUCKETS = (1.0, 60.0)


def test_live_figures_are_replaced_whole_and_count_only_while_their_run_runs(
        store: MetadataStore) -> None:
    run_id = store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                              config_redacted={})
    at = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    store.set_live_figures(run_id, [LiveFigure("users", 2, "p-b", 7, at),
                                    LiveFigure("users", 2, "p-a", 5, at),
                                    LiveFigure("orders", 1, "p-c", 11, at)])
    assert [(f.stream, f.partition_id, f.records) for f in store.live_figures(run_id)] == [
        ("orders", "p-c", 11), ("users", "p-a", 5), ("users", "p-b", 7)]
    reading = {(r.stream, r.records, r.partitions) for r in store.figures(BUCKETS).reading}
    assert reading == {("orders", 11, 1), ("users", 12, 2)}

    store.set_live_figures(run_id, [LiveFigure("users", 3, "p-d", 1, at)])  # 2 committed
    assert [(f.checkpoint_index, f.records) for f in store.live_figures(run_id)] == [(3, 1)]
    store.finish_run(run_id, status="failed", stats={}, state_after={}, error="x")
    assert store.figures(BUCKETS).reading == []  # a run that ended reads nothing
    store.set_live_figures(run_id, [])
    assert store.live_figures(run_id) == []
