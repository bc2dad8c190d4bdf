"""Planning a prefix of many tiny objects: seconds and driver memory, against the store's
own client listing the same prefix.

For each ``--counts`` N, N one-line JSON objects are made in a local folder
(once; reused by later runs) and, for ``--s3-count`` objects, in a bucket of
moto's S3 server started on 127.0.0.1.  Each measurement runs in a fresh
Python process, so its RSS high-water is its own:

* **Headwater**: ``stream.partitions(None)`` of an ``object_storage`` source
  (listing, cursor decisions, partitions; the first sync of the prefix), its
  partitions as JSON (what the run's persisted plan holds) and, with
  ``--close``, every partition closed on the cursor (the state's size);
* **baseline**: the store's own client alone: an ``os.scandir`` walk in key
  order keeping (key, size, mtime) locally, boto3's ``list_objects_v2``
  paginator keeping (key, size, etag) on S3.

``traced`` is tracemalloc's peak of Python allocations, measured in a second
process (tracing slows allocation, so the seconds come from the untraced one).
Ratio = Headwater s / baseline s (the issue aims at ≤ 1.5); the CPU ratio is of the
two processes' CPU seconds (the server's, on S3, not included), steadier than the
seconds on a shared machine.  With ``--repeat N`` both sides run N times back to
back, alternately, and each side's fastest run is shown.

Run: ``.venv/bin/python bench/object_storage_plan_million.py [--counts 10000,100000,1000000]
[--folder /tmp/hw-million] [--s3-count 20000] [--repeat 3] [--close] [--no-trace]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _common import REPO, header, load_line

sys.path.append(str(REPO))  # for tests._many_objects; headwater comes from PYTHONPATH

from tests._many_objects import (
    make_local_objects,
    measure_plan,
    put_s3_objects,
    rss_high_water_bytes,
    scandir_walk,
)

KEY, SECRET = "bench-key", "bench-secret"


def _local_config(folder: Path) -> dict[str, Any]:
    return {"url": str(folder), "streams": [{"name": "objects", "globs": ["**/*.jsonl"]}]}


def _s3_config(endpoint: str, bucket: str) -> dict[str, Any]:
    return {"url": f"s3://{bucket}", "endpoint_url": endpoint, "region": "us-east-1",
            "aws_access_key_id": KEY, "aws_secret_access_key": SECRET,
            "streams": [{"name": "objects", "globs": ["**/*.jsonl"]}]}


def _child(args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in this process (``--child``)."""
    if args.child == "scandir":
        started, cpu = time.perf_counter(), time.process_time()
        listed = list(scandir_walk(args.where))
        return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
                "objects": len(listed), "rss_high_water": rss_high_water_bytes()}
    if args.child == "paginator":
        import boto3

        client = boto3.client("s3", endpoint_url=args.endpoint, region_name="us-east-1",
                              aws_access_key_id=KEY, aws_secret_access_key=SECRET)
        started, cpu = time.perf_counter(), time.process_time()
        listed = [(o["Key"], o["Size"], o["ETag"])
                  for page in client.get_paginator("list_objects_v2").paginate(Bucket=args.where)
                  for o in page.get("Contents", ())]
        return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
                "objects": len(listed), "rss_high_water": rss_high_water_bytes()}
    config = _local_config(Path(args.where)) if args.child == "local" \
        else _s3_config(args.endpoint, args.where)
    return measure_plan(config, trace=args.trace, close_all=args.close)


def _run_child(kind: str, where: str, *, endpoint: str = "", trace: bool = False,
               close: bool = False, timeout: float = 1800) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--where", where,
               "--endpoint", endpoint]
    command += ["--trace"] if trace else []
    command += ["--close"] if close else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"not done after {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024 / 1024:,.0f} MiB"


def _row(label: str, count: int, ours: dict[str, Any], traced: dict[str, Any] | None,
         base: dict[str, Any]) -> str:
    if "error" in ours or "error" in base:
        return f"| {label} | {count:,} | {ours.get('error', '')} {base.get('error', '')} |"
    state = f"{ours['state_bytes']:,} B in {ours['close_seconds']:.1f} s" \
        if "state_bytes" in ours else "-"
    return (f"| {label} | {count:,} | {ours['seconds']:.2f} | {ours['cpu_seconds']:.2f} | "
            f"{_mib(ours['rss_high_water'])} | {_mib((traced or {}).get('traced_peak'))} | "
            f"{ours['partitions']:,} | {ours['plan_bytes']:,} | {state} | "
            f"{base['seconds']:.2f} | {base['cpu_seconds']:.2f} | "
            f"{_mib(base['rss_high_water'])} | {ours['seconds'] / base['seconds']:.2f} | "
            f"{ours['cpu_seconds'] / base['cpu_seconds']:.2f} |")


def _back_to_back(repeat: int, baseline: Callable[[], dict[str, Any]],
                  planning: Callable[[], dict[str, Any]]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline and Headwater, alternately ``repeat`` times; each side's fastest run
    (on a shared machine the others' load only ever adds time)."""
    runs: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for _ in range(repeat):
        runs[0].append(baseline())
        runs[1].append(planning())
    base, ours = ([r for r in side if "error" not in r] or side[:1] for side in runs)
    return (min(base, key=lambda r: r.get("seconds", 0)),
            min(ours, key=lambda r: r.get("seconds", 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="10000,100000,1000000")
    parser.add_argument("--folder", default="/tmp/hw-million")
    parser.add_argument("--s3-count", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each side, back to back; the fastest of each is shown")
    parser.add_argument("--close", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--where", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", default="", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args)))
        return

    header("Planning many tiny objects", sys.argv)
    print("| store | objects | plan s | plan CPU s | RSS high-water | traced peak | partitions | "
          "plan JSON bytes | state after closing all | baseline s | baseline CPU s | "
          "baseline RSS | ratio | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for count in (int(c) for c in args.counts.split(",") if c):
        folder = str(make_local_objects(Path(f"{args.folder}-{count}"), count))
        base, ours = _back_to_back(
            args.repeat, partial(_run_child, "scandir", folder, timeout=args.timeout),
            partial(_run_child, "local", folder, close=args.close, timeout=args.timeout))
        traced = None if args.no_trace or "error" in ours else \
            _run_child("local", folder, trace=True, timeout=args.timeout)
        print(_row("local folder", count, ours, traced, base), flush=True)
        print(f"         {load_line()}", flush=True)
    if args.s3_count:
        _s3_rows(args)


def _s3_rows(args: argparse.Namespace) -> None:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server._server.server_address[:2]  # type: ignore[union-attr]
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=KEY, aws_secret_access_key=SECRET)
        client.create_bucket(Bucket="million")
        put_s3_objects(client, "million", args.s3_count)
        base, ours = _back_to_back(
            args.repeat,
            lambda: _run_child("paginator", "million", endpoint=endpoint, timeout=args.timeout),
            lambda: _run_child("s3", "million", endpoint=endpoint, close=args.close,
                               timeout=args.timeout))
        traced = None if args.no_trace or "error" in ours else \
            _run_child("s3", "million", endpoint=endpoint, trace=True, timeout=args.timeout)
        print(_row("moto S3", args.s3_count, ours, traced, base), flush=True)
        print(f"end:     {load_line()}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
