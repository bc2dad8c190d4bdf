"""Finding a checkpoint's commit in a Delta table: by its tag, or by its lane's txn version.

Every commit carries the checkpoint's ``txnAppId``/``txnVersion`` and a
``userMetadata`` tag naming its run, stream and checkpoint.  After a crash, an error
or a write Delta skipped, the table's history decides what landed: the tagged
commit found is a success (whichever attempt made it), a txn version the table
holds without such a commit is the metadata store behind the table, and a history
that cannot be read answers neither (:class:`~headwater.errors.CommitOutcomeUnknownError`).
delta-rs reads the history where the driver reaches the table (``_reach.py``),
Spark's ``DESCRIBE HISTORY`` elsewhere.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from headwater._events import commit_landed
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    PublishMarker,
    tagged_counts,
    tagged_partition_states,
    tagged_publish,
)
from headwater.destinations._error_line import error_line
from headwater.destinations.delta import _delta_rs
from headwater.destinations.delta._errors import _failed
from headwater.destinations.delta._history_commit import ENGINE_INFO
from headwater.destinations.delta._reach import _driver_folder
from headwater.destinations.delta._sql import history
from headwater.errors import CommitOutcomeUnknownError, StoreBehindTableError

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

log = logging.getLogger(__name__)

#: ``CommitResult.writer`` of a commit of files the tasks wrote, added through delta-rs.
WRITER_TASKS = "tasks+delta-rs"


#: ``CommitResult.writer`` of a commit Spark's Delta writer made (write, MERGE, replay).
WRITER_SPARK = "spark"

#: ``CommitResult.writer`` of a history commit of Headwater's own (``_history_commit.py``):
#: files the tasks wrote, closed versions marked by deletion vectors.
WRITER_HISTORY = "tasks+deletion-vectors"


#: Commits a just-made commit is looked for among: lanes commit side by side.
_RECENT_COMMITS = 50


#: ``writer_reason`` of a checkpoint whose commit an earlier attempt made.
_EARLIER_ATTEMPT = "committed by an earlier attempt (found in the table's history)"


def _committed(spark: SparkSession, location: str, marker: CommitMarker,
               counts: Callable[[], Mapping[str, Any]]) -> CommitResult:
    """The result of the write just made: its counts, version and bytes from the history.

    No commit of the checkpoint in the history means Delta skipped the write (the
    table held the txn version already): see :func:`_skipped`.
    """
    # Lanes commit side by side, so look among the latest few commits for ours.
    found = _tagged_commit(spark, location, marker, within_latest=_RECENT_COMMITS)
    if found is None:
        return _skipped(spark, location, marker, _lane_version(spark, location, marker.app_id))
    commit_landed()
    figures = counts()
    return CommitResult(rows=int(figures["rows"]), rejected=int(figures["rejected"]),
                        bytes=_bytes_written(found[1]), version=found[0])


def _landed(found: tuple[int, Mapping[str, str], str, str], *,
            already_committed: bool) -> CommitResult:
    """A commit found in the history, with the figures its metrics or its tag carry."""
    version, metrics, tag, engine = found
    counts = tagged_counts(tag)
    rows = int(metrics.get("numOutputRows") or metrics.get("numSourceRows")
               or counts.get("rows") or 0)
    return CommitResult(rows=rows, rejected=counts.get("rejected", 0),
                        bytes=_bytes_written(metrics) or counts.get("bytes", 0),
                        version=version, already_committed=already_committed,
                        partition_states=tagged_partition_states(tag),
                        writer=_writer_of(engine),
                        writer_reason=_EARLIER_ATTEMPT if already_committed else
                        "the commit landed, then its writer raised (see the log)")


def _after_error(spark: SparkSession, location: str, marker: CommitMarker,
                 exc: BaseException, what: str) -> CommitResult:
    """A commit that raised: a success if it landed nonetheless, else the error.

    An error can come after the commit is durable (delta-rs's log checkpoint, a
    lost connection while the commit's answer travels back); declaring such a
    checkpoint failed would have the next run read and write its data again.
    So the table decides: the checkpoint's tagged commit in the history is a
    success, whatever came after it; no such commit, or no table at all (a
    staging table's first commit), is the error.  A lookup that raises for any
    other reason (the store unreachable, credentials refused) answers neither:
    :class:`~headwater.errors.CommitOutcomeUnknownError`, and the engine keeps
    the run resumable so that the next sync looks again.
    """

    try:
        found = _tagged_commit(spark, location, marker, within_latest=_RECENT_COMMITS)
    except Exception as lookup:
        if not _no_table(lookup):  # the table did not answer: whether it landed is unknown
            raise CommitOutcomeUnknownError(
                what, error=error_line(exc), lookup=error_line(lookup),
                stream=marker.stream, checkpoint=marker.checkpoint_index) from exc
        log.debug("looking up the commit of checkpoint %s in %s: no table there (%s)",
                  marker.checkpoint_index, location, error_line(lookup))
        found = None
    if found is None:
        raise _failed(f"{what} failed", exc, marker.stream) from exc
    # The tagged commit may be this writer's (its answer was lost) or a racing
    # writer's of the same checkpoint (this one's commit was then refused): the
    # checkpoint is in the table once either way, which is all that is claimed.
    log.warning("%s raised, and the table's history holds this checkpoint's commit (version "
                "%s), so it counts as committed: %s", what, found[0], error_line(exc))
    return _landed(found, already_committed=False)


def _publish_after_error(spark: SparkSession, location: str, marker: PublishMarker,
                         exc: BaseException) -> tuple[int, Mapping[str, str], str] | None:
    """The publish of a publishing commit that raised, looked up; raise when the lookup
    cannot answer (see :func:`_after_error`)."""
    try:
        return _published_commit(spark, location, marker)
    except Exception as lookup:
        raise CommitOutcomeUnknownError(
            f"publishing run {marker.run_id} to {location}", error=error_line(exc),
            lookup=error_line(lookup), stream=marker.stream) from exc


#: Spark's error conditions for a lookup in a table that does not exist: a path holding
#: none (``DESCRIBE HISTORY``, ``DESCRIBE DETAIL``), or a path inside a table's folder
#: (a staging table not created yet).  Checked with Delta 4.4: see the unit tests.
_NO_TABLE_CONDITIONS = frozenset({"DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE",
                                  "DELTA_INVALID_PARTITION_PATH"})


def _no_table(lookup: BaseException) -> bool:
    """Whether a lookup's error says there is no table there (an answer: nothing landed).

    delta-rs answers a missing table with None, not an error (``_delta_rs.history``);
    Spark raises an ``AnalysisException`` with one of :data:`_NO_TABLE_CONDITIONS`.
    Anything else (an object store's error, a refusal, a lost connection) is no answer.
    """
    from pyspark.errors import AnalysisException

    return (isinstance(lookup, AnalysisException)
            and lookup.getCondition() in _NO_TABLE_CONDITIONS)


def _skipped(spark: SparkSession, location: str, marker: CommitMarker,
             held: int | None) -> CommitResult:
    """The table holds ``marker``'s txn version already, and no commit of its checkpoint.

    On the run's first attempt nothing of the run can be in the table: the
    metadata store handed out an index a lane had used, so it went back in time;
    counting the checkpoint committed would lose its data (Delta wrote nothing).
    On a resumed attempt an earlier attempt committed it, and the log was
    cleaned up since, unless the lane's commit at ``held`` belongs to another run.
    ``held`` is the lane's txn version, when known (None: not readable here).
    """
    found = _tagged_commit(spark, location, marker)  # the whole history, not the latest
    if found is not None:  # ours after all, further back than the latest commits
        return _landed(found, already_committed=marker.attempt > 1)
    owner = _lane_owner(spark, location, marker, held)
    if marker.attempt > 1 and owner in (None, marker.run_id):
        log.warning("checkpoint %s of %s: %s holds txn version %s of %s but its history no "
                    "longer lists this checkpoint's commit (log clean-up); counted as "
                    "committed by an earlier attempt", marker.checkpoint_index, marker.stream,
                    location, held if held is not None else f">= {marker.version}",
                    marker.app_id)
        return CommitResult(rows=0, rejected=0, bytes=0, version=None, already_committed=True)
    holds = f"version {held}" if held is not None else "that version or a later one"
    by = f", committed by run {owner}" if owner not in (None, marker.run_id) else ""
    raise StoreBehindTableError(
        f"the metadata store is behind the table: checkpoint {marker.checkpoint_index} of run "
        f"{marker.run_id} got txn version {marker.version} of {marker.app_id}, and the Delta "
        f"table at {location} already holds {holds} of it{by}, so Delta would skip the "
        "commit as a duplicate and the checkpoint's data would be lost; nothing was committed. "
        "The store was restored from an older copy (or lost writes): run `headwater state "
        "realign CONNECTION.yaml` to move its checkpoint counters past the tables' versions "
        "(it also lists the rows of runs the store does not know), then sync again",
        stream=marker.stream)


def _lane_owner(spark: SparkSession, location: str, marker: CommitMarker,
                held: int | None) -> str | None:
    """The run whose tagged commit of this stream carries checkpoint ``held`` (None: not found).

    A checkpoint's index is its lane's txn version, so that commit is the lane's latest.
    """
    if held is None:
        return None
    try:
        found = _tagged_commit(spark, location, replace(marker, checkpoint_index=held),
                               any_run=True)
    except Exception:
        return None
    if found is None:
        return None
    ours = json.loads(found[2]).get("headwater", {})
    return str(ours.get("run_id")) if isinstance(ours, dict) else None


def _lane_version(spark: SparkSession, location: str, app_id: str) -> int | None:
    """The table's ``txnVersion`` of ``app_id``, where delta-rs can read it (else None)."""
    folder = _driver_folder(spark, location)
    if folder is None:
        return None
    return _delta_rs.transaction_version(folder, app_id)


def _tagged_commit(spark: SparkSession, location: str, marker: CommitMarker,
                   within_latest: int | None = None, *, any_run: bool = False,
                   ) -> tuple[int, Mapping[str, str], str, str] | None:
    """The version, operation metrics, tag and ``engineInfo`` of ``marker``'s checkpoint's commit.

    Matched on the tag's run, stream and checkpoint rather than on the whole
    text: a tag may also carry the partition states the commit released.  With
    ``any_run``, the commit of that stream's checkpoint by whichever run.
    """
    from pyspark.sql import functions as F

    folder = _driver_folder(spark, location)
    if folder is not None:
        # delta-rs reads the log in the driver's process: no Spark job, no Delta-Spark
        # warm-up in a new JVM, and it reads commits either library made.
        return _tagged_in(_delta_rs.history(folder, within_latest) or [], marker, any_run)

    def tagged(key: str) -> Column:
        return F.get_json_object(F.col("userMetadata"), f"$.headwater.{key}")

    matches = ((tagged("stream") == marker.stream)
               & (tagged("checkpoint") == str(marker.checkpoint_index)))
    if not any_run:
        matches = matches & (tagged("run_id") == marker.run_id)
    found = (history(spark, location, within_latest).where(matches)
             .select("version", "operationMetrics", "userMetadata", "engineInfo")
             .limit(1).collect())
    if not found:
        return None
    return (int(found[0]["version"]), found[0]["operationMetrics"] or {},
            found[0]["userMetadata"], found[0]["engineInfo"] or "")


def _tagged_in(commits: list[dict[str, Any]], marker: CommitMarker, any_run: bool = False,
               ) -> tuple[int, Mapping[str, str], str, str] | None:
    """:func:`_tagged_commit` over commits delta-rs read from the log, newest first."""
    for commit in commits:
        tag = commit.get("userMetadata")
        try:
            document = json.loads(tag) if isinstance(tag, str) else None
        except ValueError:
            continue
        ours = document.get("headwater") if isinstance(document, dict) else None
        if (isinstance(ours, dict)
                and (any_run or ours.get("run_id") == marker.run_id)
                and ours.get("stream") == marker.stream
                and str(ours.get("checkpoint")) == str(marker.checkpoint_index)):
            metrics = commit.get("operationMetrics") or {}
            return (int(commit["version"]), {k: str(v) for k, v in metrics.items()},
                    str(tag), str(commit.get("engineInfo") or ""))
    return None


def _published_commit(spark: SparkSession, location: str, marker: PublishMarker,
                      within_latest: int | None = None,
                      ) -> tuple[int, Mapping[str, str], str] | None:
    """The version, operation metrics and tag of the commit publishing ``marker``'s run."""
    for version, metrics, tag in _tagged_commits(spark, location, within_latest):
        found = tagged_publish(tag)
        if found is not None and found[:2] == (marker.run_id, marker.stream):
            return version, metrics, tag
    return None


def _staged_indices(spark: SparkSession, staging: str, marker: PublishMarker) -> set[int]:
    """The checkpoints of ``marker``'s run that the staging table at ``staging`` holds."""
    indices = set()
    for _, _, tag in _tagged_commits(spark, staging):
        try:
            ours = json.loads(tag).get("headwater") or {}
        except (ValueError, AttributeError):
            continue
        if (ours.get("run_id") == marker.run_id and ours.get("stream") == marker.stream
                and ours.get("checkpoint") is not None):
            indices.add(int(ours["checkpoint"]))
    return indices


def _tagged_commits(spark: SparkSession, location: str, within_latest: int | None = None,
                    ) -> list[tuple[int, Mapping[str, str], str]]:
    """Every commit of the table that carries a tag, newest first."""
    from pyspark.sql import functions as F

    folder = _driver_folder(spark, location)
    if folder is not None:
        commits = _delta_rs.history(folder, within_latest) or []
        return [(int(c["version"]), {k: str(v) for k, v in (c.get("operationMetrics") or {})
                                     .items()}, str(c["userMetadata"]))
                for c in commits if isinstance(c.get("userMetadata"), str)]
    found = (history(spark, location, within_latest).where(F.col("userMetadata").isNotNull())
             .select("version", "operationMetrics", "userMetadata").collect())
    return [(int(r["version"]), r["operationMetrics"] or {}, str(r["userMetadata"]))
            for r in found]


def _writer_of(engine_info: str) -> str | None:
    """The writer named by a commit's ``engineInfo`` (delta-rs, Spark or Headwater's history
    commit), None if none of them."""
    if engine_info.startswith("delta-rs"):
        return WRITER_TASKS
    if engine_info.startswith("Apache-Spark"):
        return WRITER_SPARK
    if engine_info.startswith(ENGINE_INFO):
        return WRITER_HISTORY
    return None


def _bytes_written(metrics: Mapping[str, str]) -> int:
    # WRITE reports numOutputBytes; MERGE reports the bytes of the files it added.
    return int(metrics.get("numOutputBytes") or metrics.get("numTargetBytesAdded") or 0)
