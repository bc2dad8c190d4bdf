"""``headwater state realign``: bring the metadata store back in step with the tables.

Checkpoint indices are the versions of each lane's commit markers in the
table (the idempotency pair of ``CommitMarker``), so the store's counters must
stay ahead of every lane's version in the table.  A store restored from an
older backup (or a replica that lagged) is behind: the sync refuses to commit
(``StoreBehindTableError``) rather than let the table skip the commit as
already done and lose the checkpoint's data.  This module reads each stream's
table and moves the counter past the versions it holds.

What it cannot repair, and says instead: the older store's *state* does not
cover what the runs after the backup read.  Those runs are unknown to the
store, but their rows are in the table (``_hw_run_id``), so they are listed.
The next sync reads their source data again; under ``append`` that would put
their rows in the table twice, so those rows can be deleted first, on request
(``drop_unknown_runs``), never silently.  ``append_dedup`` merges them again by
key and ``overwrite`` replaces the table: nothing to delete there.

A stream's quarantine table is held to the same: its lanes' versions count, its
unknown runs' rows go with the flag, and rows of checkpoints that never committed
go always, once the table confirms their commits are not there; a lookup that
cannot answer keeps them and is reported (:mod:`._realign_quarantine` says why).
State then describes exactly what both tables hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.engine._markers import lane_app_id_prefix
from headwater.engine._realign_quarantine import (
    QuarantineRealignment,
    drops_unknown_runs,
    fix_quarantine,
    inspect_quarantine,
)
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.config import ConnectionConfig
    from headwater.destinations import Destination
    from headwater.metadata_store import MetadataStore


@dataclass
class StreamRealignment:
    """What realigning found for one stream, and what it did (or would do)."""

    stream: str
    mode: str
    table: str
    #: The name the table is registered under in the catalog (None: by location only).
    table_name: str | None = None
    #: Each lane's ``txnAppId`` of this store in the table, with its latest version.
    lanes: dict[str, int] = field(default_factory=dict)
    #: The store's next checkpoint index before and after (None: no counter yet).
    next_index_before: int | None = None
    next_index_after: int | None = None
    #: Runs whose rows are in the table and that the store does not know: run id -> rows.
    unknown_runs: dict[str, int] = field(default_factory=dict)
    #: Rows deleted (``drop_unknown_runs`` on an ``append`` stream), else None.
    deleted_rows: int | None = None
    #: The stream's quarantine table, when it has one.
    quarantine: QuarantineRealignment | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def top(self) -> int | None:
        """The highest version any lane holds, in the table or its quarantine table."""
        tops = [max(self.lanes.values(), default=None),
                None if self.quarantine is None else self.quarantine.top]
        return max((t for t in tops if t is not None), default=None)

    @property
    def behind(self) -> bool:
        """Whether the store's counter hands out a version the table (or its quarantine
        table) holds."""
        top = self.top
        return top is not None and (self.next_index_before or 0) <= top

    def changes(self, drop_unknown_runs: bool) -> bool:
        """Whether realigning with ``apply`` changes the store or a table."""
        quarantine = self.quarantine
        return self.behind or (drop_unknown_runs and bool(self.unknown_runs)
                               and self.mode == DestinationSyncMode.APPEND) or (
            quarantine is not None and quarantine.changes(self.mode, drop_unknown_runs))

    @property
    def unchecked(self) -> bool:
        """Whether a checkpoint's commit could not be looked up (its rows were kept)."""
        return self.quarantine is not None and bool(self.quarantine.unchecked)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "behind": self.behind}


def realign(spark: SparkSession, connection: ConnectionConfig, store: MetadataStore,
            destination: Destination, streams: Sequence[tuple[str, str]], *, apply: bool,
            drop_unknown_runs: bool = False) -> list[StreamRealignment]:
    """Compare each ``(stream, destination sync mode)`` with its table; with ``apply``, fix.

    Fixing moves the counter past the table's versions and, with
    ``drop_unknown_runs``, deletes the unknown runs' rows of ``append`` streams.
    """
    found = []
    for stream, mode in streams:
        item = StreamRealignment(stream=stream, mode=mode,
                                 table=destination.table_location(stream),
                                 table_name=destination.table_name(stream))
        prefix = lane_app_id_prefix(store.store_id, connection.name, stream)
        item.lanes = destination.lane_versions(spark, stream, prefix)
        item.quarantine = inspect_quarantine(spark, store, destination, stream, prefix)
        item.next_index_before = store.checkpoint_counter(connection.name, stream)
        item.next_index_after = item.next_index_before
        item.unknown_runs = {run_id: rows for run_id, rows in
                             sorted(destination.run_row_counts(spark, stream).items())
                             if store.get_run(run_id) is None}
        top = item.top
        if item.behind and top is not None:
            if apply:
                item.next_index_after = store.realign_checkpoint_indices(
                    connection.name, stream, top)[1]
                item.notes.append(f"checkpoint counter moved past the table's txn version {top}")
            else:
                item.notes.append(f"the store hands out index {item.next_index_before or 1}, "
                                  f"the table holds txn version {top}: the counter must move")
        else:
            item.notes.append("checkpoint counter already past the table's versions")
        if item.unknown_runs:
            item.notes.append(_unknown_runs_note(item, drop_unknown_runs))
            if apply and drop_unknown_runs and mode == DestinationSyncMode.APPEND:
                item.deleted_rows = destination.delete_runs(spark, stream,
                                                            list(item.unknown_runs))
        if item.quarantine is not None:
            item.notes.extend(_quarantine_notes(item.quarantine, mode, drop_unknown_runs))
            if apply:
                fix_quarantine(spark, destination, stream, mode, item.quarantine,
                               drop_unknown_runs=drop_unknown_runs)
        found.append(item)
    return found


def _quarantine_notes(found: QuarantineRealignment, mode: str, drop: bool) -> list[str]:
    notes = []
    if found.unknown_runs:
        rows = sum(found.unknown_runs.values())
        head = (f"{rows} rows in the quarantine table {found.table} were quarantined by "
                f"{len(found.unknown_runs)} run(s) the store does not know")
        if not drops_unknown_runs(mode):
            notes.append(head + "; overwrite quarantines every row it reads again, each run's "
                                "told apart by _hw_run_id, so they stay")
        elif drop:
            notes.append(head + "; they are deleted, so the next sync quarantines them once")
        else:
            notes.append(head + "; the next sync quarantines them again, so they would be "
                                "there twice: run again with --drop-unknown-runs to delete them")
    for run_id, indices in found.uncommitted.items():
        notes.append(f"the quarantine table holds rows of checkpoints {indices} of run {run_id}, "
                     "which never committed (a later run quarantined them again): they are "
                     "deleted")
    for run_id, indices in found.landed.items():
        notes.append(f"the store records checkpoints {indices} of run {run_id} as not "
                     "committed, but the table holds their commits (found by their markers): "
                     "their quarantined rows stay. The store keeps that finished run's "
                     "records as they are, so its state does not cover those checkpoints and "
                     "the next sync reads their data again (under append, into the table "
                     "a second time)")
    for run_id, errors in found.unchecked.items():
        for index, error in sorted(errors.items()):
            notes.append(f"whether checkpoint {index} of run {run_id} committed could not be "
                         f"looked up in the table ({error}): its quarantined rows stay; run "
                         "realign again when the table answers")
    return notes


def _unknown_runs_note(item: StreamRealignment, drop: bool) -> str:
    rows = sum(item.unknown_runs.values())
    head = (f"{rows} rows in the table were written by {len(item.unknown_runs)} run(s) the "
            "store does not know (it is older than they are), and its state does not cover "
            "what they read: the next sync reads that data again")
    if item.mode == DestinationSyncMode.APPEND_DEDUP:
        return head + "; append_dedup merges it again by key, so no row lands twice"
    if item.mode == DestinationSyncMode.HISTORY:
        return head + ("; history opens a version only for a change newer than the key's "
                       "stored ones, so no version lands twice")
    if item.mode == DestinationSyncMode.OVERWRITE:
        return head + "; overwrite replaces the table, so no row lands twice"
    if drop:
        return head + "; their rows are deleted (one commit; the table's history keeps them) so " \
                      "it lands once"
    return head + "; under append their rows would then be in the table twice: run again " \
                  "with --drop-unknown-runs to delete them first (one commit; the table's " \
                  "history keeps them)"


__all__ = ["StreamRealignment", "realign"]
