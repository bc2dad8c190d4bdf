"""A parent + substream API read by ``headwater sync`` against an Airbyte CDK concurrent source.

The workload of issue 17 (bench/_substream_api.py): the loopback API
(tests/api_server.py, in a process of its own: bench/_api_process.py) holds
``--parents`` surveys in ``--windows`` windows of 30 days (50 a page) and
``--children`` responses per survey (one page each), and answers every call after
``--latency`` seconds: 126 + 5,000 = 5,126 calls at full size.

For each ``--concurrency`` (requests in flight), interleaved over ``--repeat``
repetitions so the machine's load hits both alike:

* **baseline**, the strongest alternative a user would pick: an Airbyte Python
  CDK concurrent source built as the CDK's concurrent-source tutorial builds it
  (bench/cdk_source/source.py: ``ConcurrentSourceAdapter``, ``StreamFacade``,
  the substream's partitions generated from the parent's records as they
  arrive), ``num_workers`` = the concurrency, run as
  ``python source.py read --config ... --catalog ...`` in its own venv
  (bench/setup-alternatives), its messages written to a file (then counted);
  wall time of the whole command;
* **Headwater**: a ``rest`` source connection (surveys in 30-day cursor windows,
  incremental + append from no state; responses with ``parent: surveys``, full
  refresh + overwrite) synced by ``python -m headwater sync FILE --json`` into
  Delta in a fresh folder: wall time of the whole command (JVM start included)
  and the inner sync time (the ``--json`` result's ``duration_s``: planning,
  reading, writing, commits; the CLI has started Spark before it).

Both must land every record (parent and child counts checked; the CDK's ids
too).  Ratios are Headwater / CDK throughput (same records, so CDK seconds /
Headwater seconds; > 1 = Headwater faster), cold (CLI wall) and inner, from the
medians.  The ideal is ``calls x latency / concurrency`` (a client that always
has ``concurrency`` calls in flight and costs nothing); "share of ideal" is
ideal seconds / measured seconds.  Per tool the API's own log also gives the
calls it saw (a parent read twice shows here), the reading window (first call
to last answer), the most calls it answered at once and the mean (calls x
latency / reading window), and per run when the parent's and the children's
calls came (do the children start while the parent is still read?) and how
much of the reading window had at least 90 % of the concurrency in flight,
and how much fewer than half (the dips below the ideal).

    bench/setup-alternatives airbyte-cdk
    .venv/bin/python bench/substream_api_vs_cdk.py [--repeat 3] [--parents 500]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._api_process import ApiProcess
from bench._common import REPO, header, load_line, median, scratch_dir, table
from bench._substream_api import PAGE_SIZE, WINDOW_S, Workload
from tests.api_server import TOKEN

CDK_PYTHON = REPO / ".bench-venvs" / "airbyte-cdk" / "bin" / "python"
CDK_SOURCE = REPO / "bench" / "cdk_source" / "source.py"
PARENT, CHILD = "surveys", "survey_responses"
#: One run at full size takes well under a minute alone; the machine is shared.
RUN_TIMEOUT_S = 900


@dataclass
class Run:
    """One command: its wall time, inner time (Headwater), what the API saw, rows landed."""

    wall_s: float
    inner_s: float | None
    calls: int
    reading_s: float
    peak_in_flight: int
    rows: dict[str, int] = field(default_factory=dict)
    #: (first, last) arrival of the parent's and the children's calls, seconds from the
    #: command's start: whether the children start while the parent is still read.
    parent_span: tuple[float, float] = (0.0, 0.0)
    children_span: tuple[float, float] = (0.0, 0.0)
    #: Shares of the reading window with at least 90 % of ``concurrency`` calls in
    #: flight, and with fewer than half (see :func:`in_flight_shares`).
    full_share: float = 0.0
    low_share: float = 0.0
    #: Mean calls in flight per :data:`PROFILE_BIN_S` of the reading window.
    profile: list[float] = field(default_factory=list)
    #: Headwater: (seconds from the command's start, step) of its tail (:func:`tail_steps`).
    tail: list[tuple[float, str]] = field(default_factory=list)
    #: CPU seconds of the command's own process (not the JVM's or Spark's workers').
    cpu_s: float = 0.0
    #: Headwater: CPU seconds by process kind once the summary was printed (JVM included).
    cpu_by_kind: dict[str, float] = field(default_factory=dict)

    def timeline(self) -> str:
        (p0, p1), (c0, c1) = self.parent_span, self.children_span
        return (f"parent calls {p0:.1f}-{p1:.1f} s, children {c0:.1f}-{c1:.1f} s, "
                f"in flight >= 90 % {self.full_share:.0%} / < 50 % {self.low_share:.0%} "
                "of the reading window")


#: Width of one bar of the in-flight profile (seconds).
PROFILE_BIN_S = 0.5


def in_flight_profile(arrivals: Sequence[float], latency: float,
                      bin_s: float = PROFILE_BIN_S) -> list[float]:
    """Mean calls in flight in each ``bin_s`` of the reading window, from its start
    (each call counted from its arrival for ``latency``): whether the loss below
    the concurrency is at the start (ramp), in the middle or at the end (drain)."""
    if not arrivals:
        return []
    start = min(arrivals)
    bins = [0.0] * max(1, math.ceil((max(arrivals) + latency - start) / bin_s - 1e-9))
    for arrival in arrivals:
        low, high = arrival - start, arrival - start + latency
        at = int(low / bin_s)
        while low < high and at < len(bins):
            end = min(high, (at + 1) * bin_s)
            bins[at] += end - low
            low, at = end, at + 1
    return [busy / bin_s for busy in bins]


def tail_steps(trace: Path, began: float, last_answer: float, wall: float,
               ) -> list[tuple[float, str]]:
    """The command's steps from ``bench/_traced_cli.py``'s trace, seconds from its start:
    the first and last time each moment was reached, the API's last answer, the
    process's exit; in time order."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    count: Counter[str] = Counter()
    for line in trace.read_text().splitlines():
        when, _, moment = line.split(" ", 2)
        if moment.startswith("cpu "):
            continue  # tail_cpu's
        at = float(when) - began
        first.setdefault(moment, at)
        last[moment] = at
        count[moment] += 1
    steps = [(last_answer - began, "last call answered (API)"), (wall, "process exit")]
    for moment, at in last.items():
        if count[moment] > 1 and moment not in ("reading", "partition-read"):
            steps.append((first[moment], f"{moment} (first of {count[moment]})"))
        if moment not in ("reading",):
            steps.append((at, moment if count[moment] == 1 else f"{moment} (last)"))
    return sorted(steps)


def tail_cpu(trace: Path) -> dict[str, float]:
    """CPU seconds by process kind (driver, jvm, python workers) when the summary was
    printed, from the trace's ``cpu`` lines (``bench/_traced_cli.py``)."""
    found = {}
    for line in trace.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[2] == "cpu":
            found[parts[3]] = float(parts[4])
    return found


def in_flight_shares(arrivals: Sequence[float], latency: float, concurrency: int,
                     ) -> tuple[float, float]:
    """Of the reading window, the shares with at least 90 % of ``concurrency`` calls in
    flight and with fewer than half, each call counted from its arrival for ``latency``
    (the API's own view): where a client falls short of the ideal, and for how long."""
    if not arrivals:
        return 0.0, 0.0
    events = sorted([(t, 1) for t in arrivals] + [(t + latency, -1) for t in arrivals])
    full = low = 0.0
    level, at = 0, events[0][0]
    for when, step in events:
        span = when - at
        if level >= 0.9 * concurrency:
            full += span
        elif level < 0.5 * concurrency:
            low += span
        level, at = level + step, when
    window = events[-1][0] - events[0][0]
    return full / window, low / window


def cdk_files(folder: Path, url: str, workload: Workload, concurrency: int,
              use_cache: bool) -> tuple[Path, Path]:
    config = {"base_url": url, "access_token": TOKEN, "num_workers": concurrency,
              "start": workload.start, "end": workload.end, "window_days": WINDOW_S // 86_400,
              "use_cache": use_cache}
    catalog = {"streams": [
        {"stream": {"name": PARENT, "json_schema": {}, "source_defined_cursor": True,
                    "default_cursor_field": ["date_modified"],
                    "supported_sync_modes": ["full_refresh", "incremental"]},
         "sync_mode": "incremental", "cursor_field": ["date_modified"],
         "destination_sync_mode": "append"},
        {"stream": {"name": CHILD, "json_schema": {}, "supported_sync_modes": ["full_refresh"]},
         "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
    ]}
    config_path, catalog_path = folder / "config.json", folder / "catalog.json"
    config_path.write_text(json.dumps(config))
    catalog_path.write_text(json.dumps(catalog))
    return config_path, catalog_path


def headwater_file(folder: Path, url: str, workload: Workload, concurrency: int,
                   spark: dict[str, Any] | None = None) -> Path:
    """The connection a user would write (examples/surveys.yaml's shape), engine defaults
    (``spark``: the file's ``spark`` section, e.g. ``early_reads_jvm_nice``)."""
    document: dict[str, Any] = {
        "name": f"substream-c{concurrency}",
        "source": {"type": "rest", "config": {
            "base_url": url,
            "auth": {"type": "bearer", "token": TOKEN},
            "paginator": {"type": "next_url", "next_url_path": "links.next"},
            "concurrency": concurrency,
            "streams": [
                {"name": PARENT, "path": "/v3/surveys",
                 "params": {"start_modified_at": "{start}", "end_modified_at": "{end}",
                            "per_page": PAGE_SIZE},
                 "record_selector": "data", "primary_key": ["id"],
                 "cursor_field": "date_modified", "cursor_format": "epoch",
                 "start_date": workload.start_iso, "end_date": workload.end_iso,
                 "window_size_seconds": WINDOW_S,
                 "schema": {"type": "object", "properties": {
                     "id": {"type": "integer"}, "title": {"type": "string"},
                     "date_modified": {"type": "integer"}}}},
                {"name": CHILD, "path": "/v3/surveys/{parent.id}/responses",
                 "params": {"per_page": PAGE_SIZE},
                 "record_selector": "data", "primary_key": ["id"],
                 "parent": {"stream": PARENT},
                 "schema": {"type": "object", "properties": {
                     "id": {"type": "integer"}, "survey_id": {"type": "integer"},
                     "answer": {"type": "string"}, "score": {"type": "integer"}}}},
            ],
        }},
        "destination": {"type": "delta", "config": {"path": "lakehouse"}},
        "streams": [
            {"name": PARENT, "sync_mode": "incremental", "destination_sync_mode": "append"},
            {"name": CHILD, "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
        ],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
    }
    if spark:
        document["spark"] = spark
    path = folder / "substream.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def timed(command: Sequence[str], cwd: Path, env: dict[str, str], stdout: Path,
          ) -> tuple[float, float, float]:
    """Wall time of one process from start to exit, when it started (monotonic), and
    its CPU seconds (user + system; its own, not those of processes it left running)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    with stdout.open("wb") as out, (cwd / "stderr.log").open("wb") as err:
        done = subprocess.run(list(command), cwd=cwd, env=env, stdout=out, stderr=err,
                              timeout=RUN_TIMEOUT_S, check=False)
    seconds = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} exited {done.returncode}:\n"
                         f"{stdout.read_text()[-3000:]}\n"
                         f"{(cwd / 'stderr.log').read_text()[-3000:]}")
    return seconds, began, cpu


def _with_bytecode(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without ``PYTHONDONTWRITEBYTECODE``: an installed tool runs from its
    compiled modules; with the variable set (some sandboxes set it), the driver and
    every Spark worker compiled Headwater's modules from source on each run (py-spy:
    seconds of the driver's time while it makes the calls)."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cdk_rows(messages: Path, workload: Workload) -> dict[str, int]:
    """Records per stream in the CDK's output; fails when an id is missing or repeated."""
    ids: dict[str, Counter[int]] = {PARENT: Counter(), CHILD: Counter()}
    errors = []
    with messages.open("rb") as lines:
        for line in lines:
            if b'"RECORD"' not in line and b'"ERROR"' not in line:
                continue
            message = json.loads(line)
            if message["type"] == "RECORD":
                record = message["record"]
                ids[record["stream"]][record["data"]["id"]] += 1
            elif message["type"] == "TRACE" or message.get("log", {}).get("level") == "ERROR":
                errors.append(line[:300])
    expected = {PARENT: set(range(1, workload.parents + 1)),
                CHILD: {s * 1_000 + r for s in range(1, workload.parents + 1)
                        for r in range(workload.children)}}
    for stream, seen in ids.items():
        if set(seen) != expected[stream] or max(seen.values(), default=1) != 1:
            raise SystemExit(f"the CDK source read {stream} wrong: {sum(seen.values())} "
                             f"records, {len(seen)} ids, {len(expected[stream])} expected; "
                             f"errors: {errors[:3]}")
    return {stream: sum(seen.values()) for stream, seen in ids.items()}


def observe(api: ApiProcess, since: int, latency: float, began: float, run: Run,
            concurrency: int) -> Run:
    """Fill ``run`` with what the API saw since its ``since``-th call: how many calls, the
    reading window, the peak in flight, and when the parent's and children's calls came."""
    calls = api.calls(since)
    arrivals = [t for t, _ in calls]
    run.calls = len(calls)
    run.reading_s = max(arrivals) - min(arrivals) + latency if arrivals else 0.0
    run.peak_in_flight = api.peak_in_flight()
    parent = [t - began for t, path in calls if path == "/v3/surveys"]
    children = [t - began for t, path in calls if path != "/v3/surveys"]
    run.parent_span = (min(parent, default=0.0), max(parent, default=0.0))
    run.children_span = (min(children, default=0.0), max(children, default=0.0))
    run.full_share, run.low_share = in_flight_shares(arrivals, latency, concurrency)
    run.profile = in_flight_profile(arrivals, latency)
    return run


def run_cdk(folder: Path, api: ApiProcess, workload: Workload, concurrency: int,
            since: int, latency: float, use_cache: bool) -> Run:
    folder.mkdir()
    config, catalog = cdk_files(folder, api.url, workload, concurrency, use_cache)
    env = {**_with_bytecode(os.environ), "PYTHONPATH": ""}
    messages = folder / "messages.jsonl"
    wall, began, cpu = timed([str(CDK_PYTHON), str(CDK_SOURCE), "read", "--config",
                              str(config), "--catalog", str(catalog)], folder, env, messages)
    run = observe(api, since, latency, began, Run(wall, None, 0, 0.0, 0, cpu_s=cpu),
                  concurrency)
    run.rows = cdk_rows(messages, workload)
    messages.unlink()
    return run


def run_headwater(folder: Path, api: ApiProcess, workload: Workload, concurrency: int,
                  since: int, latency: float, conf: Sequence[str],
                  spark: dict[str, Any] | None = None) -> Run:
    folder.mkdir()
    connection = headwater_file(folder, api.url, workload, concurrency, spark)
    python = sys.executable
    env = {**_with_bytecode(os.environ), "PYTHONPATH": str(REPO),
           "HEADWATER_HOME": str(folder / ".headwater"),
           "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    trace = folder / "trace.txt"
    # `headwater sync`, its moments timed (bench/_traced_cli.py): the command's tail.
    command = [python, "-m", "bench._traced_cli", str(trace), "--", "sync", str(connection),
               "--json"]
    for pair in conf:
        command += ["--conf", pair]
    out = folder / "result.json"
    wall, began, cpu = timed(command, folder, env, out)
    result: dict[str, Any] = json.loads(out.read_text())
    rows = {s["name"]: int(s["records_written"]) for s in result["streams"]}
    expected = {PARENT: workload.parents, CHILD: workload.child_records}
    if result["status"] != "succeeded" or rows != expected:
        raise SystemExit(f"headwater sync landed {rows}, expected {expected}: {result}")
    run = observe(api, since, latency, began,
                  Run(wall, float(result["duration_s"]), 0, 0.0, 0, rows, cpu_s=cpu),
                  concurrency)
    last_answer = max(t for t, _ in api.calls(since)) + latency
    run.tail = tail_steps(trace, began, last_answer, wall)
    run.cpu_by_kind = tail_cpu(trace)
    return run


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parents", type=int, default=5_000)
    parser.add_argument("--children", type=int, default=25, help=f"<= {PAGE_SIZE}")
    parser.add_argument("--windows", type=int, default=42, help="30-day parent windows")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 32])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (medians)")
    parser.add_argument("--tools", nargs="+", choices=["cdk", "headwater"],
                        default=["cdk", "headwater"], help="ratios need both")
    parser.add_argument("--no-cdk-cache", action="store_true",
                        help="turn off the tutorial's use_cache on the CDK's parent stream")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark conf for `headwater sync` (repeatable)")
    parser.add_argument("--spark-file", action="append", default=[], metavar="KEY=VALUE",
                        help="a key of the connection file's `spark` section, e.g. "
                             "early_reads_jvm_nice=0 (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args(argv)
    if "cdk" in args.tools and not CDK_PYTHON.exists():
        raise SystemExit(f"no {CDK_PYTHON}: run bench/setup-alternatives airbyte-cdk")
    workload = Workload(args.parents, args.children, args.windows)
    header("Parent + substream API: headwater sync vs an Airbyte CDK concurrent source",
           [Path(sys.executable).name, *sys.argv])
    print(f"workload: {workload.parents} parents in {workload.windows} windows of 30 days "
          f"({workload.parent_calls} calls), {workload.children} children each "
          f"({workload.parents} calls): {workload.calls} calls, {args.latency * 1000:.0f} ms "
          f"each; {workload.parents} + {workload.child_records} records")
    if "cdk" in args.tools:
        cdk_version = subprocess.run(
            [str(CDK_PYTHON), "-c", "from importlib.metadata import version; "
                                    "print(version('airbyte-cdk'))"],
            capture_output=True, text=True, check=True).stdout.strip()
        print(f"baseline: airbyte-cdk {cdk_version}, use_cache={not args.no_cdk_cache}\n")
    spark_file = {key: yaml.safe_load(value)
                  for key, value in (pair.split("=", 1) for pair in args.spark_file)}
    runs: dict[tuple[str, int], list[Run]] = {}
    with ApiProcess(0, args.latency, data=workload.data, limit=10**9) as api, \
            scratch_dir("hw-bench-substream-", keep=args.keep) as scratch:
        since = len(api.arrivals())
        api.peak_in_flight()
        for number in range(1, args.repeat + 1):
            for concurrency in args.concurrency:
                for tool in args.tools:
                    folder = scratch / f"{tool}-c{concurrency}-{number}"
                    run = (run_cdk(folder, api, workload, concurrency, since, args.latency,
                                   not args.no_cdk_cache) if tool == "cdk" else
                           run_headwater(folder, api, workload, concurrency, since,
                                         args.latency, args.conf, spark_file))
                    since += run.calls
                    runs.setdefault((tool, concurrency), []).append(run)
                    inner = f", inner {run.inner_s:.2f} s" if run.inner_s is not None else ""
                    print(f"  {number}: {tool:9} c={concurrency:<3} {run.wall_s:6.2f} s{inner}, "
                          f"{run.calls} calls, reading {run.reading_s:.2f} s, peak in flight "
                          f"{run.peak_in_flight}, {run.timeline()}, rows {run.rows}, "
                          f"CPU {run.cpu_s:.2f} s   ({load_line()})", flush=True)
                    print(f"     in flight per {PROFILE_BIN_S} s of the reading window: "
                          + " ".join(f"{level:.0f}" for level in run.profile), flush=True)
                    if run.cpu_by_kind:
                        print("     CPU s at the summary: " + ", ".join(
                            f"{kind} {seconds:.2f}" for kind, seconds
                            in sorted(run.cpu_by_kind.items())), flush=True)
                    if run.tail:
                        print("     steps (s from the command's start): " + "; ".join(
                            f"{at:.2f} {step}" for at, step in run.tail), flush=True)
    if len(args.tools) == 2:
        report(runs, workload, args.concurrency, args.latency)
    print(f"\nend:     {load_line()}")


def report(runs: dict[tuple[str, int], list[Run]], workload: Workload,
           concurrencies: Sequence[int], latency: float) -> None:
    rows, ratios = [], []
    for concurrency in concurrencies:
        ideal = workload.calls * latency / concurrency
        cdk, hw = runs[("cdk", concurrency)], runs[("headwater", concurrency)]
        cdk_wall = median([r.wall_s for r in cdk])
        cdk_reading = median([r.reading_s for r in cdk])
        hw_wall = median([r.wall_s for r in hw])
        hw_inner = median([r.inner_s or 0.0 for r in hw])
        hw_reading = median([r.reading_s for r in hw])
        for label, group, wall, inner, reading in (
                ("airbyte-cdk read (baseline)", cdk, cdk_wall, None, cdk_reading),
                ("headwater sync", hw, hw_wall, hw_inner, hw_reading)):
            mean_in_flight = median([r.calls * latency / r.reading_s for r in group])
            rows.append([concurrency, label, len(group), f"{wall:.2f}",
                         f"{inner:.2f}" if inner is not None else "-", f"{reading:.2f}",
                         max(r.calls for r in group), max(r.peak_in_flight for r in group),
                         f"{mean_in_flight:.1f}",
                         f"{ideal:.2f}", f"{ideal / wall:.2f}",
                         f"{ideal / inner:.2f}" if inner is not None else "-",
                         f"{ideal / reading:.2f}"])
        ratios.append([concurrency, f"{cdk_wall / hw_wall:.2f}x", f"{cdk_wall / hw_inner:.2f}x",
                       f"{cdk_reading / hw_reading:.2f}x", f"{ideal / hw_inner:.2f}",
                       f"{ideal / hw_reading:.2f}"])
    print()
    print(table(["concurrency", "command", "n", "median wall s", "median inner s",
                 "median reading s", "calls", "peak in flight", "mean in flight (reading)",
                 "ideal s", "ideal / wall",
                 "ideal / inner", "ideal / reading"], rows))
    print()
    print(table(["concurrency", "Headwater / CDK cold (CLI wall)",
                 "Headwater inner / CDK wall", "reading window (CDK / Headwater)",
                 "Headwater share of ideal (inner)", "Headwater share of ideal (reading)"],
                ratios))


if __name__ == "__main__":
    main()
