"""Pages per second of a ``rest`` source sync against a 50 ms API, by concurrency.

The loopback API (tests/api_server.py, in a process of its own: bench/_api_process.py)
answers every page after ``--latency`` seconds; ``events`` holds ``--pages`` pages
of 100 records, one page per API window, so each call is one page.  For each
concurrency setting a full ``headwater`` sync (real ``SyncEngine``, local Spark,
Delta) reads them all.  The API's own CPU per page is shown beside.

Baseline: the ideal rate ``concurrency / latency`` (a client that always has
``concurrency`` requests in flight and costs nothing).  Two figures, each as a
share of it: pages/s while reading (from the first call the API saw to the
answer of the last: the source's own rate, which the aim is about) and pages/s
of the whole sync (planning, Spark job start, Delta commit included).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._api_process import ApiProcess
from bench._common import header, load_line, scratch_dir, table
from headwater.config import load_connection
from headwater.engine import SparkSettings, SyncEngine, SyncOptions, get_spark
from headwater.metadata_store import MetadataStore
from headwater.sdk.http._client import in_flight_per_task
from tests.api_server import BASE_EPOCH, TOKEN, iso

RECORDS_PER_PAGE = 100


def connection(folder: Path, url: str, pages: int, concurrency: int,
               per_partition: int | None) -> Path:
    end = BASE_EPOCH + pages * RECORDS_PER_PAGE
    stream: dict[str, object] = {
        "name": "events", "path": "/events",
        "params": {"from": "{start}", "to": "{end}", "per_page": RECORDS_PER_PAGE},
        "record_selector": "data", "primary_key": ["id"],
        "cursor_field": "ts", "cursor_format": "epoch",
        "start_date": iso(BASE_EPOCH), "end_date": iso(end),
        "window_size_seconds": RECORDS_PER_PAGE,
        "schema": {"type": "object", "properties": {
            "id": {"type": "integer"}, "ts": {"type": "integer"},
            "value": {"type": "integer"}}},
    }
    if per_partition is not None:  # else the stream's default
        stream["windows_per_partition"] = per_partition
    document = {
        "name": f"bench-c{concurrency}",
        "source": {"type": "rest", "config": {
            "base_url": url,
            "auth": {"type": "bearer", "token": TOKEN},
            "paginator": {"type": "next_url", "next_url_path": "links.next"},
            "concurrency": concurrency,
            "streams": [stream],
        }},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "streams": [{"name": "events", "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "metadata_store": f"sqlite:///{folder / 'meta.db'}",
    }
    path = folder / f"c{concurrency}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 32])
    parser.add_argument("--windows-per-partition", type=int, default=None,
                        help="default: the stream's own (4 per request a task keeps in flight)")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    header("rest source: pages/s by concurrency vs the ideal concurrency/latency", sys.argv)
    spark = get_spark(SparkSettings(master=args.master, app_name="bench-http"))
    tasks = int(spark.sparkContext.defaultParallelism)
    rows = []
    with ApiProcess(args.pages * RECORDS_PER_PAGE, args.latency) as api, \
            scratch_dir("hw-bench-http") as folder:
        calls_before = 0
        for concurrency in args.concurrency:
            path = connection(folder, api.url, args.pages, concurrency,
                              args.windows_per_partition)
            conn = load_connection(path)
            api_cpu = api.cpu_s()
            started = time.perf_counter()
            result = SyncEngine(conn, MetadataStore(conn.metadata_store or ""),
                                SyncOptions(spark=SparkSettings(master=args.master))).run()
            elapsed = time.perf_counter() - started
            assert result.status == "succeeded", result.to_dict()
            assert result.streams[0].records_written == args.pages * RECORDS_PER_PAGE
            arrivals = api.arrivals(calls_before)
            api_cpu = api.cpu_s() - api_cpu
            calls_before += len(arrivals)
            pages = len(arrivals)
            reading = max(arrivals) - min(arrivals) + args.latency
            # The HTTP stream's rule: no more tasks at once than requests in flight,
            # each task an equal share of them.
            tasks_at_once = min(tasks, concurrency)
            in_flight = in_flight_per_task(concurrency, tasks_at_once) * tasks_at_once
            ideal = concurrency / args.latency
            read_rate, sync_rate = pages / reading, pages / elapsed
            rows.append([concurrency, in_flight, pages, f"{ideal:.0f}", f"{reading:.1f}",
                         f"{read_rate:.0f}", f"{read_rate / ideal:.2f}", f"{elapsed:.1f}",
                         f"{sync_rate:.0f}", f"{sync_rate / ideal:.2f}",
                         f"{1000 * api_cpu / pages:.2f}"])
    print(table(["concurrency", "max in flight", "calls", "ideal pages/s", "reading s",
                 "pages/s reading", "reading / ideal", "sync s", "pages/s sync",
                 "sync / ideal", "API CPU ms/page"], rows))
    print(f"Spark tasks at once: {tasks}; {load_line()}")


if __name__ == "__main__":
    main()
