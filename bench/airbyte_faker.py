"""Faker users through Headwater into Delta, against the connector's own ``read``.

Three runs of the same records (``airbyte-source-faker`` users, fixed seed), in one
invocation so they share the machine's load:

1. baseline: ``source-faker read`` of the users stream into /dev/null;
2. Headwater: a sync of the ``airbyte`` source type into a Delta table on local
   Spark (the stream's read+commit time, and the whole sync including the
   connector's ``discover``), once per ``--modes`` entry: ``full_refresh``
   (overwrite: no state to carry) and ``incremental`` (append from no state: the
   same records, plus the connector's state carried to the commit);
3. PyAirbyte's default cache (DuckDB) loading the same records, for comparison
   (skipped with ``--skip-pyairbyte`` or when its venv is absent).

The first Delta sync in a new JVM also pays a one-time warm-up (class loading,
JIT compilation on the cores the connector needs): about 15-20 s here, so the
mode that runs first looks slower.  ``--warmup-users N`` syncs N users first,
untimed, to measure the steady state.

Figures are records/s and ratios against the baseline.  Usage::

    .venv/bin/python bench/airbyte_faker.py --users 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import header, load_line, scratch_dir, table

FAKER = {"package": "airbyte-source-faker", "version": "7.2.1"}
PYAIRBYTE_SCRIPT = """
import json, sys, time
import airbyte as ab
source = ab.get_source("source-faker", local_executable=sys.argv[1],
                       config=json.loads(sys.argv[2]), streams=["users"])
started = time.monotonic()
result = source.read(cache=ab.new_local_cache(cache_name="bench", cache_dir=sys.argv[3]))
print(json.dumps({"seconds": time.monotonic() - started,
                  "records": result.processed_records}))
"""


def connector_read(config: dict[str, object], folder: Path, out: Path | None = None,
                   ) -> tuple[float, dict[str, object]]:
    """Seconds of the connector's ``read`` of users into ``out`` (or /dev/null); the schema."""
    from headwater.connectors.airbyte import AirbyteSource
    from headwater.connectors.airbyte._process import connector_environment

    source = AirbyteSource({**FAKER, "config": config})
    users = next(s for s in source.catalog().streams if s.name == "users")
    catalog = {"streams": [{"stream": users.model_dump(mode="json", exclude_none=True),
                            "sync_mode": "full_refresh", "destination_sync_mode": "append"}]}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "catalog.json").write_text(json.dumps(catalog))
    started = time.monotonic()
    with open(out or os.devnull, "w") as sink:
        subprocess.run([*source.env.command(), "read", "--config", str(folder / "config.json"),
                        "--catalog", str(folder / "catalog.json")],
                       stdout=sink, check=True, env=connector_environment())
    return time.monotonic() - started, users.json_schema


def headwater_sync(config: dict[str, object], folder: Path,
                   mode: str) -> tuple[float, float, int]:
    import yaml

    from headwater.config import load_connection
    from headwater.engine import SparkSettings, SyncEngine, SyncOptions, get_spark
    from headwater.metadata_store import MetadataStore

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = SparkSettings(master="local[*]", app_name="bench-airbyte",
                             jvm_log_path=folder / "spark.log")
    get_spark(settings)  # the JVM starts before the clock does
    target = "overwrite" if mode == "full_refresh" else "append"
    document = {
        "name": f"bench-{mode}",
        "source": {"type": "airbyte", "config": {**FAKER, "config": config}},
        "destination": {"type": "delta", "config": {"path": str(folder / f"lake-{mode}")}},
        "streams": [{"name": "users", "sync_mode": mode, "destination_sync_mode": target}],
        "metadata_store": f"sqlite:///{folder / f'meta-{mode}.db'}",
    }
    (folder / f"bench-{mode}.yaml").write_text(yaml.safe_dump(document))
    connection = load_connection(folder / f"bench-{mode}.yaml")
    started = time.monotonic()
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        SyncOptions(spark=settings)).run()
    total = time.monotonic() - started
    (users,) = result.streams
    if result.status != "succeeded":
        raise SystemExit(f"sync failed: {users.error}")
    return total, users.duration_s, users.records_written


def pyairbyte_load(config: dict[str, object], folder: Path) -> tuple[float, int] | None:
    from headwater.connectors.airbyte import ConnectorEnv, envs_root

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.integration.interop.pyairbyte_env import (
        PYAIRBYTE_VERSION,
        READY,
        pyairbyte_environment,
    )

    venv = Path.home() / ".cache" / "headwater" / "test-envs" / f"pyairbyte-{PYAIRBYTE_VERSION}"
    if not (venv / READY).exists():
        return None
    env = ConnectorEnv(package=FAKER["package"], version=FAKER["version"], root=str(envs_root()))
    done = subprocess.run([str(venv / "bin" / "python"), "-c", PYAIRBYTE_SCRIPT,
                           str(env.venv / "bin" / env.script), json.dumps(config),
                           str(folder / "pyairbyte")],
                          capture_output=True, text=True, check=True, cwd=folder,
                          env=pyairbyte_environment())
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["seconds"]), int(figures["records"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--parallelism", type=int, default=2, help="faker's worker processes")
    parser.add_argument("--skip-pyairbyte", action="store_true")
    parser.add_argument("--modes", default="full_refresh,incremental",
                        help="comma-separated sync modes of the Headwater runs")
    parser.add_argument("--warmup-users", type=int, default=0,
                        help="first sync this many users (untimed) in the same JVM, so the "
                             "timed syncs do not pay the JVM's and Delta's one-time warm-up")
    args = parser.parse_args()
    header("Airbyte faker users: Headwater vs the connector alone", sys.argv)
    config = {"count": args.users, "seed": 1, "records_per_slice": 1000,
              "parallelism": args.parallelism, "always_updated": False}
    with scratch_dir("hw-bench-airbyte-") as folder:
        alone, _ = connector_read(config, folder)
        rows = [["connector read > /dev/null (baseline)", args.users, f"{alone:.1f}",
                 f"{args.users / alone:,.0f}", "1.00x"]]
        if args.warmup_users:
            warmup = {**config, "count": args.warmup_users}
            (folder / "warmup").mkdir()
            headwater_sync(warmup, folder / "warmup", args.modes.split(",")[0])
        for mode in args.modes.split(","):
            total, stream_s, written = headwater_sync(config, folder, mode)
            rows += [[f"Headwater {mode}: stream (read + Delta commit)", written,
                      f"{stream_s:.1f}", f"{written / stream_s:,.0f}",
                      f"{alone / stream_s:.2f}x"],
                     [f"Headwater {mode}: whole sync (+ discover, plan)", written,
                      f"{total:.1f}", f"{written / total:,.0f}", f"{alone / total:.2f}x"]]
        if not args.skip_pyairbyte:
            loaded = pyairbyte_load(config, Path(tempfile.mkdtemp(dir=folder)))
            if loaded is not None:
                seconds, records = loaded
                rows.append(["PyAirbyte read into its default DuckDB cache", records,
                             f"{seconds:.1f}", f"{records / seconds:,.0f}",
                             f"{alone / seconds:.2f}x"])
    print(table(["run", "records", "seconds", "records/s", "speed vs baseline"], rows))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    main()
