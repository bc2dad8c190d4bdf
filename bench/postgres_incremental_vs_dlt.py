"""PostgreSQL incremental -> Delta: Headwater, cold (CLI) and warm (``serve``), against dlt.

One table in the server ``scripts/postgres`` runs (bigint key, numeric,
timestamptz cursor ``placed_at`` with an index, jsonb, text, boolean; ``--rows``
rows).  Each tool syncs it once in full (its first sync, not timed in the
ratios), then, ``--repeat`` times: ``--new`` rows are inserted and each tool
runs one incremental sync of them.  Every incremental is checked: its Delta
table holds exactly ``rows + k * new`` rows after the k-th one.

* **dlt** (the baseline): ``bench/_dlt_incremental.py`` in its own venv
  (``bench/setup-alternatives dlt``): ``sql_table`` with
  ``dlt.sources.incremental("placed_at")``, ``backend="pyarrow"``, into the
  ``filesystem`` destination with ``table_format="delta"``, append.  A new
  process per sync: wall time from start to exit (``inner``: its
  ``pipeline.run``).
* **Headwater cold**: ``headwater sync FILE --json``, a new process per sync
  (Python start, imports, JVM start included), incremental + append on the
  same cursor.  ``inner``: the run's ``duration_s``.
* **Headwater warm**: one ``headwater serve DIR`` process for the whole
  benchmark; each sync is triggered the way serve runs one, by its
  ``schedule`` (the connection file is rewritten with a cron that fires two
  seconds ahead).  Wall time: from the firing to the run found finished in the
  metadata store (so it includes serve's poll of 0.1 s, opening the store and
  building the engine).  ``inner``: the run's own recorded start to end.

Ratios: dlt's median / Headwater's median (> 1 = Headwater faster); the
targets (issue 17) are warm >= 1.0 and cold >= 0.5.  With ``--steps`` the
cold CLI sync's own step timings (``--json``'s ``steps_s``) are printed too.

Run: ``.venv/bin/python bench/postgres_incremental_vs_dlt.py [--rows 2000000] [--new 100000]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import yaml
from _common import REPO, header, load_line, median, run_with_postgres, scratch_dir, table

PYTHON = REPO / ".venv" / "bin" / "python"
HEADWATER = REPO / ".venv" / "bin" / "headwater"
DLT_PYTHON = REPO / ".bench-venvs" / "dlt" / "bin" / "python"
TABLE = "incr_orders"


def insert(url: str, first: int, last: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"""
            INSERT INTO {TABLE}
            SELECT g, (g %% 100000) / 100.0, '2024-01-01'::timestamptz + g * interval '1 s',
                   jsonb_build_object('sku', 'sku-' || (g %% 5000), 'qty', g %% 7,
                                      'tags', jsonb_build_array('a', 'b')),
                   'order number ' || g, g %% 3 = 0
            FROM generate_series(%s::bigint, %s::bigint) g""", [first, last])
        conn.execute(f"ANALYZE {TABLE}")


def prepare(url: str, rows: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"""CREATE TABLE {TABLE} (id bigint PRIMARY KEY, amount numeric(12, 2),
                         placed_at timestamptz, payload jsonb, label text, paid boolean)""")
        conn.execute(f"CREATE INDEX ON {TABLE} (placed_at)")
    insert(url, 1, rows)


def delta_rows(folder: Path) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(str(folder)).to_pyarrow_dataset().count_rows())


def connection_doc(name: str, url: str, place: Path, schedule: str | None = None,
                   ) -> dict[str, Any]:
    parts = urlsplit(url)
    doc: dict[str, Any] = {
        "name": name,
        "source": {"type": "postgres", "config": {
            "host": parts.hostname, "port": parts.port, "database": "headwater",
            "username": "headwater", "password": "headwater", "sslmode": "disable",
            "cursor_fields": {TABLE: "placed_at"}}},
        "destination": {"type": "delta", "config": {"path": str(place / "lake")}},
        "streams": [{"name": TABLE, "sync_mode": "incremental",
                     "destination_sync_mode": "append", "cursor_field": "placed_at"}],
        "metadata_store": f"sqlite:///{place / 'meta.db'}",
    }
    if schedule:
        doc["schedule"] = schedule
    return doc


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} exited {done.returncode}:\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-4000:]}")
    return seconds, done.stdout


class Dlt:
    def __init__(self, url: str, place: Path, env: dict[str, str], backend: str) -> None:
        parts = urlsplit(url)
        self.command = [str(DLT_PYTHON), str(REPO / "bench" / "_dlt_incremental.py"),
                        "--url", f"postgresql+psycopg2://headwater:headwater@{parts.hostname}:"
                        f"{parts.port}/headwater", "--table", TABLE, "--cursor", "placed_at",
                        "--lake", str(place / "lake"), "--pipelines-dir",
                        str(place / "pipelines"), "--backend", backend]
        self.env = {**env, "RUNTIME__LOG_LEVEL": "WARNING"}
        self.table = place / "lake" / "bench" / TABLE

    def sync(self) -> tuple[float, float]:
        wall, out = run(self.command, self.env)
        result = json.loads(out.strip().splitlines()[-1])
        if result["failed"]:
            raise SystemExit(f"dlt failed: {result}")
        return wall, float(result["run_s"])


class Cold:
    def __init__(self, url: str, place: Path, env: dict[str, str]) -> None:
        place.mkdir()
        self.file = place / "cold.yaml"
        self.file.write_text(yaml.safe_dump(connection_doc("hw_cold", url, place)))
        self.env = env
        self.table = place / "lake" / TABLE
        self.steps: list[dict[str, float]] = []

    def sync(self) -> tuple[float, float]:
        wall, out = run([str(HEADWATER), "sync", str(self.file), "--json"], self.env)
        result = json.loads(out)
        if result["status"] != "succeeded":
            raise SystemExit(f"headwater sync: {result}")
        self.steps.append(result.get("steps_s") or {})
        return wall, float(result["duration_s"])


class Warm:
    """One ``headwater serve`` process; each sync fired by rewriting its schedule."""

    def __init__(self, url: str, place: Path, env: dict[str, str]) -> None:
        from headwater.metadata_store import MetadataStore

        self.url, self.place = url, place
        self.folder = place / "served"
        self.folder.mkdir(parents=True)
        self.file = self.folder / "warm.yaml"
        self.table = place / "lake" / TABLE
        self.log = (place / "serve.log").open("w")
        self.process = subprocess.Popen(
            [str(HEADWATER), "serve", str(self.folder), "--poll", "0.1"], env=env,
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.store = MetadataStore(f"sqlite:///{place / 'meta.db'}")

    def sync(self) -> tuple[float, float]:
        known = {r.run_id for r in self.store.list_runs("hw_warm", limit=1000)}
        fire = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
        schedule = f"{fire.minute} {fire.hour} {fire.day} {fire.month} * {fire.second}"
        self.file.write_text(yaml.safe_dump(connection_doc("hw_warm", self.url, self.place,
                                                           schedule)))
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"headwater serve exited {self.process.returncode}; see "
                                 f"{self.log.name}")
            runs = [r for r in self.store.list_runs("hw_warm", limit=5)
                    if r.run_id not in known]
            if runs and runs[0].status != "running":
                break
            time.sleep(0.02)
        seen = datetime.now(UTC)
        record = runs[0]
        if record.status != "succeeded":
            raise SystemExit(f"served run {record.run_id}: {record.status} {record.error}")
        inner = (_utc(record.ended_at) - _utc(record.started_at)).total_seconds()
        return (seen - fire).total_seconds(), inner

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.store.close()
        self.log.close()


def _utc(moment: Any) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the first sync")
    parser.add_argument("--new", type=int, default=100_000, help="new rows per incremental")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dlt-backend", default="pyarrow",
                        choices=["pyarrow", "sqlalchemy", "pandas", "connectorx"])
    parser.add_argument("--steps", action="store_true",
                        help="print the cold sync's step timings (median per step)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if not DLT_PYTHON.exists():
        raise SystemExit("dlt's venv is missing: run bench/setup-alternatives dlt")
    header("PostgreSQL incremental -> Delta: Headwater cold (CLI) and warm (serve) vs dlt",
           [Path(sys.executable).name, *sys.argv])
    url = subprocess.run([str(REPO / "scripts" / "postgres"), "start"], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    began = time.perf_counter()
    prepare(url, args.rows)
    print(f"table ready in {time.perf_counter() - began:.1f} s ({args.rows:,} rows)")
    with scratch_dir("hw-bench-pg-incr-", keep=args.keep) as scratch:
        env = {**os.environ, "PYSPARK_PYTHON": str(PYTHON), "PYSPARK_DRIVER_PYTHON": str(PYTHON),
               "HEADWATER_HOME": str(scratch / ".headwater"),
               # The code of this checkout, whichever checkout the venv was installed from.
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                           os.environ.get("PYTHONPATH")]))}
        tools: dict[str, Any] = {"dlt": Dlt(url, scratch / "dlt", env, args.dlt_backend),
                                 "headwater cold (CLI)": Cold(url, scratch / "cold", env),
                                 "headwater warm (serve)": Warm(url, scratch / "warm", env)}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
        try:
            for name, tool in tools.items():
                wall, inner = tool.sync()
                count = delta_rows(tool.table)
                print(f"first sync, {name}: {wall:.1f} s wall, {inner:.1f} s inner, "
                      f"{count:,} rows", flush=True)
                assert count == args.rows, f"{name} landed {count} rows, expected {args.rows}"
            for number in range(1, args.repeat + 1):
                first = args.rows + (number - 1) * args.new + 1
                insert(url, first, first + args.new - 1)
                expected = args.rows + number * args.new
                for name, tool in tools.items():
                    wall, inner = tool.sync()
                    count = delta_rows(tool.table)
                    assert count == expected, f"{name} holds {count} rows, expected {expected}"
                    times[name].append((wall, inner))
                print(f"  incremental {number}: " + ", ".join(
                    f"{name} {values[-1][0]:.2f}/{values[-1][1]:.2f} s"
                    for name, values in times.items()) + f"   ({load_line()})", flush=True)
        finally:
            warm = tools["headwater warm (serve)"]
            warm.close()
        base_wall = median([w for w, _ in times["dlt"]])
        base_inner = median([i for _, i in times["dlt"]])
        rows = []
        for name, values in times.items():
            wall, inner = median([w for w, _ in values]), median([i for _, i in values])
            rows.append([name, len(values), f"{wall:.2f}", f"{inner:.2f}",
                         f"{args.new / wall:,.0f}", f"{base_wall / wall:.2f}x",
                         f"{base_inner / inner:.2f}x"])
        print()
        print(f"incremental of {args.new:,} new rows after {args.rows:,}, medians of "
              f"{args.repeat}; ratio = dlt / tool (> 1 = faster than dlt); targets: warm >= "
              "1.0, cold >= 0.5")
        print(table(["tool", "n", "wall s", "inner s", "rows/s (wall)", "vs dlt (wall)",
                     "vs dlt (inner)"], rows))
        steps = tools["headwater cold (CLI)"].steps[1:]
        if args.steps and any(steps):
            names = list(dict.fromkeys(k for s in steps for k in s))
            print("\ncold CLI incremental, steps (median s; `headwater sync --json` steps_s):")
            print(table(["step", "median s"],
                        [[k, f"{median([s.get(k, 0.0) for s in steps]):.3f}"] for k in names]))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    run_with_postgres(main)
