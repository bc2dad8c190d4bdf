"""SIGKILL a sync where it hurts, resume it, and find the table equal to the source.

The guarantee under test (DESIGN.md, "Exactly once"): a run killed at any
point and then resumed lands every row of the source once, none missing and
none twice.  Each test runs the real CLI as a subprocess, kills it (with a
named fault point, or from outside while it reads; the ``_in_process`` tests
simulate the kill, see the tests' section), runs it again, and
compares the table with :meth:`SampleSource.expected_rows`: a Delta table, or
(the ``iceberg-`` cases) an Iceberg table read with PyIceberg's own client.

``incremental`` + ``append`` is the strictest mode: a checkpoint committed
twice shows up as rows twice.  For ``append_dedup`` and ``overwrite`` a
repeated commit would not show in the data, so the Delta log is checked too:
each planned checkpoint of the run has exactly one tagged commit (an
``overwrite``, which stages its checkpoints: exactly one commit publishing them
all, and until then the table's old rows; on Iceberg each checkpoint is one
snapshot carrying its marker, on the staging branch for an overwrite).

Neither shows *which* guard kept a repeated commit out: on Delta a resumed
attempt's lookup of the checkpoint's commit marker, before reading it, and
Delta's (or delta-rs's) skip of a commit whose ``txnAppId``/``txnVersion`` the
table holds both do.  So each resumed attempt must also have recorded that it
found, by their markers, exactly the checkpoints the killed one had committed
and not released (``found_committed``): with the lookup answering nothing,
these tests fail, on Delta too.

The sync that resumes also syncs what is new, in a run of its own, in the same
command (issue 20): one test lands new rows between the kill and that sync. The
syncs that resume a killed run, and the syncs before and after, run the same command
in the test process (``_in_process``): the kill is what needs a process of its own
(a CLI process that resumes, syncs anew and ends: ``test_cluster_s3``'s resumes).

The source is small (8,000 rows in 8 partitions, 4 checkpoints in 2 lanes):
the cost of a sync here is Spark's per-job overhead, not rows, and the
machine running the suite is small and shared.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from headwater.metadata_store import MetadataStore
from tests._faults import BLIND_LOOKUP
from tests.integration._cli import (
    HOME,
    ICEBERG,
    READING_PAUSE,
    CliResult,
    IcebergTable,
    Location,
    assert_appended_history,
    assert_each_checkpoint_committed_once,
    assert_found_committed,
    assert_table_equals_source,
    expected_rows,
    kill_cli,
    published_commits,
    read_table,
    run_cli,
    start_cli,
    store,
    sync_runs,
    table_location,
    tagged_commits,
    write_connection,
)
from tests.integration._in_process import run_in_process
from tests.integration._side_by_side import Scenarios, SideBySide

pytestmark = [pytest.mark.crash, pytest.mark.spark]

NAME = "crashy"
STREAM = "users"
UPDATES, NEW = 30, 20
SOURCE: dict[str, Any] = {
    "seed": 11,
    "users": 8_000,
    "orders": 0,
    "rows_per_partition": 1_000,
    "updates_per_generation": UPDATES,
    "new_per_generation": NEW,
}
CHECKPOINT = {"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2}
PLANNED_CHECKPOINTS = 4
STREAMS: dict[str, dict[str, Any]] = {
    "append": {
        "name": STREAM,
        "sync_mode": "incremental",
        "destination_sync_mode": "append",
        "cursor_field": "updated_at",
    },
    "append_dedup": {
        "name": STREAM,
        "sync_mode": "incremental",
        "destination_sync_mode": "append_dedup",
        "cursor_field": "updated_at",
        "primary_key": ["id"],
    },
    "overwrite": {
        "name": STREAM,
        "sync_mode": "full_refresh",
        "destination_sync_mode": "overwrite",
    },
    "history": {
        "name": STREAM,
        "sync_mode": "incremental",
        "destination_sync_mode": "history",
        "cursor_field": "updated_at",
        "primary_key": ["id"],
    },
}
KILLED = -signal.SIGKILL
#: The moment :func:`killed_after_a_delta_commit_before_its_state` kills at.
AFTER_THE_THIRD_COMMIT = "after-commit:3"
#: The sync modes every kill below covers; ``history`` is killed after a commit only
#: (:data:`HISTORY_KINDS`).
MODES = ("append", "append_dedup", "overwrite")
#: The connections the crash tests kill: a sync mode on Delta, or ``iceberg-`` and one on
#: Iceberg.
KINDS = [*MODES, *(f"iceberg-{mode}" for mode in MODES)]
#: A history stream killed after a commit and before its state (issue 38): its MERGE must
#: close and open nothing twice.  (On Iceberg the two halves of that moment are proven
#: apart: the resumed attempt finds a landed checkpoint by its marker in the destination
#: kit's kill after a commit, ``test_conformance_iceberg``, and a history checkpoint
#: committed again, under its own marker and as another run's, changes nothing in
#: ``destinations/test_history.py``.)
HISTORY_KINDS = ["history"]
#: A kind of :func:`killed_after_a_delta_commit_before_its_state` only: ``append`` on Delta
#: through Spark's writer (``auto`` has the tasks write a local table's files).
SPARK_APPEND = "spark-append"


@dataclass
class Connection:
    """One test's connection: the sample source in one sync mode, in ``tmp_path``."""

    tmp_path: Path
    mode: str
    writer: str | None = None
    #: ``delta`` or ``iceberg``: the destination the connection lands in.
    kind: str = "delta"
    #: Run each command in the test process, a kill simulated (``_in_process``), not a CLI.
    in_process: bool = False
    #: Whether :func:`resume` may run its sync in the test process (a cluster's may not).
    resumes_in_process: ClassVar[bool] = True

    @classmethod
    def of(cls, tmp_path: Path, kind_and_mode: str, in_process: bool = False) -> Connection:
        """``append`` (on Delta), ``iceberg-append`` or ``spark-append`` (on Delta through
        Spark's writer), as :data:`KINDS` and :data:`SPARK_APPEND` name them."""
        kind, _, mode = kind_and_mode.rpartition("-")
        if kind == "spark":
            return cls(tmp_path, mode, writer="spark", in_process=in_process)
        return cls(tmp_path, mode, kind=kind or "delta", in_process=in_process)
    #: What each generation changes, in place of ``SOURCE``'s.
    changes: dict[str, int] | None = None

    def source(self, generation: int = 0) -> dict[str, Any]:
        return {**SOURCE, **(self.changes or {}), "generation": generation}

    def write(self, generation: int = 0) -> Path:
        return write_connection(
            self.tmp_path,
            name=NAME,
            source=self.source(generation),
            streams=[STREAMS[self.mode]],
            checkpoint=CHECKPOINT,
            writer=self.writer,
            destination=ICEBERG if self.kind == "iceberg" else None,
        )

    def sync(self, generation: int = 0, fault: str | None = None,
             in_process: bool | None = None) -> CliResult:
        """``headwater sync --json``: a CLI process, or (``in_process``, by default the
        connection's) the same command in the test process, a kill fault simulated."""
        env = {"HEADWATER_FAULT": fault} if fault else None
        args = ("sync", str(self.write(generation)), "--json")
        if self.in_process if in_process is None else in_process:
            return run_in_process(self.tmp_path, *args, env=env)
        return run_cli(self.tmp_path, *args, env=env)

    def start(self, generation: int = 0) -> subprocess.Popen[str]:
        return start_cli(self.tmp_path, "sync", str(self.write(generation)), "--json",
                         env=READING_PAUSE)

    @property
    def location(self) -> Location:
        if self.kind == "iceberg":
            return IcebergTable(self.tmp_path, STREAM)
        return table_location(self.tmp_path, STREAM)


def crashed_run(conn: Connection, result: CliResult) -> str:
    """Assert the sync died by SIGKILL and left its run unfinished; return the run id."""
    assert result.exit_code == KILLED, result.describe()
    run = store(conn.tmp_path).find_unfinished_run(NAME)
    assert run is not None, "a killed sync must leave its run unfinished"
    return run.run_id


def landed_checkpoints(conn: Connection, run_id: str,
                       opened: MetadataStore | None = None) -> list[int]:
    """Indices the metadata store (``opened``, else the connection's) knows were committed
    (or released) in this run."""
    return [
        c.index
        for c in (opened or store(conn.tmp_path)).list_checkpoints(run_id)
        if c.stream == STREAM and c.status in ("committed", "released")
    ]


def staged_checkpoints(conn: Connection, run_id: str) -> set[int]:
    """The checkpoints of an overwrite run staged by the task path (Delta: its manifests;
    Iceberg: the snapshots of its staging branch)."""
    if isinstance(conn.location, IcebergTable):
        return set(conn.location.staged(run_id))
    folder = Path(conn.location) / "_headwater_staging" / run_id
    return {int(p.stem) for p in folder.glob("*.json")} if folder.is_dir() else set()


def unreleased_in_table(spark: Any, conn: Connection, run_id: str) -> set[int]:
    """The checkpoints killed attempts committed to the table (an overwrite: staged) and did
    not release: the next attempt runs them again, and must find each by its marker."""
    if conn.mode == "overwrite":
        in_table = staged_checkpoints(conn, run_id)
    else:
        in_table = set(tagged_commits(spark, conn.location, run_id, STREAM))
    return in_table - store(conn.tmp_path).released_indices(run_id, STREAM)


def resume(spark: Any, conn: Connection, run_id: str, attempt: int, generation: int = 0,
           fault: str | None = None) -> None:
    """Run the sync again, no fault (or ``fault``): it must resume the run and land the
    source exactly.

    Then the same command runs a new run for what is new: nothing here for an
    incremental stream (the source did not change since the crash); a full
    refresh reads the whole source again (and lands the same table).
    """
    # In the test process where it can be (what is proved here is the resume, not the
    # process's end); a cluster's driver stays a CLI process (``OnCluster``).
    result = (conn.sync(generation, fault=fault, in_process=True) if conn.resumes_in_process
              else conn.sync(generation, fault=fault))
    assert result.exit_code == 0, result.describe()
    resumed, new = sync_runs(result)
    assert resumed["status"] == "succeeded"
    assert resumed["resumed"] is True
    assert resumed["run_id"] == run_id
    assert resumed["attempt"] == attempt
    assert (new["status"], new["resumed"], new["attempt"]) == ("succeeded", False, 1)
    again = expected_rows(conn.source(generation), STREAM).num_rows
    # The run's figures, every attempt's: the killed run planned the whole source.
    assert resumed["streams"][0]["records_written"] == again
    assert new["run_id"] != run_id
    assert new["streams"][0]["records_written"] == (again if conn.mode == "overwrite" else 0)
    assert store(conn.tmp_path).find_unfinished_run(NAME) is None
    assert_table_equals_source(spark, conn.location, conn.source(generation), STREAM)
    assert_each_checkpoint_committed_once(spark, conn.location, conn.tmp_path, run_id, STREAM,
                                          published=conn.mode == "overwrite")


def next_generation(spark: Any, conn: Connection, run_id: str) -> None:
    """After the resumed run, the next sync reads exactly what changed since (generation 1)."""
    result = conn.sync(generation=1, in_process=True)
    assert result.exit_code == 0, result.describe()
    document = result.document
    assert document is not None, result.describe()
    assert document["resumed"] is False
    assert document["run_id"] != run_id
    written = document["streams"][0]["records_written"]
    if conn.mode == "overwrite":
        assert written == SOURCE["users"] + NEW
        assert_table_equals_source(spark, conn.location, conn.source(1), STREAM)
    elif conn.mode == "append":
        assert written == UPDATES + NEW
        assert_appended_history(spark, conn.location, conn.source(0), conn.source(1), STREAM)
    elif conn.mode == "history":
        assert written == UPDATES + NEW
        assert_appended_history(spark, conn.location, conn.source(0), conn.source(1), STREAM)
        assert_versions_in_turn(spark, conn.location, conn.source(1))
    else:
        assert written == UPDATES + NEW
        assert_table_equals_source(spark, conn.location, conn.source(1), STREAM)


def assert_versions_in_turn(spark: Any, location: Location, source: dict[str, Any]) -> None:
    """A history table: its current versions are the source's rows, each version begins
    at its ``updated_at`` (the cursor is a time) and ends where the key's next begins."""
    expected = expected_rows(source, STREAM)
    validity = ["_hw_valid_from", "_hw_valid_to", "_hw_is_current"]
    table = read_table(spark, location, [*expected.column_names, *validity])
    current = table.filter(table.column("_hw_is_current"))
    columns = expected.column_names
    assert Counter(zip(*(current.column(c).to_pylist() for c in columns), strict=True)) == \
        Counter(zip(*(expected.column(c).to_pylist() for c in columns), strict=True))
    versions: dict[int, list[tuple[int, int | None, int]]] = {}
    for key, begins, ends, at in zip(*(table.column(c).to_pylist() for c in (
            "id", "_hw_valid_from", "_hw_valid_to", "updated_at")), strict=True):
        versions.setdefault(key, []).append((begins, ends, at))
    for key, chain in versions.items():
        chain.sort()
        assert all(begins == at for begins, _, at in chain), (key, chain)
        assert [ends for _, ends, _ in chain] == [b for b, _, _ in chain[1:]] + [None], (key, chain)


def kill_while_reading(
    conn: Connection,
    process: subprocess.Popen[str],
    *,
    after: int,
    delay_s: float,
    whole_group: bool = False,
) -> CliResult:
    """SIGKILL a running sync once its run has ``after`` checkpoints committed, plus a delay.

    The delay lands the kill somewhere in the reading (and writing) of the
    next checkpoints, different per test but the same on every run of it.
    """
    db = conn.tmp_path / HOME / "headwater.db"
    deadline = time.monotonic() + 600
    opened = None  # one store for the whole wait, not one (and its schema check) per look
    while True:
        assert process.poll() is None, "the sync ended before it could be killed"
        assert time.monotonic() < deadline, "the sync committed nothing in 600 s"
        if opened is None and db.exists():
            opened = store(conn.tmp_path)
        run = opened.find_unfinished_run(NAME) if opened is not None else None
        if run is not None and len(landed_checkpoints(conn, run.run_id, opened)) >= after:
            break
        time.sleep(0.1)
    if opened is not None:
        opened.close()
    time.sleep(delay_s)
    return kill_cli(process, whole_group=whole_group)


# --------------------------------------------------------------------------- scenarios
# Each is the case of the test of its name below; the module's cases run two at a time
# (``_side_by_side``): each has its own folder, metadata store and table.


def killed_after_a_delta_commit_before_its_state(spark: Any, tmp_path: Path, kind: str,
                                                  in_process: bool = False) -> None:
    """The third checkpoint's commit is in the table, the store does not know: resume skips it.

    An overwrite stages its checkpoints instead: the third is staged, the
    table's readers see none of them, and the resumed run publishes them once.

    What keeps a repeated commit out, per kind: the resumed attempt's lookup of
    each checkpoint's commit marker (the tag in the commit) before reading it,
    and then, on Delta, the ``txnAppId``/``txnVersion`` pair, which makes Delta
    (or delta-rs) skip the commit of a checkpoint read again.  Iceberg has only
    the markers; Spark's writer has the pair, but a write it skips runs no job
    whose figures the engine could wait for.  So the table's history (each
    checkpoint once) is not proof of the lookup on Delta: the resumed run's
    record is (:func:`assert_found_committed`).
    """
    connection = Connection.of(tmp_path, kind, in_process)
    run_id = crashed_run(connection, connection.sync(fault=AFTER_THE_THIRD_COMMIT))
    known = set(landed_checkpoints(connection, run_id))
    unreleased = unreleased_in_table(spark, connection, run_id)
    if connection.mode == "overwrite":
        assert tagged_commits(spark, connection.location, run_id, STREAM) == Counter()
        assert read_table(spark, connection.location, ["id"]).num_rows == 0
        in_delta = staged_checkpoints(connection, run_id)
    else:
        in_delta = set(tagged_commits(spark, connection.location, run_id, STREAM))
    assert len(in_delta) >= 3
    assert known < in_delta, f"Delta holds {in_delta}, the store should know fewer: {known}"

    resume(spark, connection, run_id, attempt=2)
    # Found by their markers, read no more: what the killed attempt had committed (or
    # staged) and not released.  Each is in the table once (``resume``).
    assert unreleased, f"the third commit must be unreleased: {sorted(in_delta)}"
    assert_found_committed(tmp_path, run_id, STREAM, unreleased)
    if kind != SPARK_APPEND:  # the other append kinds test the next sync: one sync less
        next_generation(spark, connection, run_id)


def killed_after_a_commit_then_resumed_without_the_lookup(spark: Any, tmp_path: Path,
                                                          in_process: bool = False) -> None:
    """Delta's guard alone: the resumed attempt's marker lookup is blinded (a test-only
    fault), so it reads the unreleased checkpoint again, and delta-rs skips its commit by its
    ``txnAppId``/``txnVersion``: still each checkpoint once, and none found by its marker.

    The other guard of :func:`killed_after_a_delta_commit_before_its_state`, proved apart.
    """
    conn = Connection(tmp_path, "append", in_process=in_process)
    run_id = crashed_run(conn, conn.sync(fault="after-commit:3"))
    unreleased = unreleased_in_table(spark, conn, run_id)
    assert unreleased, "the third commit must be unreleased"

    resume(spark, conn, run_id, attempt=2, fault=BLIND_LOOKUP)
    assert_found_committed(tmp_path, run_id, STREAM, set())
    ran = {c.index: c.stats for c in store(tmp_path).list_checkpoints(run_id)
           if c.stream == STREAM}
    for index in unreleased:  # read again, then found in the table when delta-rs skipped it
        assert (ran[index]["attempt"], ran[index]["already_committed"]) == (2, True), ran[index]


def killed_after_a_state_release(spark: Any, tmp_path: Path, mode: str,
                                 in_process: bool = False) -> None:
    """State of two checkpoints is released; the resumed attempt runs only the rest."""
    conn = Connection(tmp_path, mode, in_process=in_process)
    run_id = crashed_run(conn, conn.sync(fault="after-release:2"))
    released = store(tmp_path).released_indices(run_id, STREAM)
    # Two at least; a third where the other lane released its checkpoint between the
    # second release and the kill (a real SIGKILL can land there too); never all of them.
    assert 2 <= len(released) < PLANNED_CHECKPOINTS, (
        f"two or three released checkpoints expected, got {sorted(released)}")
    assert store(tmp_path).get_state(NAME, STREAM) is not None

    resume(spark, conn, run_id, attempt=2)


def killed_after_the_plan(spark: Any, tmp_path: Path, in_process: bool = False) -> None:
    """The plan is persisted, nothing was read: the resumed run executes that same plan."""
    conn = Connection(tmp_path, "append", in_process=in_process)
    run_id = crashed_run(conn, conn.sync(fault="after-plan"))
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    assert len(run.plan["streams"][0]["checkpoints"]) == PLANNED_CHECKPOINTS
    assert landed_checkpoints(conn, run_id) == []

    resume(spark, conn, run_id, attempt=2)


def killed_while_reading(spark: Any, tmp_path: Path, kind: str) -> None:
    """Killed from outside at an arbitrary moment after the first commit."""
    connection = Connection.of(tmp_path, kind)
    delay_s = random.Random(f"while-reading-{connection.mode}").uniform(0.0, 2.0)
    process = connection.start()
    result = kill_while_reading(connection, process, after=1, delay_s=delay_s)
    run_id = crashed_run(connection, result)
    unreleased = unreleased_in_table(spark, connection, run_id)  # none, if the kill was early

    resume(spark, connection, run_id, attempt=2)
    assert_found_committed(tmp_path, run_id, STREAM, unreleased)


#: The driver's moments after a checkpoint's commit where a simulated kill may land.
MOMENTS_AFTER_A_COMMIT = ("after-commit", "after-release")


def moment_after_the_first_commit(kind: str) -> str:
    """The moment :func:`killed_at_a_moment_after_the_first_commit` kills ``kind`` at:
    chosen per kind, the same on every run."""
    chosen = random.Random(f"after-the-first-commit-{kind}")
    return f"{chosen.choice(MOMENTS_AFTER_A_COMMIT)}:{chosen.randint(2, PLANNED_CHECKPOINTS - 1)}"


def killed_at_a_moment_after_the_first_commit(spark: Any, tmp_path: Path, kind: str) -> None:
    """The in-process twin of :func:`killed_while_reading`: a kill simulated at a moment
    after the first commit, chosen per kind (the same on every run), not at a time."""
    connection = Connection.of(tmp_path, kind, in_process=True)
    fault = moment_after_the_first_commit(kind)
    run_id = crashed_run(connection, connection.sync(fault=fault))
    unreleased = unreleased_in_table(spark, connection, run_id)

    resume(spark, connection, run_id, attempt=2)
    assert_found_committed(tmp_path, run_id, STREAM, unreleased)


def a_full_refresh_killed_after_its_first_staged_checkpoint_keeps_the_old_rows(
        spark: Any, tmp_path: Path, writer: str, in_process: bool = False) -> None:
    """Readers see the previous sync's rows until the resumed run publishes, once."""
    conn = (Connection(tmp_path, "overwrite", kind="iceberg", in_process=in_process)
            if writer == "iceberg"
            else Connection(tmp_path, "overwrite", writer=writer, in_process=in_process))
    assert conn.sync(in_process=True).exit_code == 0
    assert_table_equals_source(spark, conn.location, conn.source(0), STREAM)

    run_id = crashed_run(conn, conn.sync(generation=1, fault="after-commit:1"))
    assert_table_equals_source(spark, conn.location, conn.source(0), STREAM)
    assert published_commits(spark, conn.location, run_id, STREAM) == []

    resume(spark, conn, run_id, attempt=2, generation=1)
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    [stream] = run.stats["streams"]
    assert stream["published_version"] is not None


def killed_twice_then_resumed(spark: Any, tmp_path: Path) -> None:
    """Killed after a Delta commit, then (the whole machine, as it were) while resuming.

    The first kill is simulated in the test process: a real SIGKILL after a commit is
    :func:`killed_after_a_delta_commit_before_its_state`'s; what only a process proves here
    is the second, the whole process group of the resuming sync killed from outside.
    """
    conn = Connection(tmp_path, "append")
    run_id = crashed_run(conn, conn.sync(fault="after-commit:2", in_process=True))
    first = landed_checkpoints(conn, run_id)

    process = conn.start()
    result = kill_while_reading(conn, process, after=len(first) + 1, delay_s=0.5, whole_group=True)
    assert crashed_run(conn, result) == run_id
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    assert [a.number for a in run.attempts] == [1, 2]

    resume(spark, conn, run_id, attempt=3)
    next_generation(spark, conn, run_id)


def one_sync_after_a_kill_finishes_the_run_then_syncs_what_arrived_since(
        spark: Any, tmp_path: Path) -> None:
    """Killed while reading; new rows arrive; one ``sync`` lands the killed run's rest *and*
    the new rows, in two runs, each row once (``append``: a row twice would show).

    Before issue 20 the sync stopped after the resumed run and the new rows
    waited for one more sync.  No updates, only new ids, so the table must
    equal the newer world exactly, whatever the killed attempt had committed.

    The kill is simulated in the test process, after a commit the store does not know of
    (a real SIGKILL while reading is :func:`killed_while_reading`'s), and the sync that
    resumes and continues runs the CLI's command in the test process too: what a process of
    its own adds, that it ends once both runs are done, is proved by every resume of
    ``test_cluster_s3``'s killed syncs (a CLI process that resumes the killed run, syncs
    anew and ends) and by ``engine/test_cli_sync_end.py``.
    """
    arrived = 2_000
    conn = Connection(tmp_path, "append",
                      changes={"updates_per_generation": 0, "new_per_generation": arrived})
    run_id = crashed_run(conn, conn.sync(fault="after-commit:2", in_process=True))

    result = conn.sync(generation=1, in_process=True)
    assert result.exit_code == 0, result.describe()
    resumed, new = sync_runs(result)
    assert (resumed["run_id"], resumed["resumed"], resumed["attempt"], resumed["status"]) == (
        run_id, True, 2, "succeeded")
    assert (new["resumed"], new["attempt"], new["status"]) == (False, 1, "succeeded")
    assert new["run_id"] != run_id
    assert new["streams"][0]["records_written"] == arrived
    assert_table_equals_source(spark, conn.location, conn.source(1), STREAM)
    for each in (run_id, new["run_id"]):
        assert_each_checkpoint_committed_once(spark, conn.location, tmp_path, each, STREAM)

    listed = run_in_process(tmp_path, "runs", "--connection", NAME, "--json")
    assert listed.exit_code == 0 and listed.document is not None, listed.describe()
    assert [(r["run_id"], r["status"], r["attempts"]) for r in listed.document["runs"]] == [
        (new["run_id"], "succeeded", 1), (run_id, "succeeded", 2)]


# --------------------------------------------------------------------------- tests
# A real SIGKILL of a real `headwater sync` on Delta (the side-by-side cases): after a
# commit, while reading (from outside, at a time), while resuming (the whole process group),
# and Iceberg's full refresh's; the rest of the matrix (the other moments, sync modes, Delta's
# staged full refresh, Spark's writer) with the kill simulated in the
# test process (the `_in_process` tests below): the same scenarios and assertions, without
# a JVM start per command.

SCENARIOS: Scenarios = {
    "test_killed_after_a_delta_commit_before_its_state":
        killed_after_a_delta_commit_before_its_state,
    "test_killed_while_reading": killed_while_reading,
    "test_a_full_refresh_killed_after_its_first_staged_checkpoint_keeps_the_old_rows":
        a_full_refresh_killed_after_its_first_staged_checkpoint_keeps_the_old_rows,
    "test_killed_twice_then_resumed": killed_twice_then_resumed,
}
#: The kinds a real kill covers per moment: ``append`` on Delta.  Iceberg's real kill is the
#: full refresh's below (``iceberg``); every other destination has one of its own
#: (``tests/integration/destinations/*/test_*_killed.py``); the rest, in-process.
REAL_KINDS = ["append"]
#: The rest of the matrix, in-process.
SIMULATED_KINDS = [kind for kind in KINDS if kind not in REAL_KINDS]


@pytest.mark.parametrize("kind", REAL_KINDS)
def test_killed_after_a_delta_commit_before_its_state(
        cases: SideBySide, request: pytest.FixtureRequest, kind: str) -> None:
    cases.check(request.node.nodeid)


@pytest.mark.parametrize("kind", [*SIMULATED_KINDS, SPARK_APPEND, *HISTORY_KINDS])
def test_killed_after_a_commit_before_its_state_in_process(
        spark: Any, tmp_path: Path, kind: str) -> None:
    killed_after_a_delta_commit_before_its_state(spark, tmp_path, kind, in_process=True)


def test_killed_after_a_commit_then_resumed_without_the_lookup_in_process(
        spark: Any, tmp_path: Path) -> None:
    killed_after_a_commit_then_resumed_without_the_lookup(spark, tmp_path, in_process=True)


# A kill after a state release or after the plan, simulated: what a real kill adds (the
# store and the table as a dead process leaves them) is the real kill after a commit's.
@pytest.mark.parametrize("mode", ["append", "append_dedup"])
def test_killed_after_a_state_release_in_process(spark: Any, tmp_path: Path, mode: str) -> None:
    killed_after_a_state_release(spark, tmp_path, mode, in_process=True)


def test_killed_after_the_plan_in_process(spark: Any, tmp_path: Path) -> None:
    killed_after_the_plan(spark, tmp_path, in_process=True)


@pytest.mark.parametrize("kind", REAL_KINDS)
def test_killed_while_reading(cases: SideBySide, request: pytest.FixtureRequest,
                              kind: str) -> None:
    cases.check(request.node.nodeid)


# A kind whose chosen moment is the third commit's is already that test's case (above).
@pytest.mark.parametrize("kind", [kind for kind in SIMULATED_KINDS
                                  if moment_after_the_first_commit(kind) != AFTER_THE_THIRD_COMMIT])
def test_killed_at_a_moment_after_the_first_commit_in_process(
        spark: Any, tmp_path: Path, kind: str) -> None:
    killed_at_a_moment_after_the_first_commit(spark, tmp_path, kind)


# Iceberg's staging branch killed for real; Delta's staged files (the task path's and Spark's
# writer's) with the kill simulated: the same moment's real kill on Delta is the commit's above.
@pytest.mark.parametrize("writer", ["iceberg"])
def test_a_full_refresh_killed_after_its_first_staged_checkpoint_keeps_the_old_rows(
        cases: SideBySide, request: pytest.FixtureRequest, writer: str) -> None:
    cases.check(request.node.nodeid)


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_a_full_refresh_killed_after_its_first_staged_checkpoint_in_process(
        spark: Any, tmp_path: Path, writer: str) -> None:
    a_full_refresh_killed_after_its_first_staged_checkpoint_keeps_the_old_rows(
        spark, tmp_path, writer, in_process=True)


def test_killed_twice_then_resumed(cases: SideBySide, request: pytest.FixtureRequest) -> None:
    cases.check(request.node.nodeid)


def test_one_sync_after_a_kill_finishes_the_run_then_syncs_what_arrived_since(
        spark: Any, tmp_path: Path) -> None:
    one_sync_after_a_kill_finishes_the_run_then_syncs_what_arrived_since(spark, tmp_path)
