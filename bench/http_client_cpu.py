"""CPU per page of a ``rest`` stream's executor side, without Spark: client, typing, metadata.

The loopback API (tests/api_server.py) runs in a child process, so the CPU this
process spends is the executor's alone: the HTTP client and its event loop, JSON,
the window filter, typing into Arrow and the engine's metadata columns
(``make_task``: a Spark task's function, over one run of partitions).  The API's
own CPU per page is shown beside it.  Same stream as bench/http_source_pages.py (50 ms a page,
100 records a page, 64 API windows a partition); ``--in-flight`` is what one
task keeps in flight (``concurrency // tasks`` in a sync).

Baseline: the ideal ``in_flight / latency`` pages/s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._api_process import ApiProcess
from bench._common import header, load_line, table
from bench.http_source_pages import RECORDS_PER_PAGE, connection
from headwater.config import load_connection
from headwater.connectors import get_source_class
from headwater.engine._task import TaskContext, make_task, read_partition
from headwater.sdk import PlanContext
from headwater.table_schema import arrow_schema_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 10, 16, 32])
    parser.add_argument("--windows-per-partition", type=int, default=64)
    args = parser.parse_args()
    header("rest stream, executor side only: CPU ms per page by requests in flight", sys.argv)
    rows = []
    with ApiProcess(args.pages * RECORDS_PER_PAGE, args.latency) as api, \
            tempfile.TemporaryDirectory() as folder:
        for in_flight in args.in_flight:
            path = connection(Path(folder), api.url, args.pages, in_flight,
                              args.windows_per_partition)
            config = load_connection(path).source.config
            stream = get_source_class("rest")(config).stream("events")
            plan = stream.plan(None, PlanContext(parallel_tasks=1))
            task = TaskContext("bench", 0, arrow_schema_for(stream.json_schema()))
            for _ in read_partition(stream, plan[0], task):  # warm: imports, connections
                pass
            server_before = api.cpu_s()
            cpu, wall = time.process_time(), time.perf_counter()
            # The rest as one Spark task reads its run of partitions (make_task).
            run = make_task(stream, plan[1:], task)
            positions = pa.record_batch([pa.array(range(len(plan) - 1))], names=["id"])
            records = sum(batch.num_rows for batch in run(iter([positions])))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            server_cpu = api.cpu_s() - server_before
            pages = records // RECORDS_PER_PAGE
            ideal = in_flight / args.latency
            rows.append([in_flight, pages, f"{1000 * cpu / pages:.2f}",
                         f"{1000 * server_cpu / pages:.2f}", f"{pages / wall:.0f}",
                         f"{pages / wall / ideal:.2f}"])
    print(table(["in flight", "pages", "client CPU ms/page", "API CPU ms/page", "pages/s",
                 "pages/s / ideal"], rows))
    print(load_line())


if __name__ == "__main__":
    main()
