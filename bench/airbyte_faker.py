"""Faker users through a whole ``headwater sync`` command into Delta, against the connector alone.

The runs, per ``--users`` size, in one invocation so they share the machine's load
(each ``--repeat`` times, medians reported):

1. baseline: the connector alone, ``source-faker read`` of the users stream into
   /dev/null (a process of its own, as a user would run it);
2. Headwater: ``headwater sync FILE --json`` of the ``airbyte`` source type into a
   Delta table on ``local[*]`` Spark, a new process each time, timed from start to
   exit: CLI start, the connector's spec and discover, Spark's start (JVM
   included), plan, read, decode, write and commit.  The spec and the catalog are
   kept next to the venv (``catalog_max_age_minutes``, default 15): the baseline
   run discovers first, so these syncs plan with the kept catalog, as a sync
   repeated within the limit does (``--catalog-max-age 0``: discover before
   every sync, as before).  Its ``--json`` document gives
   the inner figures: the engine's run (plan to last commit, without the CLI's and
   Spark's start) and the stream's read + commit;
3. PyAirbyte's default cache (DuckDB) loading the same records, for comparison
   (only with ``--pyairbyte``, and when its venv exists).

``--cpu`` also reads each run's CPU-seconds from /proc (:mod:`bench._proc_cpu`): per
process (connector, Spark's JVM, Python workers, CLI) and, inside the JVM, per kind
of thread (GC, JIT compilers, tasks, ...), medians and ranges of the repeats.  CPU
barely moves with the machine's load, so these compare driver JVM options on a busy
machine where wall time cannot.  ``--variant 'LABEL;KEY=VALUE;...'`` runs the
Headwater syncs again with those ``headwater sync --conf`` pairs, interleaved with
the default runs (e.g. ``--variant 'serial GC;spark.driver.extraJavaOptions=-XX:+UseSerialGC'``);
a ``file:KEY=VALUE`` pair sets the connection file's ``spark`` section instead (e.g.
``--variant 'equal priority;file:early_reads_jvm_nice=0'``).

The faker package is installed by Headwater's own code (``ConnectorEnv.ensure``,
into the connectors cache) the first time.  Figures are records/s and ratios
(throughput of the run / throughput of the baseline; > 1 means faster than the
connector alone).  Usage::

    .venv/bin/python bench/airbyte_faker.py --users 200000,1000000 --repeat 3
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

from bench._common import REPO, header, load_line, median, scratch_dir, table
from bench._proc_cpu import TreeCpu

FAKER = {"package": "airbyte-source-faker", "version": "7.2.1"}
#: The steps of ``steps_s`` that come before the engine's run.
BEFORE_THE_RUN = ("cli_start", "cli_setup", "spark_session")
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


#: One run's CPU-seconds: per process kind, and per JVM thread kind (``jvm: `` prefixed).
Cpu = dict[str, float]


def _run_measured(command: list[str], cpu: bool, root_kind: str = "CLI (headwater sync)",
                  **kwargs: object) -> tuple[subprocess.CompletedProcess[str], Cpu]:
    """``subprocess.run`` with, when ``cpu``, the CPU-seconds of its process tree."""
    if not cpu:
        return subprocess.run(command, check=False, **kwargs), {}  # type: ignore[call-overload]
    with subprocess.Popen(command, **kwargs) as process:  # type: ignore[call-overload]
        poller = TreeCpu(process.pid, root_kind=root_kind)
        out, err = process.communicate()
        poller.stop()
    figures = {**poller.by_kind, **{f"jvm: {k}": v for k, v in poller.jvm_threads.items()}}
    figures["total"] = sum(poller.by_kind.values())
    return subprocess.CompletedProcess(command, process.returncode, out, err), figures


def connector_read(config: dict[str, object], folder: Path, out: Path | None = None,
                   cpu: bool = False) -> tuple[float, dict[str, object], Cpu]:
    """Seconds of the connector's ``read`` of users into ``out`` (or /dev/null), the schema
    and, with ``cpu``, the read's CPU-seconds."""
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
        done, figures = _run_measured(
            [*source.env.command(), "read", "--config", str(folder / "config.json"),
             "--catalog", str(folder / "catalog.json")],
            cpu, "connector", stdout=sink, env=connector_environment())
    done.check_returncode()
    return time.monotonic() - started, users.json_schema, figures


def headwater_cli_sync(config: dict[str, object], folder: Path, mode: str,
                       users: int, catalog_max_age: float | None = None,
                       conf: list[str] | None = None, cpu: bool = False,
                       ) -> tuple[float, float, float, dict[str, float], Cpu]:
    """One ``headwater sync --json`` process in a new folder: wall, run and stream seconds,
    its seconds per step (``steps_s``) and, with ``cpu``, its CPU-seconds."""
    import yaml

    folder.mkdir(parents=True)
    target = "overwrite" if mode == "full_refresh" else "append"
    document = {
        "name": f"bench-{mode}",
        "source": {"type": "airbyte", "config": {
            **FAKER, "config": config,
            **({} if catalog_max_age is None else {"catalog_max_age_minutes": catalog_max_age})}},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "streams": [{"name": "users", "sync_mode": mode, "destination_sync_mode": target}],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
    }
    # ``file:KEY=VALUE`` pairs are the connection file's ``spark`` settings, not ``--conf``.
    in_file = [pair[len("file:"):].split("=", 1) for pair in conf or [] if pair.startswith("file:")]
    if in_file:
        document["spark"] = {key: yaml.safe_load(value) for key, value in in_file}
    conf = [pair for pair in conf or [] if not pair.startswith("file:")]
    connection = folder / "bench.yaml"
    connection.write_text(yaml.safe_dump(document))
    env = {**os.environ, "HEADWATER_HOME": str(folder / ".headwater"),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                       os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    extra = [part for pair in conf or [] for part in ("--conf", pair)]
    done, figures = _run_measured(
        [sys.executable, "-m", "headwater.cli.app", "sync", str(connection), "--json", *extra],
        cpu, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"headwater sync exited {done.returncode}:\n{done.stdout}\n"
                         f"{done.stderr[-3000:]}")
    result = json.loads(done.stdout)
    (stream,) = result["streams"]
    if result["status"] != "succeeded" or stream["records_written"] != users:
        raise SystemExit(f"unexpected sync result: {result}")
    return (wall, float(result["duration_s"]), float(stream["duration_s"]),
            dict(result.get("steps_s") or {}), figures)


def pyairbyte_load(config: dict[str, object], folder: Path) -> tuple[float, int] | None:
    from headwater.connectors.airbyte import ConnectorEnv, envs_root
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


def _variants(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(label, ``--conf`` pairs) of each kind of Headwater run: the default, then ``--variant``s."""
    runs: list[tuple[str, list[str]]] = [("", [])]
    for variant in args.variant:
        label, *pairs = variant.split(";")
        runs.append((f" [{label}]", [pair for pair in pairs if pair]))
    return runs


def cpu_rows(label: str, runs: list[Cpu]) -> list[list[object]]:
    """Median (min..max) CPU-seconds per process and JVM thread kind over ``runs``."""
    kinds = sorted({kind for run in runs for kind in run},
                   key=lambda k: (k == "total", k.startswith("jvm: "), k))
    rows: list[list[object]] = []
    for kind in kinds:
        values = [run.get(kind, 0.0) for run in runs]
        rows.append([label, kind, f"{median(values):.2f}",
                     f"{min(values):.2f}..{max(values):.2f}", len(values)])
    return rows


def measure(users: int, args: argparse.Namespace, folder: Path,
            cpu_table: list[list[object]]) -> list[list[object]]:
    config = {"count": users, "seed": 1, "records_per_slice": 1000,
              "parallelism": args.parallelism, "always_updated": False}

    def row(run: str, seconds: float, baseline: float) -> list[object]:
        return [run, users, f"{seconds:.1f}", f"{users / seconds:,.0f}",
                f"{baseline / seconds:.2f}x"]

    alone_runs = [connector_read(config, folder, cpu=args.cpu) for _ in range(args.repeat)]
    alone = median([run[0] for run in alone_runs])
    rows = [row("connector read > /dev/null (baseline)", alone, alone)]
    if args.cpu:
        cpu_table += cpu_rows(f"{users:,} connector alone", [run[2] for run in alone_runs])
    variants = _variants(args)
    for mode in args.modes.split(","):
        runs: dict[str, list[tuple[float, float, float, dict[str, float], Cpu]]] = {
            label: [] for label, _ in variants}
        for n in range(args.repeat):  # interleaved, so the machine's load falls on each alike
            for v, (label, conf) in enumerate(variants):
                runs[label].append(headwater_cli_sync(
                    config, folder / f"{users}-{mode}-{v}-{n}", mode, users,
                    args.catalog_max_age, conf, args.cpu))
        for label, done in runs.items():
            wall, inner, stream = (median([r[i] for r in done]) for i in range(3))
            steps = {name: median([r[3].get(name, 0.0) for r in done]) for name in done[0][3]}
            rows += [row(f"Headwater {mode}{label}: whole `headwater sync` command", wall,
                         alone),
                     row(f"Headwater {mode}{label}: inner (the engine's run: plan to commit)",
                         inner, alone),
                     row(f"Headwater {mode}{label}: the stream's read + commit", stream, alone),
                     [f"  (before the run: CLI, spec, discover, Spark start: {wall - inner:.1f} s)",
                      "", "", "", ""],
                     ["  (steps, medians: " + ", ".join(
                         f"{name} {seconds:.2f} s" for name, seconds in steps.items()
                         if name in BEFORE_THE_RUN) + ")", "", "", "", ""]]
            if args.cpu:
                cpu_table += cpu_rows(f"{users:,} Headwater {mode}{label}",
                                      [r[4] for r in done])
    if args.pyairbyte:
        loaded = pyairbyte_load(config, Path(tempfile.mkdtemp(dir=folder)))
        if loaded is not None:
            seconds, records = loaded
            rows.append(row("PyAirbyte read into its default DuckDB cache", seconds, alone)
                        if records == users else ["PyAirbyte: wrong count", records, "", "", ""])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="200000,1000000",
                        help="comma-separated sizes (users per run)")
    parser.add_argument("--parallelism", type=int, default=2, help="faker's worker processes")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, medians shown")
    parser.add_argument("--modes", default="full_refresh",
                        help="comma-separated sync modes of the Headwater runs "
                             "(full_refresh: overwrite; incremental: append, from no state)")
    parser.add_argument("--catalog-max-age", type=float, default=None,
                        help="the source's catalog_max_age_minutes (0: discover before "
                             "every sync; default: the source's default)")
    parser.add_argument("--pyairbyte", action="store_true",
                        help="also time PyAirbyte's DuckDB cache (needs its test venv)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument("--cpu", action="store_true",
                        help="also report CPU-seconds per process and JVM thread kind (/proc)")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL;KEY=VALUE;...",
                        help="also run the syncs with these `headwater sync --conf` pairs "
                             "(repeatable; interleaved with the default runs)")
    args = parser.parse_args()
    header("Airbyte faker users: `headwater sync` vs the connector alone", sys.argv)
    rows: list[list[object]] = []
    cpu_table: list[list[object]] = []
    with scratch_dir("hw-bench-airbyte-", keep=args.keep) as folder:
        for users in (int(size) for size in args.users.split(",")):
            (folder / str(users)).mkdir()
            rows += measure(users, args, folder / str(users), cpu_table)
    print(table(["run", "records", "seconds", "records/s", "vs baseline"], rows))
    if cpu_table:
        print("\nCPU-seconds (user + sys, from /proc), medians and ranges of the runs:\n")
        print(table(["run", "process / JVM thread kind", "CPU s", "range", "runs"], cpu_table))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    main()
