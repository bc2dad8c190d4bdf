"""Calls per second of a ``rest`` parent + substream sync against a 50 ms API, by concurrency.

The loopback API (tests/api_server.py, in a process of its own) holds
``--parents`` surveys, 40 per 30-day window of ``date_modified`` (one page of
the parent per window), each with ``--children`` responses (one page per
parent): ``parents + parents / 40`` calls, the shape of issue 17's
comparison (5,000 parents: 5,126 calls).  Every call is answered after
``--latency`` seconds.  For each concurrency a full ``headwater`` sync (real
``SyncEngine``, local Spark, Delta) reads it, twice: the substream alone
(``survey_responses``), and both streams (``surveys`` incremental +
``survey_responses``), whose extra calls are the parent's own sync.

Baseline: the ideal rate ``concurrency / latency`` (a client that always has
``concurrency`` requests in flight and costs nothing).  Figures: calls/s while
reading (first call's arrival to the last's, plus one latency) and of the whole
sync (planning, Spark jobs, Delta commits included), each as a share of it,
and the most calls the API saw in flight at once.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import header, load_line, scratch_dir, table
from headwater.config import load_connection
from headwater.engine import SparkSettings, SyncEngine, SyncOptions, get_spark
from headwater.metadata_store import MetadataStore
from tests.api_server import BASE_EPOCH, TOKEN, iso

WINDOW_S = 30 * 86_400
PARENTS_PER_WINDOW = 40


def _serve(parents: int, children: int, latency_s: float, requests: Any, replies: Any) -> None:
    from tests.api_server import ApiData, running

    data = ApiData()
    step = WINDOW_S // PARENTS_PER_WINDOW
    for i in range(1, parents + 1):
        data.surveys[i] = {"id": i, "title": f"survey {i}",
                           "date_modified": BASE_EPOCH + (i - 1) * step}
        data.responses[i] = [{"id": i * 1000 + r, "survey_id": i, "answer": f"a{r}"}
                             for r in range(children)]
    with running(data, latency_s=latency_s, limit=10**9) as api:
        replies.put(api.url)
        while (request := requests.get()) is not None:
            replies.put(([t for t, _, _ in list(api.calls)[request:]], api.max_in_flight))
            api.max_in_flight = 0


class _Api:
    def __init__(self, parents: int, children: int, latency_s: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._requests, self._replies = context.Queue(), context.Queue()
        self._process = context.Process(target=_serve, daemon=True, args=(
            parents, children, latency_s, self._requests, self._replies))
        self._process.start()
        self.url: str = self._replies.get(timeout=120)

    def arrivals(self, since: int) -> tuple[list[float], int]:
        """Arrival times of the calls from the ``since``-th on, and the most in flight."""
        self._requests.put(since)
        result: tuple[list[float], int] = self._replies.get(timeout=120)
        return result

    def close(self) -> None:
        self._requests.put(None)
        self._process.join(timeout=30)


def connection(folder: Path, url: str, parents: int, concurrency: int, both: bool) -> Path:
    windows = -(-parents // PARENTS_PER_WINDOW)
    end = BASE_EPOCH + windows * WINDOW_S
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "survey_id": {"type": "integer"},
                                               "answer": {"type": "string"}}}
    surveys = {
        "name": "surveys", "path": "/v3/surveys",
        "params": {"start_modified_at": "{start}", "end_modified_at": "{end}", "per_page": 100},
        "record_selector": "data", "primary_key": ["id"],
        "cursor_field": "date_modified", "cursor_format": "epoch",
        "start_date": iso(BASE_EPOCH), "end_date": iso(end), "window_size_seconds": WINDOW_S,
        "schema": {"type": "object", "properties": {
            "id": {"type": "integer"}, "title": {"type": "string"},
            "date_modified": {"type": "integer"}}},
    }
    responses = {
        "name": "survey_responses", "path": "/v3/surveys/{parent.id}/responses",
        "params": {"per_page": 100}, "record_selector": "data", "primary_key": ["id"],
        "parent": {"stream": "surveys", "fields": ["id"], "copy_to": {"survey_id": "id"}},
        "schema": schema,
    }
    streams = [{"name": "survey_responses", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    if both:
        streams.insert(0, {"name": "surveys", "sync_mode": "incremental",
                           "destination_sync_mode": "append"})
    name = f"subs-c{concurrency}-{'both' if both else 'child'}"
    document = {
        "name": name,
        "source": {"type": "rest", "config": {
            "base_url": url, "auth": {"type": "bearer", "token": TOKEN},
            "paginator": {"type": "next_url", "next_url_path": "links.next"},
            "concurrency": concurrency, "streams": [surveys, responses]}},
        "destination": {"type": "delta", "config": {"path": str(folder / name)}},
        "streams": streams,
        "metadata_store": f"sqlite:///{folder / (name + '.db')}",
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parents", type=int, default=5000)
    parser.add_argument("--children", type=int, default=25, help="records per parent")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 32])
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    header("rest parent + substream: calls/s by concurrency vs the ideal concurrency/latency",
           sys.argv)
    spark = get_spark(SparkSettings(master=args.master, app_name="bench-substream"))
    rows = []
    api = _Api(args.parents, args.children, args.latency)
    try:
        with scratch_dir("hw-bench-substream") as folder:
            seen = 0
            for concurrency in args.concurrency:
                for both in (False, True):
                    path = connection(folder, api.url, args.parents, concurrency, both)
                    conn = load_connection(path)
                    started = time.perf_counter()
                    result = SyncEngine(conn, MetadataStore(conn.metadata_store or ""),
                                        SyncOptions(spark=SparkSettings(master=args.master))
                                        ).run()
                    elapsed = time.perf_counter() - started
                    assert result.status == "succeeded", result.to_dict()
                    written = {s.name: s.records_written for s in result.streams}
                    assert written["survey_responses"] == args.parents * args.children
                    arrivals, in_flight = api.arrivals(seen)
                    seen += len(arrivals)
                    calls = len(arrivals)
                    reading = max(arrivals) - min(arrivals) + args.latency
                    ideal = concurrency / args.latency
                    rows.append([concurrency, "both" if both else "substream", calls,
                                 in_flight, f"{ideal:.0f}", f"{reading:.1f}",
                                 f"{calls / reading:.0f}", f"{calls / reading / ideal:.2f}",
                                 f"{elapsed:.1f}", f"{calls / elapsed / ideal:.2f}"])
    finally:
        api.close()
    print(table(["concurrency", "streams synced", "calls", "max in flight", "ideal calls/s",
                 "reading s", "calls/s reading", "reading / ideal", "sync s",
                 "sync / ideal"], rows))
    print(f"Spark tasks at once: {int(spark.sparkContext.defaultParallelism)}; {load_line()}")


if __name__ == "__main__":
    main()
