"""What ``headwater state realign`` finds in a stream's quarantine table, and fixes.

The quarantine table (``<stream>_quarantine``, :mod:`headwater.engine._quarantine`) is
committed per checkpoint before the checkpoint's own commit, under the checkpoint's
marker with ``_quarantine`` added to its app id.  So the store must be in step with it
as with the stream's table, or a realigned store still goes wrong:

* **Its lanes' versions.**  A checkpoint whose quarantine commit landed and whose own
  did not (a sync killed between the two, in a run the restored store does not know)
  holds a version the stream's table does not: a counter moved only past the stream's
  table hands that version out again, and the next sync stops with "the metadata store
  is behind the table" on the quarantine commit.  The counter moves past both.
* **Runs the store does not know.**  Their quarantined rows were read from data the
  next sync reads again (the store's state does not cover it), so it would quarantine
  them again: ``--drop-unknown-runs`` deletes them too, whatever the stream's mode but
  ``overwrite`` (each full refresh quarantines every row it reads again, told apart by
  ``_hw_run_id``: an earlier run's rows are no duplicates).
* **Checkpoints that never committed.**  A finished run's checkpoint that failed after
  its quarantine commit has its quarantined rows deleted as its lanes end, best effort
  (the warning "could not be removed"): the rows left behind belong to no committed
  checkpoint, and the next run quarantined them again.  Such rows (of a finished run
  the store knows, whose checkpoint it does not record as committed) are deleted,
  with or without the flag (realign asks first, as for any change).  A run still
  unfinished keeps its rows: its resume finds its quarantine commits by their markers.
* **Checkpoints whose commit landed unrecorded.**  The store's word that a checkpoint
  did not commit is not enough: its commit may have landed and raised (its answer
  lost), in a run whose engine did not look it up.  Each such checkpoint's commit is
  looked up in the stream's table by its marker first, as a resumed attempt looks
  (:func:`~headwater.engine._markers.data_commit_landed`): found, its quarantined rows
  are its own and stay (listed under ``landed``); a lookup that raises leaves them too
  and is reported (``unchecked``, and the command exits 1), never taken for "absent".
  The store is not told: a finished run's records are final
  (:meth:`~headwater.metadata_store.MetadataStore.record_checkpoint`), and realign
  moves counters, not runs.
* **Replays' rows.**  A replay's quarantined rows keep the id of the run it replays,
  under the replay's own checkpoints: those are asked of the replay (its records, its
  markers), or every replayed run's quarantined rows would count as never committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.engine._markers import data_commit_landed
from headwater.engine._stream_runner import describe_error
from headwater.expectations import quarantine_refusal, quarantine_stream
from headwater.metadata_store._models import DURABLE_CHECKPOINT_STATUSES, FINISHED_STATUSES
from headwater.plan import RunPlan
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.destinations import Destination
    from headwater.metadata_store import MetadataStore, RunRecord

_RUN, _CHECKPOINT = "_hw_run_id", "_hw_checkpoint"


@dataclass
class QuarantineRealignment:
    """One stream's quarantine table: what realigning found there, and did."""

    table: str
    #: Each lane's app id (``..._quarantine``) in the quarantine table, latest version.
    lanes: dict[str, int] = field(default_factory=dict)
    #: Runs the store does not know whose rows are in the quarantine table: run -> rows.
    unknown_runs: dict[str, int] = field(default_factory=dict)
    #: Checkpoints of finished runs, not committed, whose rows are there: run -> indices.
    uncommitted: dict[str, list[int]] = field(default_factory=dict)
    #: Such checkpoints whose commit the stream's table holds (rows kept): run -> indices.
    landed: dict[str, list[int]] = field(default_factory=dict)
    #: Such checkpoints whose commit could not be looked up (rows kept): run -> the
    #: error, by index.
    unchecked: dict[str, dict[int, str]] = field(default_factory=dict)
    #: Rows deleted (unknown runs' with the flag, uncommitted checkpoints'), else None.
    deleted_rows: int | None = None

    @property
    def top(self) -> int | None:
        return max(self.lanes.values(), default=None)

    def drops_unknown(self, mode: str, drop_unknown_runs: bool) -> bool:
        """Whether realigning deletes the unknown runs' rows (asked, there are some, and
        ``mode`` would quarantine them again)."""
        return drop_unknown_runs and bool(self.unknown_runs) and drops_unknown_runs(mode)

    def changes(self, mode: str, drop_unknown_runs: bool) -> bool:
        """Whether realigning deletes rows of the quarantine table."""
        return bool(self.uncommitted) or self.drops_unknown(mode, drop_unknown_runs)


def inspect_quarantine(spark: SparkSession, store: MetadataStore, destination: Destination,
                       stream: str, app_id_prefix: str) -> QuarantineRealignment | None:
    """The quarantine table of ``stream`` as realign sees it; None when it has none.

    A finished run's checkpoint the store does not record as committed is looked up
    in ``stream``'s table (the module docstring) before its rows count as
    ``uncommitted``."""
    name = quarantine_stream(stream)
    if quarantine_refusal(destination.type_name) is not None \
            or destination.table_columns(name, spark) is None:
        return None
    found = QuarantineRealignment(table=destination.table_location(name),
                                  lanes=destination.lane_versions(spark, name, app_id_prefix))
    held: dict[str, dict[int, int]] = {}
    for row in (destination.read_table(spark, name, [_RUN, _CHECKPOINT])
                .groupBy(_RUN, _CHECKPOINT).count().collect()):
        held.setdefault(row[_RUN], {})[int(row[_CHECKPOINT])] = int(row["count"])
    for run_id, checkpoints in sorted(held.items()):
        run = store.get_run(run_id)
        if run is None:
            found.unknown_runs[run_id] = sum(checkpoints.values())
        elif run.status in FINISHED_STATUSES:
            left = sorted(set(checkpoints) - _committed(store, run_id, stream))
            owners = _owners(store, run, stream, left) if left else {}
            for index in left:
                owner = owners.get(index, run)
                if owner.status in FINISHED_STATUSES \
                        and index not in _committed(store, owner.run_id, stream):
                    _ask_the_table(spark, store, destination, owner, stream, index, found)
    return found


def _owners(store: MetadataStore, run: RunRecord, stream: str,
            indices: list[int]) -> dict[int, RunRecord]:
    """Which run made each of ``indices`` of ``run``'s rows: a replay of ``run`` whose plan
    has that checkpoint (its rows keep the replayed run's id), else ``run`` itself.  An
    unfinished replay keeps its rows (its resume finds its commits by their markers)."""
    if set(indices) <= _planned(run, stream):
        return {}
    owners: dict[int, RunRecord] = {}
    for replay in store.replays_of(run.connection, run.run_id):
        owners.update(dict.fromkeys(_planned(replay, stream) & set(indices), replay))
    return owners


def _planned(run: RunRecord, stream: str) -> set[int]:
    """The checkpoints of ``stream`` in ``run``'s persisted plan."""
    streams = RunPlan.from_dict(run.plan).streams if run.plan else ()
    return {c.index for s in streams if s.stream.name == stream for c in s.checkpoints}


def _ask_the_table(spark: SparkSession, store: MetadataStore, destination: Destination,
                   run: RunRecord, stream: str, index: int,
                   found: QuarantineRealignment) -> None:
    """File checkpoint ``index`` of ``run`` under ``uncommitted``, ``landed`` or
    ``unchecked``, as the lookup of its commit in ``stream``'s table answers."""
    try:
        landed = data_commit_landed(spark, destination, store.store_id, run, stream, index)
    except Exception as exc:
        found.unchecked.setdefault(run.run_id, {})[index] = describe_error(exc)
        return
    (found.landed if landed else found.uncommitted).setdefault(run.run_id, []).append(index)


def drops_unknown_runs(mode: str) -> bool:
    """Whether the next sync would quarantine an unknown run's rows again (not overwrite)."""
    return mode != DestinationSyncMode.OVERWRITE


def fix_quarantine(spark: SparkSession, destination: Destination, stream: str, mode: str,
                   found: QuarantineRealignment, *, drop_unknown_runs: bool) -> None:
    """Delete the rows of ``found``'s uncommitted checkpoints, and with
    ``drop_unknown_runs`` (not under ``overwrite``) its unknown runs' rows."""
    name = quarantine_stream(stream)
    if not found.changes(mode, drop_unknown_runs):
        return
    unknown = found.drops_unknown(mode, drop_unknown_runs)
    deleted = destination.delete_runs(spark, name, list(found.unknown_runs)) if unknown else 0
    for run_id, indices in found.uncommitted.items():
        deleted += destination.delete_checkpoints(spark, name, run_id, indices)
    found.deleted_rows = deleted


def _committed(store: MetadataStore, run_id: str, stream: str) -> set[int]:
    """The checkpoints of ``stream`` the store records ``run_id`` as having committed."""
    return {c.index for c in store.list_checkpoints(run_id)
            if c.stream == stream and c.status in DURABLE_CHECKPOINT_STATUSES}


__all__ = ["QuarantineRealignment", "drops_unknown_runs", "fix_quarantine",
           "inspect_quarantine"]
