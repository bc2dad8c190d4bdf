"""An overwrite's checkpoints staged on an Iceberg branch of their own, published in one snapshot.

An ``overwrite`` run of several checkpoints must not show readers a table with
part of the new rows and none of the old.  Each checkpoint is staged as one
``append`` snapshot on the run's branch ``headwater-staging-<run id>``; the
publish is one ``overwrite`` snapshot on ``main`` that removes every current
data file, adds every file of the branch's head, and drops the branch, all in
one metadata commit carrying the :class:`~headwater.destinations._base.PublishMarker`.

Why a branch, not a manifest of staged files beside the table (Delta's way):

* it is the table's own, atomic record: a staged checkpoint is one catalog
  commit (a compare-and-swap of the metadata location), durable once it
  returns, and readers of ``main`` (every engine's default) never see it;
* the staged files are *referenced* by the table's metadata, so Iceberg's
  maintenance leaves them alone: ``remove_orphan_files`` (Spark's, Java's)
  deletes files no snapshot references, which a manifest outside the table
  would not protect; PyIceberg's ``expire_snapshots`` never expires a
  branch's head (and deletes no files at all), and the head holds every
  staged file (fast appends keep their parent's manifests);
* the head's summary (``headwater.staged``) lists every checkpoint staged so
  far with their figures, so a resumed attempt finds a staged checkpoint even
  after the branch's older snapshots expired, and never stages it twice.

Each staging snapshot also carries the checkpoint's marker (``_markers.py``),
like a commit, so a checkpoint's figures are found again while its snapshot
lives.  The branch is created by its first snapshot, with no parent, so its
head holds exactly the staged files.  A run that failed leaves its branch; the
next overwrite of the stream deletes its files and drops it, with its
snapshots (:meth:`Staging.clear`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    PublishMarker,
    tagged_counts,
    tagged_publish,
)
from headwater.destinations._error_line import error_line
from headwater.destinations.iceberg import _commit, _markers
from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknownError,
    DestinationError,
    HeadwaterError,
    StoreBehindTableError,
)

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

log = logging.getLogger(__name__)

#: Each run's staging branch is this, then the run id.
BRANCH_PREFIX = "headwater-staging-"
#: The branch head's summary key listing what the branch holds (:class:`Staged`).
STAGED_KEY = "headwater.staged"
#: The summary key of the empty snapshot a staging run puts on a table without any
#: (its value: the run's id), see :func:`_with_base`.
BASE_KEY = "headwater.staging_base"
#: Commits retried when another writer committed to the table meanwhile.
_COMMIT_TRIES = 5


def branch_name(run_id: str) -> str:
    """The branch run ``run_id`` stages its checkpoints on."""
    return f"{BRANCH_PREFIX}{run_id}"


@dataclass(frozen=True)
class Staged:
    """What a run's staging branch holds: its checkpoints, and their figures summed."""

    run_id: str
    checkpoints: frozenset[int] = frozenset()
    rows: int = 0
    rejected: int = 0
    bytes: int = 0

    def adding(self, index: int, rows: int, rejected: int, size: int) -> Staged:
        return replace(self, checkpoints=self.checkpoints | {index}, rows=self.rows + rows,
                       rejected=self.rejected + rejected, bytes=self.bytes + size)

    def to_json(self) -> str:
        return json.dumps({"run_id": self.run_id, "checkpoints": ranges(self.checkpoints),
                           "rows": self.rows, "rejected": self.rejected, "bytes": self.bytes},
                          sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Staged:
        document = json.loads(text)
        return cls(run_id=str(document["run_id"]),
                   checkpoints=frozenset(indices(str(document["checkpoints"]))),
                   rows=int(document["rows"]), rejected=int(document["rejected"]),
                   bytes=int(document["bytes"]))


def ranges(numbers: Iterable[int]) -> str:
    """``{1, 2, 3, 7}`` as ``"1-3,7"``: a run's checkpoints stay short however many."""
    parts: list[str] = []
    for number in sorted(set(numbers)):
        if parts and parts[-1].split("-")[-1] == str(number - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{number}"
        else:
            parts.append(str(number))
    return ",".join(parts)


def indices(text: str) -> set[int]:
    """The numbers :func:`ranges` wrote."""
    found: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


def staged(table: Table, run_id: str) -> Staged | None:
    """What run ``run_id``'s branch holds, or None when the table has no such branch."""
    head = table.metadata.snapshot_by_name(branch_name(run_id))
    if head is None:
        return None
    text = (head.summary.additional_properties.get(STAGED_KEY)
            if head.summary is not None else None)
    return Staged.from_json(text) if text else Staged(run_id=run_id)


def find_publish(table: Table, run_id: str, stream: str) -> _markers.TaggedSnapshot | None:
    """The snapshot publishing run ``run_id``'s staging of ``stream``, if one landed."""
    for snapshot_id, summary in _commit.snapshots_newest_first(table):
        tag = summary.get(_markers.TAG_KEY)
        found = tagged_publish(tag if isinstance(tag, str) else None)
        if found is not None and found[:2] == (run_id, stream):
            return _markers.TaggedSnapshot(snapshot_id=snapshot_id, tag=str(tag))
    return None


def find_staged(table: Table, marker: CommitMarker) -> CommitResult | None:
    """The staging of ``marker``'s checkpoint, if it is durable (on the branch or published).

    Figures come from the checkpoint's own snapshot; when that expired, none
    (the engine takes the figures its store recorded).
    """
    holding = staged(table, marker.run_id)
    if holding is not None:
        held = holding.checkpoints
    else:
        publish = find_publish(table, marker.run_id, marker.stream)
        named = tagged_publish(publish.tag) if publish is not None else None
        held = frozenset(named[2] if named is not None else ())
    if marker.checkpoint_index not in held:
        return None
    own = _markers.find_tagged(_commit.snapshots_newest_first(table), marker)
    counts = tagged_counts(own.tag) if own is not None else {}
    return CommitResult(rows=counts.get("rows", 0), rejected=counts.get("rejected", 0),
                        bytes=counts.get("bytes", 0), version=None, already_committed=True)


def branch_snapshots(table: Table, branch: str) -> list[int]:
    """The snapshots of ``branch``: its head and the ancestors still in the table."""
    from pyiceberg.table.snapshots import ancestors_of

    head = table.metadata.snapshot_by_name(branch)
    return [] if head is None else [s.snapshot_id for s in ancestors_of(head, table.metadata)]


class Staging:
    """The staging of one destination's tables: their lock, their catalog, their commits.

    ``load_table(stream)`` loads the stream's table as it is now (None: none);
    ``lock`` serialises this process's commits to the tables (the destination's).
    """

    def __init__(self, load_table: Callable[[str], Table | None], lock: threading.RLock) -> None:
        self._load_table = load_table
        self._lock = lock

    def _table(self, stream: str) -> Table:
        table = self._load_table(stream)
        if table is None:
            raise DestinationError("the stream's Iceberg table does not exist (prepare creates "
                                   "it)", stream=stream)
        return table

    def stage(self, stream: str, paths: Sequence[str], rows: int, rejected: int,
              size: int, marker: CommitMarker) -> CommitResult:
        """Add the checkpoint's files (``paths``: their URIs) to the run's branch, once.

        ``already_committed`` in the result: an earlier attempt staged it (the
        files just written are then not used; the caller removes them).
        """
        branch = branch_name(marker.run_id)
        what = f"staging checkpoint {marker.checkpoint_index} of {stream}"

        def attempt() -> CommitResult:
            table = self._table(stream)
            earlier = find_staged(table, marker)
            if earlier is not None:
                return earlier
            if find_publish(table, marker.run_id, stream) is not None:
                raise DestinationError(f"{what}: run {marker.run_id} already published "
                                       "without it", stream=stream)
            if not table.metadata.snapshots:
                table = _with_base(table, marker.run_id)
            holding = staged(table, marker.run_id) or Staged(run_id=marker.run_id)
            summary = {**_markers.summary_properties(
                marker, marker.tag_with_counts(rows, rejected, size)),
                STAGED_KEY: holding.adding(marker.checkpoint_index, rows, rejected,
                                           size).to_json()}
            files = _commit.data_files(table, paths)
            _commit.commit(table, files, overwrite=False, summary=summary, properties={},
                           branch=branch)
            return CommitResult(rows=rows, rejected=rejected, bytes=size, version=None)

        def landed() -> CommitResult | None:
            return find_staged(self._table(stream), marker)

        return self._committing(stream, what, attempt, landed,
                                checkpoint=marker.checkpoint_index)

    def find(self, stream: str, marker: CommitMarker) -> CommitResult | None:
        with self._lock:
            table = self._load_table(stream)
            return None if table is None else find_staged(table, marker)

    def publish(self, stream: str, marker: PublishMarker) -> CommitResult:
        """One ``overwrite`` snapshot on ``main``: every staged file in, every current file out.

        Refuses (the table stays as it was) unless exactly ``marker.checkpoints``
        are staged and their files are all there; a publish that already landed
        is found by its tag; a table that holds the publish lane's version with
        no publish of this run means the metadata store is behind it.
        """
        branch = branch_name(marker.run_id)
        what = f"publishing run {marker.run_id} to {stream}"

        def earlier(table: Table) -> CommitResult | None:
            found = find_publish(table, marker.run_id, stream)
            if found is None:
                return None
            counts = tagged_counts(found.tag)
            return CommitResult(rows=counts.get("rows", 0), rejected=counts.get("rejected", 0),
                                bytes=counts.get("bytes", 0), version=found.snapshot_id,
                                already_committed=True)

        def attempt() -> CommitResult:
            table = self._table(stream)
            found = earlier(table)
            if found is not None:
                return found
            held = _markers.held_version(table.properties, marker.app_id)
            if held is not None and held >= marker.version:
                raise StoreBehindTableError(
                    f"the Iceberg table of {stream} already holds version {held} of "
                    f"{marker.app_id}, but no publish of run {marker.run_id}: the metadata "
                    "store is behind the table (restored from an older copy?); the table is "
                    "left as it was", stream=stream)
            holding = staged(table, marker.run_id) or Staged(run_id=marker.run_id)
            wanted = set(marker.checkpoints)
            if holding.checkpoints != wanted:
                missing = sorted(wanted - holding.checkpoints)
                extra = sorted(holding.checkpoints - wanted)
                raise DestinationError(
                    f"cannot publish run {marker.run_id} to {stream}: checkpoints "
                    f"{ranges(missing) or '-'} are not staged"
                    + (f" and {ranges(extra)} are staged but not planned" if extra else "")
                    + "; the table is left as it was", stream=stream)
            files = _commit.current_data_files(table, branch)
            gone = [f.file_path for f in files if not _exists(table, f)]
            if gone:
                raise DestinationError(
                    f"cannot publish run {marker.run_id} to {stream}: {len(gone)} staged files "
                    f"were removed, e.g. {gone[0]}; the table is left as it was", stream=stream)
            tag = marker.tag_with_counts(holding.rows, holding.rejected, holding.bytes)
            summary = {_markers.APP_ID_KEY: marker.app_id,
                       _markers.VERSION_KEY: str(marker.version), _markers.TAG_KEY: tag}
            snapshot_id = _commit.commit(
                table, files, overwrite=True, summary=summary,
                properties={_markers.txn_property(marker.app_id): str(marker.version)},
                drop_branch=branch)
            return CommitResult(rows=holding.rows, rejected=holding.rejected,
                                bytes=holding.bytes, version=snapshot_id)

        def landed() -> CommitResult | None:
            return earlier(self._table(stream))

        return self._committing(stream, what, attempt, landed)

    def clear(self, stream: str, keep_run_id: str) -> None:
        """Drop every staging branch of ``stream``'s table but ``keep_run_id``'s, with its files.

        The files go first, then the branches and their snapshots in one commit:
        a crash in between leaves a branch whose files are gone, which the next
        clear drops.  A branch whose run published (its files are the table's)
        keeps its files.  Best effort: staging left behind costs space, never
        correctness, so a failure is logged, not raised.
        """
        with self._lock:
            try:
                table = self._load_table(stream)
                if table is None:
                    return
                keep = branch_name(keep_run_id)
                leftovers = [name for name in table.metadata.refs
                             if name.startswith(BRANCH_PREFIX) and name != keep]
                if not leftovers:
                    return
                in_use = {f.file_path for name in table.metadata.refs
                          if name not in leftovers
                          for f in _commit.current_data_files(table, name)}
                for name in leftovers:
                    run_id = name[len(BRANCH_PREFIX):]
                    if find_publish(table, run_id, stream) is not None:
                        continue
                    for data_file in _commit.current_data_files(table, name):
                        if data_file.file_path not in in_use:
                            _delete(table, data_file)
                _drop_branches(table, leftovers)
                log.info("stream %s: dropped the staging of runs that never published: %s",
                         stream, ", ".join(n[len(BRANCH_PREFIX):] for n in leftovers))
            except Exception as exc:  # see the docstring: never raised
                log.warning("could not remove the staging of %s: %s", stream, error_line(exc))

    def _committing(self, stream: str, what: str, attempt: Callable[[], CommitResult],
                    landed: Callable[[], CommitResult | None], *,
                    checkpoint: int | None = None) -> CommitResult:
        """``attempt()`` under the lock, again while another writer commits first.

        Any other error is followed by ``landed()``: a commit that raised after
        it landed counts as made; one whose lookup raises too has an unknown
        outcome (``CommitOutcomeUnknown``: the engine keeps the run resumable).
        ``checkpoint``: the staged checkpoint's index (None: a publish).
        """
        from pyiceberg.exceptions import CommitFailedException

        for tried in range(1, _COMMIT_TRIES + 1):
            with self._lock:
                try:
                    result = attempt()
                except AuthenticationError as exc:  # refused: counts as made if it landed
                    made = _commit.refused_commit(exc, what, landed, stream=stream,
                                                  checkpoint=checkpoint)
                    return replace(made, already_committed=False)
                except HeadwaterError:
                    raise
                except CommitFailedException as exc:
                    if tried == _COMMIT_TRIES:
                        raise DestinationError(f"{what} failed: {error_line(exc)}",
                                               stream=stream) from exc
                    log.info("%s: another writer committed first; trying again", what)
                    time.sleep(0.05 * tried)
                    continue
                except Exception as exc:
                    found = _landed(landed, what, exc, stream, checkpoint)
                    if found is None:
                        raise DestinationError(f"{what} failed: {error_line(exc)}",
                                               stream=stream) from exc
                    log.warning("%s raised after its snapshot landed, so it counts as made: %s",
                                what, error_line(exc))
                    return replace(found, already_committed=False)
            if not result.already_committed:
                from headwater._events import commit_landed

                commit_landed()
            return result
        raise AssertionError("unreachable")


def _landed(landed: Callable[[], CommitResult | None], what: str, exc: BaseException,
            stream: str, checkpoint: int | None) -> CommitResult | None:
    """``landed()`` after ``exc``; raise when it cannot answer (the outcome is unknown)."""
    try:
        return landed()
    except Exception as lookup:
        raise CommitOutcomeUnknownError(what, error=error_line(exc),
                                        lookup=error_line(lookup), stream=stream,
                                        checkpoint=checkpoint) from exc


def _with_base(table: Table, run_id: str) -> Table:
    """``table`` (which has no snapshot) with an empty one on ``main``, to branch from.

    PyIceberg refuses a commit to any branch but ``main`` of a table without
    snapshots; readers see the same empty table before and after.
    """
    _commit.commit(table, [], overwrite=False, summary={BASE_KEY: run_id}, properties={})
    return table.refresh()


def _drop_branches(table: Table, names: Sequence[str]) -> None:
    """Drop the branches ``names`` and the snapshots only they hold, in one commit."""
    from pyiceberg.table.update.snapshot import ExpireSnapshots, ManageSnapshots

    kept: set[int] = set()
    for name in table.metadata.refs:
        if name not in names:
            kept.update(branch_snapshots(table, name))
    dropped = {i for name in names for i in branch_snapshots(table, name)} - kept
    tx = table.transaction()
    with ManageSnapshots(tx) as refs:
        for name in names:
            refs.remove_branch(name)
    if dropped:
        with ExpireSnapshots(tx) as expiry:
            expiry.by_ids(sorted(dropped))
    tx.commit_transaction()


def _exists(table: Table, data_file: DataFile) -> bool:
    """Whether the file is still there (a local folder or S3: the table's FileIO)."""
    return bool(table.io.new_input(data_file.file_path).exists())


def _delete(table: Table, data_file: DataFile) -> None:
    with contextlib.suppress(FileNotFoundError):
        table.io.delete(data_file.file_path)



__all__ = ["BASE_KEY", "BRANCH_PREFIX", "STAGED_KEY", "Staged", "Staging", "branch_name",
           "branch_snapshots", "find_publish", "find_staged", "indices", "ranges", "staged"]
