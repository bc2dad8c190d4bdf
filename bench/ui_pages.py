"""The web page's API with a long history: p95 per route against the issue's 300 ms.

Seeds a SQLite metadata store with ``--runs`` runs (default 10,000) over
``--connections`` connections (default 10), each run with ``--partitions``
partitions (default 100: 1,000,000 per-partition figure rows in all) in
checkpoints of 10, a persisted plan naming every partition, state before and
after, and ``--log-lines`` log lines for the runs the benchmark opens.  The
rows are written straight into the store's tables (SQLAlchemy core, big
transactions): the same columns and JSON the engine writes, far faster than
10,000 real syncs.

Then it starts the real server (:class:`headwater.ui.UiServer` on 127.0.0.1)
and requests each route ``--requests`` times over HTTP (httpx, one client,
one request at a time), reporting the median and p95 in milliseconds:

* ``/`` (the static page): the baseline, what the server costs with no store read;
* ``/api/connections`` (every connection with its 20 recent runs);
* ``/api/connections/NAME`` (streams, state, 50 newest runs);
* ``/api/connections/NAME?before=RUN`` (a page back in the history);
* ``/api/runs/RUN`` (a run with its 10 checkpoints and 100 partitions);
* ``/api/runs/RUN/logs``;
* ``/metrics`` (the store's figures; its first scrape in a process reads every
  finished run and sums its checkpoints once, and is timed apart, as "cold"; later
  ones read only the runs finished since and the unfinished ones);
* ``/metrics`` again, with a run (10 checkpoints of 10 partitions) recorded and finished
  through the store by another instance before each request, untimed: what a scrape costs
  when there is something new to read.

Each route's line ends with the 1-minute load average when it finished: the
machine is shared, and the figures mean little without it.

Run: ``.venv/bin/python bench/ui_pages.py [--runs 10000 --partitions 100 --requests 200]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import sqlalchemy as sa
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine_line
from headwater.metadata_store import MetadataStore
from headwater.metadata_store import _schema as t
from headwater.ui import UiServer, create_app

PER_CHECKPOINT = 10
START = datetime(2025, 1, 1, tzinfo=UTC)


def write_connections(folder: Path, store_url: str, count: int) -> list[str]:
    names = [f"conn{i:02d}" for i in range(count)]
    for name in names:
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": name,
            "source": {"type": "sample", "config": {"users": 1000}},
            "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
            "streams": [{"name": "users", "sync_mode": "incremental",
                         "destination_sync_mode": "append_dedup", "primary_key": ["id"]}],
            "metadata_store": store_url,
            "schedule": "*/15 * * * *",
        }))
    return names


def _window(i: int) -> tuple[str, str]:
    low = START + timedelta(minutes=15 * i)
    return low.strftime("%Y-%m-%dT%H:%M:%SZ"), (low + timedelta(minutes=15)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def seed(store_url: str, names: list[str], runs: int, partitions: int,
         log_runs: set[int], log_lines: int) -> list[str]:
    """Write the history; returns the run ids, oldest first."""
    MetadataStore(store_url).close()  # the tables
    engine = sa.create_engine(store_url)
    run_ids: list[str] = []
    batch = 500
    with engine.begin() as conn:
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    for first in range(0, runs, batch):
        run_rows, attempt_rows, checkpoint_rows, log_rows = [], [], [], []
        for i in range(first, min(first + batch, runs)):
            name = names[i % len(names)]
            started = START + timedelta(minutes=15 * (i // len(names)), seconds=i % len(names))
            run_id = f"{started:%Y%m%dT%H%M%SZ}-{i:06x}"
            run_ids.append(run_id)
            low, high = _window(i // len(names))
            ids = [f"users:{low}/{high}#{p}" for p in range(partitions)]
            checkpoints = [ids[c:c + PER_CHECKPOINT] for c in range(0, partitions,
                                                                    PER_CHECKPOINT)]
            state_before = {"users": {"state_type": "datetime", "cursor_field": "updated_at",
                                      "slices": [{"start": "", "end": low}]}}
            state_after = {"users": {"state_type": "datetime", "cursor_field": "updated_at",
                                     "slices": [{"start": "", "end": high}]}}
            plan = {"connection": name, "streams": [{
                "stream": {"name": "users", "sync_mode": "incremental",
                           "destination_sync_mode": "append_dedup",
                           "cursor_field": "updated_at", "primary_key": ["id"]},
                "state_before": state_before["users"], "lanes": 1,
                "checkpoints": [{"index": 1 + i * 100 + c, "checkpoint_id": part[0],
                                 "lane": 0, "partitions": [{"id": p, "params": {
                                     "start": low, "end": high}} for p in part]}
                                for c, part in enumerate(checkpoints)]}]}
            records = 100 * partitions
            run_rows.append({
                "run_id": run_id, "connection": name, "kind": "sync",
                "status": "failed" if i % 50 == 0 else "succeeded",
                "started_at": started, "ended_at": started + timedelta(seconds=30),
                "plan": plan, "state_before": state_before, "state_after": state_after,
                "stats": {"streams": [{"name": "users", "mode": "incremental+append_dedup",
                                       "status": "succeeded", "records_read": records,
                                       "records_written": records, "records_rejected": 0,
                                       "bytes": records * 80, "partitions": partitions,
                                       "checkpoints": len(checkpoints),
                                       "checkpoints_done": len(checkpoints),
                                       "duration_s": 30.0, "error": None}]},
                "error": None, "config_redacted": {"source": {"type": "sample"}},
                "finished_seq": i + 1})  # finished in this order (_schema.next_finished_seq)
            attempt_rows.append({"run_id": run_id, "number": 1, "status": "succeeded",
                                 "pid": 1, "host": "bench", "started_at": started,
                                 "ended_at": started + timedelta(seconds=30), "error": None})
            for c, part in enumerate(checkpoints):
                checkpoint_rows.append({
                    "run_id": run_id, "stream": "users", "checkpoint_index": 1 + i * 100 + c,
                    "checkpoint_id": part[0], "status": "released",
                    "updated_at": started + timedelta(seconds=c), "stats": {
                        "attempt": 1, "records_read": 100 * len(part),
                        "records_written": 100 * len(part), "records_rejected": 0,
                        "bytes": 8000 * len(part), "duration_s": 2.5, "delta_version": c,
                        "partitions": part,
                        "partition_stats": [{"partition": p, "records_read": 100,
                                             "records_written": 100, "records_rejected": 0,
                                             "bytes": 8000, "duration_s": 0.2, "retries": 0}
                                            for p in part]}})
            if i in log_runs:
                log_rows += [{"run_id": run_id, "seq": s, "at": started, "level": "INFO",
                              "logger": "headwater.engine", "message": f"line {s} of {run_id}"}
                             for s in range(1, log_lines + 1)]
        with engine.begin() as conn:
            conn.execute(sa.insert(t.runs), run_rows)
            conn.execute(sa.insert(t.attempts), attempt_rows)
            conn.execute(sa.insert(t.checkpoints), checkpoint_rows)
            # As the store writes each checkpoint: its summed figures apart (schema 4).
            conn.execute(sa.insert(t.checkpoint_figures), [
                {"run_id": row["run_id"], "stream": row["stream"],
                 "checkpoint_index": row["checkpoint_index"],
                 **t.checkpoint_figures_values(row["status"], row["stats"])}
                for row in checkpoint_rows])
            if log_rows:
                conn.execute(sa.insert(t.run_logs), log_rows)
        print(f"  seeded {len(run_ids):,} runs", file=sys.stderr, flush=True)
    with engine.begin() as conn:
        conn.execute(sa.update(t.meta).where(t.meta.c.key == t.FINISHED_SEQ_KEY)
                     .values(value=str(runs)))
        for name in names:
            conn.execute(sa.insert(t.states), {
                "connection": name, "stream": "users", "run_id": run_ids[-1],
                "checkpoint_index": 1, "updated_at": START,
                "state": {"state_type": "datetime", "cursor_field": "updated_at",
                          "slices": [{"start": "", "end": _window(runs)[0]}]}})
    engine.dispose()
    return run_ids


def finish_a_run(store: MetadataStore, name: str) -> None:
    """A sync of ``name`` as another process records it: 10 checkpoints of 10
    partitions committed and released, then the run finished (not timed)."""
    run_id = store.create_run(name, plan={}, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=os.getpid(), host="bench")
    for c in range(PER_CHECKPOINT):
        part = [f"users:new/{run_id}#{c}-{p}" for p in range(PER_CHECKPOINT)]
        store.record_checkpoint(run_id, "users", c + 1, part[0], status="released", stats={
            "records_written": 1000, "records_rejected": 0, "bytes": 80000,
            "partitions": part})
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)


def timings(client: httpx.Client, paths: list[str], requests: int,
            before: Callable[[], None] | None = None) -> list[float]:
    """Milliseconds per request, cycling through ``paths`` (each answer checked 200);
    ``before`` runs ahead of each request, untimed."""
    found = []
    for n in range(requests):
        if before is not None:
            before()
        began = time.perf_counter()
        response = client.get(paths[n % len(paths)])
        found.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, response.text[:300]
    return found


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--log-lines", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="hw-ui-bench-") as tmp:
        folder = Path(tmp) / "connections"
        folder.mkdir()
        url = f"sqlite:///{Path(tmp) / 'meta.db'}"
        names = write_connections(folder, url, args.connections)
        rng = random.Random(7)
        opened = set(rng.sample(range(args.runs), min(20, args.runs)))
        began = time.perf_counter()
        run_ids = seed(url, names, args.runs, args.partitions, opened, args.log_lines)
        size = (Path(tmp) / "meta.db").stat().st_size
        print(f"seeded {args.runs:,} runs, {args.runs * args.partitions:,} partition rows, "
              f"{len(opened) * args.log_lines:,} log lines in "
              f"{time.perf_counter() - began:.0f} s ({size / 1e6:.0f} MB)", file=sys.stderr)

        server = UiServer(create_app(folder), "127.0.0.1", 0)
        server.start()
        try:
            client = httpx.Client(base_url=server.url, timeout=60)
            old = [run_ids[i] for i in sorted(opened)]
            routes: dict[str, list[str]] = {
                "/ (static page, baseline)": ["/"],
                "/api/connections": ["/api/connections"],
                "/api/connections/NAME": [f"/api/connections/{n}" for n in names],
                "/api/connections/NAME?before=RUN": [
                    f"/api/connections/{names[i % len(names)]}?before={run_ids[i]}"
                    for i in sorted(opened)],
                "/api/runs/RUN": [f"/api/runs/{r}" for r in old],
                "/api/runs/RUN/logs": [f"/api/runs/{r}/logs" for r in old],
                "/metrics": ["/metrics"],
            }
            timings(client, ["/api/connections"], 5)  # warm: imports, first connections
            [cold] = timings(client, ["/metrics"], 1)
            print(f"\n{machine_line()}")
            print(f"{args.runs:,} runs over {args.connections} connections, "
                  f"{args.runs * args.partitions:,} partition rows; "
                  f"{args.requests} requests per route, one at a time; the first "
                  f"/metrics scrape (cold) {cold:.0f} ms\n")
            print("| route | median ms | p95 ms | p95 / baseline p95 | under 300 ms | load |")
            print("| --- | ---: | ---: | ---: | --- | ---: |")
            baseline = None
            writer = MetadataStore(url)  # another process's syncs
            befores: dict[str, Callable[[], None]] = {
                "/metrics, a run finished before each": lambda: finish_a_run(
                    writer, names[0])}
            routes["/metrics, a run finished before each"] = ["/metrics"]
            for route, paths in routes.items():
                found = timings(client, paths, args.requests, befores.get(route))
                high = p95(found)
                baseline = baseline or high
                print(f"| `{route}` | {statistics.median(found):.1f} | {high:.1f} | "
                      f"{high / baseline:.1f}x | {'yes' if high < 300 else 'NO'} | "
                      f"{os.getloadavg()[0]:.1f} |", flush=True)
            writer.close()
        finally:
            server.shutdown("benchmark done")


if __name__ == "__main__":
    main()
