"""Drive ``headwater`` as a real subprocess, and check what it landed against the source.

The crash and cluster tests must run the CLI in its own process: a SIGKILL has
to hit a whole sync (driver, Spark JVM, Python workers), and a cluster's
executors must receive partitions pickled by a driver that is not the test.

Layout of one test's folder (the CLI's working directory)::

    tmp_path/
      <name>.yaml        the connection, written by :func:`write_connection`
      .headwater/        HEADWATER_HOME: metadata store (headwater.db), logs/spark.log
      lakehouse/<stream> the Delta tables
      warehouse/         the Iceberg tables, in the default (hadoop) catalog's layout (``ICEBERG``)

Every CLI process starts in a new session (its own process group), so the JVM
that PySpark launches, and the Python workers that JVM forks, can be awaited
and, as a last resort, killed with it after the driver was killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors.sample import SampleSource
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

#: The console script of the venv the tests run in.
HEADWATER = str(Path(sys.executable).with_name("headwater"))
#: The clone, on the path of a CLI started through ``tests/_faulty_cli.py``.
REPO = Path(__file__).resolve().parents[2]
HOME = ".headwater"
LAKEHOUSE = "lakehouse"
WAREHOUSE = "warehouse"
#: The destination section of a connection that lands in Iceberg (the embedded catalog).
ICEBERG: Mapping[str, Any] = {"type": "iceberg", "config": {"warehouse": WAREHOUSE}}
#: One sync of a few thousand rows takes well under a minute alone; the machine is shared.
SYNC_TIMEOUT_S = 900.0
#: How long the JVM of a killed driver may take to notice (stdin EOF) and exit.
ORPHAN_EXIT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CliResult:
    """How one CLI process ended: its exit code (``-9``: SIGKILL) and its ``--json`` document."""

    exit_code: int
    document: dict[str, Any] | None
    stdout: str
    stderr: str

    def describe(self) -> str:
        """Everything needed to see why a run failed, for assertion messages."""
        return (
            f"exit code {self.exit_code}\n--- stdout ---\n{self.stdout[-4000:]}\n"
            f"--- stderr ---\n{self.stderr[-4000:]}"
        )


def write_connection(
    tmp_path: Path,
    *,
    source: Mapping[str, Any],
    streams: Sequence[Mapping[str, Any]],
    name: str = "crashy",
    checkpoint: Mapping[str, Any] | None = None,
    writer: str | None = None,
    destination: Mapping[str, Any] | None = None,
) -> Path:
    """Write a ``sample`` -> Delta connection file into ``tmp_path`` and return its path.

    Paths inside it are relative: the CLI runs with ``tmp_path`` as its working
    directory, exactly as a user would run it from a project folder.  Writing
    again with another ``source`` (say, a later ``generation``) keeps the name,
    hence the state and the tables.  ``writer`` is the Delta destination's;
    ``destination`` a whole section in its place (:data:`ICEBERG`).
    """
    return connection_file(tmp_path, name=name, source=source, streams=streams,
                           lake=LAKEHOUSE, store_file=None, checkpoint=checkpoint,
                           writer=writer, destination=destination)


#: Faults a test asks :func:`start_cli` for, by these keys of its ``env``: they are
#: installed by the test-only entry point ``tests/_faulty_cli.py`` (see ``tests/_faults.py``),
#: never passed to the process, whose engine reads no fault from its environment.
FAULT, PAUSE = "HEADWATER_FAULT", "HEADWATER_FAULT_PAUSE"
#: A sync a test kills "while it reads": each task waits 1 s per partition, so the
#: sync is still reading when the kill comes, whatever the machine's speed.
READING_PAUSE = {PAUSE: "reading:1"}


def cli_env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: this one, with its home in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if k != "HEADWATER_METADATA_STORE"}
    env["HEADWATER_HOME"] = str(tmp_path / HOME)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.update(extra or {})
    return env


def start_cli(
    tmp_path: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``headwater ARGS`` in ``tmp_path``, in a process group of its own.

    ``env`` keys :data:`FAULT` and :data:`PAUSE` start it through the faulty entry
    point instead, with those faults installed.
    """
    extra = dict(env or {})
    faults = [f"--fault={extra.pop(FAULT)}"] if FAULT in extra else []
    faults += [f"--pause={extra.pop(PAUSE)}"] if PAUSE in extra else []
    command = [HEADWATER, *args]
    if faults:
        command = [sys.executable, "-m", "tests._faulty_cli", *faults, "--", *args]
        extra["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO),
                                                            os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        env=cli_env(tmp_path, extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish_cli(process: subprocess.Popen[str], timeout: float = SYNC_TIMEOUT_S) -> CliResult:
    """Wait for a CLI process, then for the rest of its process group; parse its JSON."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"headwater did not finish in {timeout:.0f} s\n{stderr[-4000:]}"
        ) from None
    wait_for_group_exit(process.pid)
    return CliResult(process.returncode, json_document(stdout), stdout, stderr)


def json_document(stdout: str) -> dict[str, Any] | None:
    """The ``--json`` document a command printed, if it printed one."""
    if not stdout.strip():
        return None
    try:
        document: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    return document


def run_cli(
    tmp_path: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = SYNC_TIMEOUT_S,
) -> CliResult:
    """Run ``headwater ARGS`` to its end (see :func:`start_cli`, :func:`finish_cli`)."""
    return finish_cli(start_cli(tmp_path, *args, env=env), timeout)


def sync(
    tmp_path: Path, connection: Path, *extra: str, env: Mapping[str, str] | None = None
) -> CliResult:
    """``headwater sync CONNECTION --json EXTRA...``."""
    return run_cli(tmp_path, "sync", str(connection), "--json", *extra, env=env)


def sync_runs(result: CliResult) -> list[dict[str, Any]]:
    """The documents of the runs one ``sync --json`` ran, oldest first: a run it resumed,
    then the new one (or the one run).  Checks the shape: the top level is the newest."""
    document = result.document
    assert document is not None, result.describe()
    runs: list[dict[str, Any]] = document["runs"]
    assert runs and {**runs[-1], "runs": runs} == document, "the top level is the newest run"
    return runs


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        # fields: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def wait_for_group_exit(pgid: int, timeout: float = ORPHAN_EXIT_TIMEOUT_S) -> None:
    """Wait until nothing of a CLI's process group runs any more.

    A driver killed alone leaves its JVM behind for a moment (it exits when its
    stdin, the driver's pipe, closes).  Resuming while it still runs would be a
    real-world race too, but the tests want the crash, then the resume.  After
    ``timeout`` the group is killed: those are processes this test started.
    """
    deadline = time.monotonic() + timeout
    while _group_members(pgid):
        if time.monotonic() > deadline:
            _kill_group(pgid)
            time.sleep(1.0)
            return
        time.sleep(0.2)


def kill_cli(process: subprocess.Popen[str], *, whole_group: bool = False) -> CliResult:
    """SIGKILL a running CLI: its driver only (a crashed driver), or its whole process
    group (driver, JVM and Python workers at once: a machine that died)."""
    if whole_group:
        _kill_group(process.pid)
    else:
        process.send_signal(signal.SIGKILL)
    return finish_cli(process, timeout=ORPHAN_EXIT_TIMEOUT_S)


def store(tmp_path: Path) -> MetadataStore:
    """The CLI's embedded metadata store in ``tmp_path`` (the file must exist)."""
    return MetadataStore(f"sqlite:///{tmp_path / HOME / 'headwater.db'}")


def planned_partitions(tmp_path: Path, run_id: str) -> int:
    """How many partitions run ``run_id`` (of the CLI's store in ``tmp_path``) planned."""
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    return sum(len(c["partitions"]) for s in run.plan["streams"] for c in s["checkpoints"])


def table_location(tmp_path: Path, stream: str) -> str:
    return str(tmp_path / LAKEHOUSE / stream)


def hadoop_table(folder: Path) -> Any:
    """The table in ``folder`` laid out by the default (hadoop) catalog, read with PyIceberg's
    ``StaticTable`` from its highest ``v<N>.metadata.json``: no Headwater code on the way,
    not even the catalog's reading of its version hint."""
    from pyiceberg.table import StaticTable

    newest = max((folder / "metadata").glob("v*.metadata.json"),
                 key=lambda p: int(p.name[1:].split(".", 1)[0]))
    return StaticTable.from_metadata(newest.as_uri())


@dataclass(frozen=True)
class IcebergTable:
    """A stream's table in the :data:`ICEBERG` warehouse of ``tmp_path``, read with PyIceberg.

    The tests' own catalog client, not the destination's: what any Iceberg
    reader of that catalog sees.
    """

    tmp_path: Path
    stream: str

    def load(self) -> Any:
        return hadoop_table(self.tmp_path / WAREHOUSE / "headwater" / self.stream)

    def read(self, columns: Sequence[str]) -> pa.Table:
        """``main``'s rows (what readers see), timestamps as microseconds (:func:`read_table`)."""
        rows = self.load().scan(selected_fields=tuple(columns)).to_arrow()
        return pa.table([pc.cast(pc.cast(rows.column(c), pa.timestamp("us", "UTC")), pa.int64())
                         if pa.types.is_timestamp(rows.schema.field(c).type) else rows.column(c)
                         for c in columns], names=list(columns))

    def tags(self, *, on_main: bool = True) -> list[dict[str, Any]]:
        """The ``headwater`` part of each snapshot's tag, newest first: of the snapshots
        ``main`` went through (the table's commits), or else of every snapshot the table
        holds (staging branches' too)."""
        from pyiceberg.table.snapshots import ancestors_of

        table = self.load()
        snapshots = (list(ancestors_of(table.current_snapshot(), table.metadata)) if on_main
                     else sorted(table.snapshots(), key=lambda s: -(s.sequence_number or 0)))
        tags = []
        for snapshot in snapshots:
            tag = snapshot.summary.additional_properties.get("headwater.tag") \
                if snapshot.summary is not None else None
            if tag:
                tags.append(json.loads(tag).get("headwater", {}))
        return tags

    def staged(self, run_id: str) -> Counter[int]:
        """How many snapshots carry each checkpoint of the run, on any branch (a staged
        overwrite's are on its staging branch, or were until it published)."""
        return Counter(int(t["checkpoint"]) for t in self.tags(on_main=False)
                       if t.get("run_id") == run_id and t.get("stream") == self.stream
                       and "checkpoint" in t)

    def branches(self) -> set[str]:
        return set(self.load().metadata.refs)


#: Where a test's table is: a Delta table's folder, or an Iceberg table.
Location = str | IcebergTable


# --------------------------------------------------------------------------- checks


def read_table(spark: Any, location: Location, columns: Sequence[str]) -> pa.Table:
    """The table's ``columns`` as Arrow, timestamps as microseconds since the epoch.

    Comparing integers keeps the check free of time-zone conversions between
    Spark, Arrow and Python.  A Delta table is read with Spark, an Iceberg one
    with PyIceberg.
    """
    from pyspark.sql import functions as F

    if isinstance(location, IcebergTable):
        return location.read(columns)

    frame = spark.read.format("delta").load(location)
    kinds = dict(frame.dtypes)
    selected = [F.unix_micros(c).alias(c) if kinds[c] == "timestamp" else F.col(c) for c in columns]
    return frame.select(*selected).toArrow()


def expected_rows(source: Mapping[str, Any], stream: str) -> pa.Table:
    """What the source holds now, timestamps as microseconds (see :func:`read_table`)."""
    table = SampleSource(dict(source)).expected_rows(stream)
    columns = [
        pc.cast(table.column(name), pa.int64())
        if pa.types.is_timestamp(table.schema.field(name).type)
        else table.column(name)
        for name in table.column_names
    ]
    return pa.table(columns, names=table.column_names)


def _rows(table: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def assert_table_equals_source(
    spark: Any, location: Location, source: Mapping[str, Any], stream: str
) -> None:
    """The table holds exactly the source's rows: each id once, every value equal.

    The message names missing and doubled ids, which is what a broken
    exactly-once guarantee looks like.
    """
    expected = expected_rows(source, stream)
    actual = read_table(spark, location, expected.column_names)
    ids = Counter(actual.column("id").to_pylist())
    doubled = sorted(i for i, n in ids.items() if n > 1)
    missing = sorted(set(expected.column("id").to_pylist()) - set(ids))
    extra = sorted(set(ids) - set(expected.column("id").to_pylist()))
    assert not doubled, f"{len(doubled)} ids twice or more, first: {doubled[:10]}"
    assert not missing, f"{len(missing)} ids missing, first: {missing[:10]}"
    assert not extra, f"{len(extra)} ids the source does not have, first: {extra[:10]}"
    assert actual.num_rows == expected.num_rows
    differ = _rows(actual, expected.column_names) - _rows(expected, expected.column_names)
    assert not differ, f"{len(differ)} rows differ from the source, e.g. {list(differ)[:3]}"


def assert_appended_history(
    spark: Any, location: Location, before: Mapping[str, Any], after: Mapping[str, Any], stream: str
) -> None:
    """An append table after syncs at ``before`` then ``after``: every version once.

    It holds the world at ``before`` plus exactly the rows ``after`` changed or
    added (each at its new version), nothing twice; deduplicated by the latest
    ``updated_at`` it equals the world at ``after``.
    """
    old = expected_rows(before, stream)
    new = expected_rows(after, stream)
    columns = new.column_names
    wanted = _rows(old, columns) + (_rows(new, columns) - _rows(old, columns))
    actual = _rows(read_table(spark, location, columns), columns)
    doubled = [row for row, n in actual.items() if n > 1]
    assert not doubled, f"{len(doubled)} rows appended twice, e.g. {doubled[:3]}"
    assert not (wanted - actual), f"rows missing, e.g. {list(wanted - actual)[:3]}"
    assert not (actual - wanted), f"unexpected rows, e.g. {list(actual - wanted)[:3]}"


def _run_tags(spark: Any, location: Location, run_id: str,
              stream: str) -> list[dict[str, Any]]:
    """The ``headwater`` part of the tag of each commit of the run's stream, newest first.

    An Iceberg table's commits are the snapshots its ``main`` went through.
    """
    from delta.tables import DeltaTable

    if isinstance(location, IcebergTable):
        return [t for t in location.tags()
                if t.get("run_id") == run_id and t.get("stream") == stream]
    tags = []
    for row in DeltaTable.forPath(spark, location).history().select("userMetadata").collect():
        if not row["userMetadata"]:
            continue
        tag = json.loads(row["userMetadata"]).get("headwater", {})
        if tag.get("run_id") == run_id and tag.get("stream") == stream:
            tags.append(tag)
    return tags


def tagged_commits(spark: Any, location: Location, run_id: str, stream: str) -> Counter[int]:
    """How many commits of the Delta table carry each checkpoint index of the run."""
    return Counter(int(tag["checkpoint"]) for tag in _run_tags(spark, location, run_id, stream)
                   if "checkpoint" in tag)


def published_commits(spark: Any, location: Location, run_id: str, stream: str) -> list[list[int]]:
    """The checkpoints each commit publishing the run's staged overwrite lists."""
    return [list(tag["published"]) for tag in _run_tags(spark, location, run_id, stream)
            if "published" in tag]


def assert_each_checkpoint_committed_once(
    spark: Any, location: Location, tmp_path: Path, run_id: str, stream: str, *,
    published: bool | None = None,
) -> None:
    """Every planned checkpoint of the run has exactly one commit in the Delta log.

    Data alone cannot show a repeated MERGE or overwrite (the rows come out the
    same); the commit tags in the table's history can: a checkpoint whose
    commit a killed attempt had already made must have been skipped.  An
    overwrite of several checkpoints (``published``) commits none of them to the
    table: exactly one commit publishes them all.  ``published`` None: as the
    run's plan says (an ``overwrite`` stream of more than one checkpoint).
    """
    run = store(tmp_path).get_run(run_id)
    assert run is not None, f"no run {run_id} in the metadata store"
    [plan] = [s for s in run.plan["streams"] if s["stream"]["name"] == stream]
    planned = sorted(c["index"] for c in plan["checkpoints"])
    if published is None:
        published = (plan["stream"]["destination_sync_mode"] == "overwrite"
                     and len(planned) > 1 and not run.plan.get("replay_of"))
    commits = tagged_commits(spark, location, run_id, stream)
    if published:
        publishes = published_commits(spark, location, run_id, stream)
        assert [sorted(p) for p in publishes] == [planned], f"planned {planned}: {publishes}"
        assert not commits, f"staged checkpoints committed to the table: {commits}"
        if isinstance(location, IcebergTable):  # each staged once, its branch gone
            staged = location.staged(run_id)
            assert sorted(staged.elements()) == planned, f"planned {planned}, staged {staged}"
            assert location.branches() == {"main"}, location.branches()
        return
    assert sorted(commits) == planned, f"planned {planned}, committed {sorted(commits)}"
    repeated = {index: n for index, n in commits.items() if n > 1}
    assert not repeated, f"checkpoints committed more than once: {repeated}"


def assert_found_committed(tmp_path: Path, run_id: str, stream: str, expected: set[int], *,
                           attempt: int = 2) -> None:
    """The resumed ``attempt`` found exactly ``expected`` already committed (or staged) by
    the killed attempt, by their commit markers, before reading them, and recorded so
    (``found_committed`` in their checkpoints' figures).

    The table alone cannot tell this lookup from Delta's own ``txnAppId``/``txnVersion``
    check, which keeps a repeated commit out too (after reading the checkpoint again):
    this record can.  Every other checkpoint the attempt ran was read and committed.
    """
    ran = {c.index: c.stats for c in store(tmp_path).list_checkpoints(run_id)
           if c.stream == stream and c.stats.get("attempt") == attempt}
    found = {index for index, stats in ran.items() if stats.get("found_committed") is True}
    assert found == expected, (
        f"attempt {attempt} should have found {sorted(expected)} committed by their markers "
        f"before reading, found {sorted(found)}: "
        f"{ {i: s.get('found_committed') for i, s in sorted(ran.items())} }")
    for index in found:
        assert ran[index].get("already_committed") is True, ran[index]
