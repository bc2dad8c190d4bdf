"""The writer interface every destination implements.

Same shape as Spark's two-phase writes: executors produce the rows of one
checkpoint batch, the destination commits them in one transaction, and says
whether the commit happened now, had already happened in an earlier attempt,
or failed.  Each destination states its guarantee.

An ``overwrite`` run of more than one checkpoint must not show readers a
half-refreshed table, so its checkpoints are *staged* instead (durable, not
visible: :meth:`Destination.stage`, :meth:`Destination.stage_files`) and one
*publish* (:meth:`Destination.publish`) replaces the table's rows with all of
them once every checkpoint is staged.  A destination that cannot stage says so
(``stages_overwrites`` is False and those methods raise), and such an overwrite
fails before anything changes.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan


class FileWriter(Protocol):
    """What executors run around a checkpoint task's Arrow output (``Destination.file_writer``).

    Pickled to the executors with the task: plain values only.
    """

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows ``around`` yields, one per written file."""
        ...

    def around(self, task: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """``task``, with its batches written to files and the files described instead."""
        ...


@dataclass(frozen=True)
class CommitMarker:
    """Identifies one checkpoint's commit, durably, inside the destination.

    ``app_id``/``version`` are what an idempotent destination keys on (Delta's
    ``txnAppId``/``txnVersion``); ``tag`` is written with the commit so a resumed
    attempt can find out whether a killed attempt's commit landed.
    """

    app_id: str
    version: int
    run_id: str
    stream: str
    checkpoint_index: int
    #: Partition id -> the source's own state (``Stream.keeps_own_state``), carried
    #: in the tag so that the commit and the states it released are one atomic fact.
    partition_states: Mapping[str, Any] | None = None
    #: The run's attempt making the commit.  On attempt 1 nothing of the run can be
    #: in the table yet, so a ``version`` the table already holds for ``app_id`` was
    #: handed out again by a metadata store that went back in time, not committed
    #: by this run (:class:`~headwater.errors.StoreBehindTableError`).  Not in the tag.
    attempt: int = 1

    @property
    def tag(self) -> str:
        document: dict[str, Any] = {"headwater": {
            "run_id": self.run_id, "stream": self.stream, "checkpoint": self.checkpoint_index}}
        if self.partition_states is not None:
            document["partition_states"] = dict(self.partition_states)
        return json.dumps(document, sort_keys=True, separators=(",", ":"))

    def tag_with_counts(self, rows: int, rejected: int, size: int) -> str:
        """The tag, plus the commit's figures for writers whose log has no metrics of them."""
        return _with_counts(self.tag, rows, rejected, size)


def _with_counts(tag: str, rows: int, rejected: int, size: int) -> str:
    """``tag`` (a commit tag's JSON) with the commit's figures under ``counts``."""
    document = json.loads(tag)
    document["counts"] = {"rows": rows, "rejected": rejected, "bytes": size}
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _tagged(tag: str | None, key: str) -> dict[str, Any]:
    """The object under ``key`` in a commit's tag (``{}`` when there is none)."""
    try:
        document = json.loads(tag or "{}")
    except ValueError:
        return {}
    value = document.get(key) if isinstance(document, dict) else None
    return dict(value) if isinstance(value, dict) else {}


def tagged_partition_states(tag: str | None) -> dict[str, Any]:
    """The partition states a commit's tag carries (``{}`` when it carries none)."""
    return _tagged(tag, "partition_states")


def tagged_counts(tag: str | None) -> dict[str, int]:
    """The figures a commit's tag carries (``{}`` when it carries none)."""
    return {k: v for k, v in _tagged(tag, "counts").items() if isinstance(v, int)}


@dataclass(frozen=True)
class PublishMarker:
    """Identifies the one commit that publishes an overwrite run's staged checkpoints.

    ``app_id``/``version`` are the commit's idempotency pair: an app id of its own
    per stream (no checkpoint commits under it) and the run's last checkpoint
    index, which is larger than every index of every earlier run of the stream, so
    the versions under that app id only grow.  ``tag`` names the run, the stream
    and the checkpoints published (no ``checkpoint`` key: it is no checkpoint's
    commit), so a resumed attempt recognises a publish that already landed.
    """

    app_id: str
    version: int
    run_id: str
    stream: str
    checkpoints: tuple[int, ...]

    @property
    def tag(self) -> str:
        return json.dumps({"headwater": {"run_id": self.run_id, "stream": self.stream,
                                         "published": list(self.checkpoints)}},
                          sort_keys=True, separators=(",", ":"))

    def tag_with_counts(self, rows: int, rejected: int, size: int) -> str:
        """The tag, plus the commit's figures for writers whose log has no metrics of them."""
        return _with_counts(self.tag, rows, rejected, size)


def tagged_publish(tag: str | None) -> tuple[str, str, list[int]] | None:
    """The run, stream and checkpoints a publish commit's tag names (None: not a publish)."""
    ours = _tagged(tag, "headwater")
    published = ours.get("published")
    if not isinstance(published, list):
        return None
    return str(ours.get("run_id")), str(ours.get("stream")), [int(i) for i in published]


@dataclass(frozen=True)
class CommitResult:
    """What one checkpoint commit did."""

    rows: int
    rejected: int
    bytes: int
    version: int | None
    #: True when the commit had already landed in an earlier attempt.
    already_committed: bool = False
    #: Partition id -> the source's own state, for streams that keep one
    #: (``Stream.keeps_own_state``); filled by the engine from the commit's Spark job.
    partition_states: Mapping[str, Any] = field(default_factory=dict)
    #: Which writer committed it, a stable name per destination (Delta: ``"tasks+delta-rs"``
    #: for files the tasks wrote, added through delta-rs; ``"tasks+deletion-vectors"`` for a
    #: history commit of Headwater's own; ``"spark"`` for Spark's Delta writer); None when
    #: the destination does not say.  Recorded in the checkpoint's stats as ``writer`` and
    #: shown by ``headwater runs show``.
    writer: str | None = None
    #: Why that writer, in words (``"writer: spark in the destination's config"``,
    #: ``"table uses column mapping (delta.columnMapping.mode=name)"``...); recorded as
    #: ``writer_reason``.
    writer_reason: str | None = None


@dataclass(frozen=True)
class SparkRequirements:
    """What a destination needs of the Spark session its syncs run on.

    The engine starts the session with these (and checks a session it is given
    against them), so it knows no table format's jars or settings itself.
    """

    #: Maven coordinates for ``spark.jars.packages`` (resolved by Ivy, once).
    packages: tuple[str, ...] = ()
    #: Artifacts ``mvn dependency:copy`` fetches where Ivy cannot reach Maven Central
    #: (Maven copies no transitive dependencies, so each jar is named).
    maven_artifacts: tuple[str, ...] = ()
    #: Session settings: extensions, catalogs, the format's own tuning.
    conf: Mapping[str, str] = field(default_factory=dict)
    #: Settings only for a local master (where the driver's machine is the cluster).
    local_conf: Mapping[str, str] = field(default_factory=dict)
    #: Where a folder of already-fetched jars may live, named by file prefix
    #: (``delta-spark``): any folder with a jar of that prefix is used as is.
    jar_prefix: str = ""

    def merged(self, other: SparkRequirements) -> SparkRequirements:
        """Both destinations' needs (a session shared by connections of both)."""
        conf = dict(self.conf)
        for key, value in other.conf.items():
            if key == "spark.sql.extensions" and key in conf and value not in conf[key]:
                conf[key] = f"{conf[key]},{value}"
            else:
                conf.setdefault(key, value)
        return SparkRequirements(
            packages=tuple(dict.fromkeys(self.packages + other.packages)),
            maven_artifacts=tuple(dict.fromkeys(self.maven_artifacts + other.maven_artifacts)),
            conf=conf, local_conf={**other.local_conf, **self.local_conf},
            jar_prefix=self.jar_prefix or other.jar_prefix)


@dataclass(frozen=True)
class DestinationCapabilities:
    """What a destination can do and needs, declared once (in the spirit of dlt's
    destination capabilities): the engine reads these instead of knowing formats."""

    spark: SparkRequirements = field(default_factory=SparkRequirements)
    #: The destination sync modes it lands exactly as documented; a mode not named
    #: should be refused by its ``prepare`` (the conformance run,
    #: :mod:`headwater.destinations.testing`, reports one that works unannounced).
    sync_modes: tuple[str, ...] = ("overwrite", "append", "append_dedup")
    #: Commits of one table that may run side by side, by destination sync mode; a
    #: mode not named runs as many as the connection's ``concurrent_checkpoints``
    #: (Delta: MERGE commits of one table conflict, so ``append_dedup`` runs one).
    max_concurrent_commits: Mapping[str, int] = field(default_factory=dict)
    #: Whether tasks may write the table's files themselves (:meth:`Destination.file_writer`).
    task_written_files: bool = False
    #: Whether an overwrite of several checkpoints can be staged, then published in
    #: one commit (:meth:`Destination.stage`, :meth:`Destination.publish`).
    stages_overwrites: bool = False
    #: Whether a run's rows can be replaced atomically (``headwater replay``).
    replaces_run_rows: bool = False
    #: Whether ``partition_by`` may hold partition transforms (``days(ts)``,
    #: ``bucket(16, id)``: :mod:`headwater.partition_terms`), not only columns.
    partition_transforms: bool = False
    #: Whether ``cluster_by`` can be honoured (a destination that cannot refuses it).
    clusters_tables: bool = True
    #: Whether ``partition_by`` can be honoured: a destination whose tables have no
    #: partitions by column (a PostgreSQL table, a Kafka topic, a flat folder) has it
    #: refused before the sync rather than ignored.
    partitions_tables: bool = True
    #: Whether a stream's ``table_properties`` can be kept on its table (False: refused
    #: by :meth:`Destination.table_property_refusal`, rather than set nowhere).
    keeps_table_properties: bool = True
    #: What an ``append_dedup`` stream's ``deletes`` may be here; the first is what a
    #: stream that says nothing gets (a Kafka topic deletes a key only by a tombstone,
    #: which compaction removes the key with: ``("hard",)``).
    deletes: tuple[str, ...] = ("soft", "hard")
    #: The name under which a checkpoint's commit identifier (``CommitResult.version``)
    #: is recorded in the run's history and shown by the CLI.
    commit_id: str = "commit_version"

    def lanes(self, destination_sync_mode: str, wanted: int) -> int:
        """Commit lanes a stream of ``destination_sync_mode`` may run, of ``wanted``."""
        cap = self.max_concurrent_commits.get(destination_sync_mode)
        return wanted if cap is None else max(1, min(cap, wanted))


class Destination(ABC):
    """Writes streams into tables; one implementation per kind of destination."""

    type_name: ClassVar[str] = ""
    #: "exactly-once" or "at-least-once (deduplicated by primary key)".
    guarantee: ClassVar[str] = ""
    #: What it can do and needs (see :class:`DestinationCapabilities`).
    capabilities: ClassVar[DestinationCapabilities] = DestinationCapabilities()

    @property
    def stages_overwrites(self) -> bool:
        return self.capabilities.stages_overwrites

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    @abstractmethod
    def spec(cls) -> dict[str, Any]:
        """JSON Schema of the destination's config."""

    def check(self) -> None:
        """Prove, before any sync, that the destination is reachable and writable.

        What ``headwater check`` runs after the source's check.  Raises
        :class:`~headwater.errors.DestinationError` (or
        :class:`~headwater.errors.AuthenticationError` for refused credentials)
        with a message that says what to fix; must not start Spark and should
        leave nothing behind (a scratch table or file is removed again).

        The default checks nothing: a destination without a check of its own
        passes, and :meth:`check_skipped` says so.
        """
        return None

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        """Prove, before any sync, that each stream's existing table can take its rows.

        What ``headwater check`` runs after :meth:`check`, with each configured
        stream's data columns (what :meth:`prepare` is handed).  A table Headwater
        did not create must hold every value of the stream's columns
        (``_existing_table.py``), else a :class:`~headwater.errors.ConfigError`
        names the columns, both types and what to do, as the sync's ``prepare``
        would.  Starts no Spark; a table it cannot reach without Spark is not
        checked.  The default checks nothing.
        """
        return None

    @classmethod
    def table_property_refusal(cls, properties: Mapping[str, str]) -> str | None:
        """Why a stream's ``table_properties`` cannot be honoured here (None: they can).

        A property that tells the table's writers how to write (Iceberg's
        ``write.format.default``) but that this destination's own writer ignores
        would be set on the table while the files say otherwise, and would tell
        every later writer to do what this one does not: refused before anything
        runs (``headwater validate``, and every sync's start), naming the
        property.  The default refuses every property where the capabilities say the
        table keeps none (``keeps_table_properties``), else nothing.
        """
        if properties and not cls.capabilities.keeps_table_properties:
            return (f"table_properties: the {cls.type_name} destination's tables keep no "
                    f"properties, so {', '.join(sorted(properties))} would be set nowhere; "
                    "remove table_properties from the stream")
        return None

    def use_connection(self, name: str,
                       namespace_of: Callable[[str], str | None] | None = None) -> None:
        """Take the connection's name, and how to find a stream's namespace, before
        :meth:`prepare` and :meth:`check_tables`.

        For a destination that names its tables by a template of them (Kafka's
        ``topic: "{connection}.{stream}"``).  The default ignores them.
        """
        return None

    def use_spark_conf(self, conf: Mapping[str, str]) -> None:
        """Take the connection's ``spark.conf`` before :meth:`check` (which starts no Spark).

        For a check that reaches the store as a sync's Spark session would (Delta
        on ``s3a://``: the ``spark.hadoop.fs.s3a.*`` settings).  The default ignores it.
        """
        return None

    def check_skipped(self) -> str | None:
        """Why :meth:`check` proves nothing for this config, or None when it checks.

        The default: None when the class has a :meth:`check` of its own, else that it
        has none.  A destination whose check covers only some configs (Delta: local
        folders) overrides this to name the ones it skips.
        """
        if type(self).check is not Destination.check:
            return None
        return (f"the {self.type_name or type(self).__name__} destination has no check: "
                "nothing was checked")

    @abstractmethod
    def table_location(self, stream: str) -> str:
        """Where the stream's table lives (a path or a table name)."""

    def table_name(self, stream: str) -> str | None:
        """The name the stream's table is registered under in the session's catalog.

        None (the default) when the destination names no table, only a location:
        readers then reach the table by :meth:`table_location`.  Shown beside the
        location wherever the CLI shows a stream's table.
        """
        return None

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """The stream's table as its readers see it now: its current rows, as a Spark
        DataFrame of ``columns`` (default: every column; a column the table does not have
        is left out, so a caller may ask for flags only some tables hold).

        What ``headwater verify`` counts the table's windows over and what the destination
        kit (:mod:`headwater.destinations.testing`) checks the landed rows with, so a
        destination that implements it is verified and conformance-tested by the same
        reading.  A DataFrame, not Arrow on the driver: verify aggregates a table of any
        size where its rows are, and asking for only the columns it compares lets a
        reader skip the rest (a ``mapInArrow`` reader cannot be pruned by Spark later).

        The default reads the table with Spark itself: by its catalog name
        (:meth:`table_name`), else ``spark.read.format(type_name)`` at its
        :meth:`table_location` (the Delta destination's way).  A destination that keeps
        no table (a log) raises :class:`~headwater.errors.NoTableError`; one whose table
        is missing or unreadable raises any error that says why.
        """
        from headwater.destinations._read_frames import select_present

        name = self.table_name(stream)
        frame = (spark.table(name) if name
                 else spark.read.format(self.type_name).load(self.table_location(stream)))
        return select_present(frame, columns)

    def dataset_namespace(self) -> str | None:
        """Where this destination keeps its tables, as lineage names a place
        (``file:///lake``, ``s3://bucket/lake``, ``postgres://db:5432/shop``).

        Scheme, host, port and path only, never a credential
        (:func:`~headwater.destinations._dataset.without_credentials`).  None (the
        default): lineage takes the first stream's :meth:`table_location` instead.
        """
        return None

    def dataset_name(self, stream: str, namespace: str) -> str:
        """The stream's table as a dataset name in ``namespace``: its catalog name
        (:meth:`table_name`), else its location under the namespace, else its location."""
        from headwater.destinations._dataset import name_within

        return name_within(namespace, self.table_location(stream), self.table_name(stream))

    @abstractmethod
    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        """Create or evolve the stream's table; return the data schema to write with.

        New columns are added; a column whose type changed keeps the table's
        type, and values that do not fit it are recorded per row by the engine.
        That is for a table the destination created: one it did not (no ``_hw_*``
        columns) is refused before it changes unless each shared column holds every
        value of the stream's (``_existing_table.py``), as :meth:`check_tables` says.
        """

    def table_columns(self, stream: str, spark: SparkSession | None = None) -> pa.Schema | None:
        """The columns the stream's table has now, in Arrow terms (a VARIANT column as text
        marked VARIANT), or None when there is no such table.

        What a stream's ``schema_contract`` is held to (``headwater.schema_contracts``),
        read before :meth:`prepare` changes anything.  ``spark`` None: without a Spark
        session (``headwater plan``); a destination that cannot tell then raises
        :class:`~headwater.errors.DestinationError`.  The default, for a destination
        without tables whose columns it knows (Kafka's topics), refuses any contract
        but ``evolve``.
        """
        from headwater.errors import ConfigError

        raise ConfigError(
            f"the {self.type_name or type(self).__name__} destination has no table whose "
            "columns a schema_contract could hold the stream to; use schema_contract: evolve "
            "(the default) for it", stream=stream, field="schema_contract")

    def unwritten_columns(self, stream: str) -> list[str]:
        """Columns the stream's table has that the schema its last :meth:`prepare` was
        given lacks, in the table's order: this run's rows hold null in them, and the
        engine warns (:func:`headwater.engine._results.stream_warnings`).  The default,
        for a destination that does not look: none."""
        return []

    @abstractmethod
    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        """The earlier commit of ``marker``, if one landed (used when resuming)."""

    @abstractmethod
    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """Commit one checkpoint batch in one idempotent transaction."""

    def file_writer(self, spark: SparkSession, plan: StreamPlan, *,
                    run_id: str = "") -> FileWriter | None:
        """The writer executors run on a checkpoint's batches, or None (rows go to ``commit``).

        A destination that can take files written by the tasks themselves
        (``capabilities.task_written_files``) returns one; the engine then hands
        :meth:`commit_files` the rows describing them.  ``run_id`` is the run the files
        are for: a writer that marks its files with it (``_uncommitted.run_file_tag``)
        lets :meth:`abort` find a failed checkpoint's files and no one else's.
        """
        return None

    def commit_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                     files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Commit the files ``file_writer``'s tasks wrote, in one idempotent transaction."""
        raise NotImplementedError(f"{type(self).__name__} has no file writer")

    def before_task_files(self, spark: SparkSession, plan: StreamPlan,
                          checkpoint: CheckpointPlan, marker: CommitMarker) -> bool:
        """Make ready what ``file_writer``'s tasks write ``marker``'s checkpoint into,
        before the engine runs their Spark job ahead of :meth:`commit_files`.

        The engine does so when one job writes two tables (a stream's rows and its
        quarantine table's, ``headwater/engine/_quarantine.py``): the job then runs
        before either commit, and the ``files`` each commit is handed are already
        collected.  A destination whose tasks write into something the commit creates
        first (PostgreSQL's staging table) creates it here, and its commit finds it
        ready.  Returns whether the commit must then run even with nothing to commit
        (it removes what was made ready).  The default does nothing (files need no
        preparing) and returns False.
        """
        return False

    def delete_checkpoints(self, spark: SparkSession, stream: str, run_id: str,
                           checkpoints: Sequence[int]) -> int:
        """Delete the rows ``run_id`` wrote in ``checkpoints`` (``_hw_checkpoint``) from the
        stream's table, in one transaction; return how many were deleted.

        What the engine asks of a quarantine table when checkpoints failed after their
        quarantine commit (``headwater/engine/_quarantine.py``).
        """
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot delete a checkpoint's rows", stream=stream)

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Drop what a checkpoint that will not commit left behind (files, staging, an
        open transaction).

        The engine calls it for each checkpoint of an attempt that failed before its
        commit landed (never for one whose outcome is unknown), once every commit
        lane of the stream has ended, so nothing of the stream is in flight.  It must
        remove only what ``marker``'s checkpoint wrote and never committed: a commit
        that landed, and another checkpoint's staging, are not its to touch.  Best
        effort: what it cannot remove costs space, never correctness (a raise is
        logged, not fatal).  The default does nothing, for a destination that leaves
        nothing behind.
        """
        return None

    # -------------------------------------------- overwrites: stage, then publish

    def stage(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """Keep one overwrite checkpoint's rows durably, out of readers' sight.

        Idempotent like :meth:`commit` (a staged ``marker`` is not staged again);
        the result has no table ``version``: nothing the table's readers see changed.
        """
        raise self._cannot_stage(plan)

    def stage_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    files: DataFrame, marker: CommitMarker) -> CommitResult:
        """:meth:`stage` for the files ``file_writer``'s tasks wrote (``files`` describes them)."""
        raise self._cannot_stage(plan)

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        """The earlier staging of ``marker``, if one is durable (used when resuming)."""
        return None

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        """Replace the table's rows with every staged checkpoint of ``marker``, in one commit.

        Refuses (and changes nothing) unless each of ``marker.checkpoints`` is
        staged.  A publish that already landed (an earlier attempt's) is found by
        its tag and returned with ``already_committed``; after it the run's staging
        is removed where the destination can remove it.
        """
        raise self._cannot_stage(plan)

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        """Remove what other runs staged for this stream and never published (or left behind).

        Called as an overwrite run starts: only the connection's one unfinished
        run (``keep_run_id``) may still publish its staging.  Nothing to remove
        where nothing can be staged.
        """
        return None

    def _cannot_stage(self, plan: StreamPlan) -> Exception:
        from headwater.errors import DestinationError

        return DestinationError(
            f"the {self.type_name or type(self).__name__} destination cannot stage an "
            "overwrite's checkpoints, so an overwrite of several checkpoints would show "
            "readers a half-refreshed table; raise partitions_per_checkpoint so the stream "
            "fits one checkpoint", stream=plan.stream.name)

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        """Each idempotency app id starting with ``app_id_prefix`` that the stream's table
        holds, with its latest version (what ``headwater state realign`` compares with the
        metadata store's checkpoint counters)."""
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot list its tables' transaction versions", stream=stream)

    def run_row_counts(self, spark: SparkSession, stream: str) -> dict[str, int]:
        """Rows of the stream's table by the run that wrote them (``_hw_run_id``)."""
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot count its tables' rows by run", stream=stream)

    def delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str]) -> int:
        """Delete the rows ``run_ids`` wrote from the stream's table in one transaction."""
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot delete a run's rows", stream=stream)

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        """Replace every row run ``replaced_run_id`` wrote with ``rows``, in one transaction.

        What ``headwater replay`` commits for append and overwrite tables;
        destinations that cannot delete and insert atomically do not support it.
        """
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot replay a run (it cannot replace a run's rows atomically)",
                               stream=plan.stream.name)
