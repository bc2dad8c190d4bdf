"""The driver's side of the tasks' files: one Iceberg snapshot per checkpoint, through PyIceberg.

Why not ``Table.append``/``overwrite``/``add_files``: ``append`` and ``overwrite``
take the rows themselves (they would travel through the driver), ``overwrite``
makes two snapshots (a ``delete`` and an ``append``), and ``add_files`` scans
every manifest for duplicates on each commit.  The snapshot producer under them
takes ``DataFile`` objects for files written elsewhere, so each checkpoint is
one transaction holding exactly one snapshot (``append``, or ``overwrite``
removing every current data file, or the files a copy-on-write rewrite
replaces: ``_rewrite.py``) whose summary carries the checkpoint's
marker, plus the lane's version as a table property (``_markers.py``): one
metadata commit, atomic in the catalog (a compare-and-swap of the metadata
location), so the marker and the rows land together or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from headwater.errors import AuthenticationError, RefusedCommitOutcomeUnknown

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

#: The branch readers of the table read (PyIceberg's ``MAIN_BRANCH``).
MAIN = "main"

T = TypeVar("T")

log = logging.getLogger(__name__)


def data_files(table: Table, paths: Sequence[str]) -> list[DataFile]:
    """The ``DataFile`` of each Parquet file at ``paths``, its metrics read from its footer.

    Read by the driver (a footer per file, not the rows); the files' columns are
    matched to the table's by name (the table's name mapping).  A partitioned
    table's files each get their partition record, proven from their statistics
    (``_layout.py``: a file holding more than one partition value is an error).
    """
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    _quiet_missing_float_statistics()
    if not table.spec().is_unpartitioned():
        from headwater.destinations.iceberg._layout import partitioned_data_file

        return [partitioned_data_file(table, path) for path in paths]
    return [parquet_file_to_data_file(table.io, table.metadata, path) for path in paths]


class _MissingStatistics(logging.Filter):
    """Drops PyIceberg's warning that a column of a file has no Parquet statistics.

    The tasks write float and double columns without statistics on purpose
    (``_table_files/_parquet.py`` says why: bounds that leave NaN out made Spark skip row
    groups wrongly), so every file of a table with such a column drew one warning
    per column.  Iceberg then records no bounds for them, which is right: no file
    is pruned by a float predicate.  Every other column has statistics in every
    file the tasks and rewrites write, so the warning can only be about these.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("PyArrow statistics missing for column")


_FILTER = _MissingStatistics()


def _quiet_missing_float_statistics() -> None:
    pyarrow_io = logging.getLogger("pyiceberg.io.pyarrow")
    if _FILTER not in pyarrow_io.filters:
        pyarrow_io.addFilter(_FILTER)


def current_data_files(table: Table, branch: str = MAIN) -> list[DataFile]:
    """Every data file the head of ``branch`` (by default the table's current snapshot) holds."""
    from pyiceberg.manifest import ManifestContent

    snapshot = table.metadata.snapshot_by_name(branch)
    if snapshot is None:
        return []
    found: list[DataFile] = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        found.extend(entry.data_file
                     for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True))
    return found


def commit(table: Table, files: Sequence[DataFile], *, overwrite: bool,
           summary: Mapping[str, str], properties: Mapping[str, str],
           removing: Sequence[DataFile] = (), branch: str = MAIN,
           drop_branch: str | None = None) -> int:
    """Add ``files`` (replacing every current data file when ``overwrite``) in one snapshot.

    ``removing``: current data files the snapshot removes (a copy-on-write
    rewrite: ``_rewrite.py``), which makes it an ``overwrite`` snapshot too.
    ``summary`` goes into the snapshot's summary, ``properties`` into the table's,
    in the same metadata commit.  The snapshot goes on ``branch`` (created when
    missing, with no parent: it then holds ``files`` only); ``drop_branch`` is
    removed in the same commit.  Returns the new snapshot's id.  Raises
    PyIceberg's ``CommitFailedException`` when another writer committed since
    ``table`` was loaded (nothing of this commit landed then): the snapshot
    asserts the branch's head is still the one ``table`` read.
    """
    from pyiceberg.table.update.snapshot import ManageSnapshots

    tx = _without_retries(table).transaction()
    if properties:
        tx.set_properties(dict(properties))
    producer = tx.update_snapshot(snapshot_properties=dict(summary), branch=branch)
    replacing = list(current_data_files(table, branch=branch)) if overwrite else list(removing)
    with producer.overwrite() if replacing else producer.fast_append() as snapshot:
        for old in replacing:
            snapshot.delete_data_file(old)
        for new in files:
            snapshot.append_data_file(new)
    if drop_branch is not None:
        with ManageSnapshots(tx) as refs:
            refs.remove_branch(drop_branch)
    committed = tx.commit_transaction()
    head = committed.metadata.snapshot_by_name(branch)
    assert head is not None
    return int(head.snapshot_id)


def refused_commit(refused: AuthenticationError, what: str, landed: Callable[[], T | None],
                   *, stream: str, checkpoint: int | None = None) -> T:
    """What ``landed()`` finds of a commit the catalog refused; else ``refused``, saying so.

    Why look: exactly once is the product, and "refused" is the catalog's answer,
    not proof that nothing changed (a proxy or gateway may refuse the answer of a
    commit the catalog applied; a token may expire between a commit and the call
    that follows it, and ``refused`` may come from the reload before a retry).
    ``landed`` is the lookup every commit makes before it tries (the marker in
    the table's snapshots, with the credential the sync has: a token that may
    read but not write still answers it).  When the lookup raises too (a token
    revoked or expired, the catalog unreachable), whether the commit landed is
    unknown: :class:`~headwater.errors.RefusedCommitOutcomeUnknown`, still an
    AuthenticationError (exit code 3), and the engine keeps the run resumable.
    ``checkpoint`` names the checkpoint (None: a publish).  Either error names
    the field to fix, ``what`` and the catalog, never a credential.
    """
    try:
        found = landed()
    except Exception as lookup:
        why = ("refused" if isinstance(lookup, AuthenticationError)
               else f"{type(lookup).__name__}: "
                    f"{(str(lookup).strip().splitlines() or [''])[0]}")
        context = {k: v for k, v in refused.context.items() if k not in ("stream", "checkpoint")}
        raise RefusedCommitOutcomeUnknown(what, error=refused.message, lookup=why,
                                          stream=stream, checkpoint=checkpoint,
                                          **context) from refused
    if found is not None:
        log.warning("%s was refused after it landed, so it counts as committed: %s", what,
                    refused.message)
        return found
    outcome = "nothing of it landed (its marker is not in the table)"
    raise AuthenticationError(f"{what} failed, {outcome}: {refused.message}",
                              **{**refused.context, "stream": stream}) from refused


def _without_retries(table: Table) -> Table:
    """``table``, told (in this process only) not to re-apply a snapshot that lost a race.

    PyIceberg (0.12) retries a snapshot commit the catalog refused because another
    writer committed first: it reloads the table and re-applies the same snapshot
    on the new head, ``commit.retry.num-retries`` times (default 4).  That skips
    the marker lookup every Headwater commit makes first, so when the winner was
    another committer of the same checkpoint (a second process, a resumed
    attempt) the checkpoint landed twice: two committers racing on one table
    made 9 checkpoints into 11 snapshots (tests/integration/destinations/
    iceberg/test_iceberg_s3.py).  With no retries the refusal reaches the
    caller, whose loop reloads the table and looks for the marker before trying
    again.  The property is set on an in-memory copy of the metadata only: it is
    no update, so the table's own properties (which other engines' writers
    read) are left as they are.
    """
    from pyiceberg.table import Table as TableClass
    from pyiceberg.table import TableProperties

    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    return TableClass(identifier=table.name(),
                      metadata=table.metadata.model_copy(update={"properties": properties}),
                      metadata_location=table.metadata_location, io=table.io,
                      catalog=table.catalog)


def snapshots_newest_first(table: Table) -> list[tuple[int, dict[str, Any]]]:
    """Each snapshot's id and summary (its operation under ``operation``), newest first."""
    found = []
    for snapshot in sorted(table.snapshots(),
                           key=lambda s: (s.sequence_number or 0, s.timestamp_ms),
                           reverse=True):
        summary: dict[str, Any] = {}
        if snapshot.summary is not None:
            summary = dict(snapshot.summary.additional_properties)
            summary["operation"] = str(snapshot.summary.operation.value)
        found.append((int(snapshot.snapshot_id), summary))
    return found


__all__ = ["MAIN", "commit", "current_data_files", "data_files", "refused_commit",
           "snapshots_newest_first"]
