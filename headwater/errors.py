"""Every error Headwater raises on purpose, in one tree.

Callers catch by meaning, and the CLI maps each branch to an exit code, so the
tree is the contract::

    HeadwaterError                     exit 1 unless a subclass says otherwise
    ├── ConfigError                    exit 2: the connection file or a config is wrong
    │   └── SpecValidationError        a source/destination config breaks its spec
    ├── SchemaContractError            exit 5: a frozen schema contract met a change
    ├── AuthenticationError            exit 3: credentials were refused
    │   └── RefusedCommitOutcomeUnknown    a refused commit whose lookup failed too
    ├── ConnectorError                 a connector failed while checking/discovering/reading
    ├── DestinationError               a destination failed to prepare or commit
    │   └── CommitOutcomeUnknownError      a failed commit whose lookup failed too
    ├── StateError                     stored state cannot be read or does not fit the stream
    └── MetadataStoreError             the metadata store is unreachable or inconsistent
        ├── ConnectionLockedError      another sync of the same connection is running
        ├── StoreBehindTableError      the store hands out indices a table already holds
        └── StoreMissingError          exit 2: a reader named a store no sync has written

Both ``...OutcomeUnknown`` errors are also :class:`CommitOutcomeUnknown`, the one
signal the engine recognises: the run stays unfinished (see that class).

Errors carry context as keyword arguments (``stream=``, ``partition=``,
``field=``) so messages and ``--json`` output can show them, and third-party
errors are translated at the boundary with ``raise ... from exc``.  Messages
must never contain secret values: :func:`headwater.config.mask` masks known
secrets again before anything is printed, as a second line of defence.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """What the ``headwater`` command's exit code means, for scripts, schedulers and the
    Airflow integration alike."""

    SUCCEEDED = 0
    #: The sync (or check) failed; state of the failed work did not move.
    FAILED = 1
    #: The connection file or a config is wrong.
    CONFIG = 2
    #: Credentials were refused.
    AUTHENTICATION = 3
    #: The sync committed everything and finished (``warned``), but a stream's result looks
    #: wrong: every record it read was rejected, or its table has columns it no longer
    #: writes.  ``on_warning: fail`` in the connection file makes such a sync fail (1).
    WARNED = 4
    #: A stream's schema changed where its ``schema_contract`` says ``freeze``: nothing of
    #: the sync was committed and no state moved (``docs/schema-contracts.md``).
    SCHEMA_CONTRACT = 5
    #: Stopped on request (SIGINT/SIGTERM) after the commits in flight; the next sync
    #: continues the run.
    STOPPED = 130


class HeadwaterError(Exception):
    """Root of every error Headwater raises on purpose."""

    exit_code: int = ExitCode.FAILED

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = {k: v for k, v in context.items() if v is not None}

    def __str__(self) -> str:
        if not self.context:
            return self.message
        where = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.message} ({where})"


class ConfigError(HeadwaterError):
    """The connection file, or a config inside it, is not what Headwater expects."""

    exit_code = ExitCode.CONFIG


class SpecValidationError(ConfigError):
    """A config does not validate against its connector's spec.

    ``problems`` holds one ``(field_path, expected)`` pair per violation, so a
    person reads e.g. ``source.config.users: expected integer, got 'ten'``.
    """

    def __init__(self, message: str, problems: list[tuple[str, str]], **context: Any) -> None:
        super().__init__(message, **context)
        self.problems = problems

    def __str__(self) -> str:
        lines = [super().__str__()]
        lines += [f"  - {path}: {expected}" for path, expected in self.problems]
        return "\n".join(lines)


class SchemaContractError(HeadwaterError):
    """A stream met a schema change (a new table, a new column, a changed type) its
    ``schema_contract`` freezes.  Raised at plan time when the stream's schema shows the
    change, else by the first task that meets it, before that checkpoint commits."""

    exit_code = ExitCode.SCHEMA_CONTRACT


class ExpectationFailed(HeadwaterError):
    """A row failed a stream's expectation whose action is ``fail``
    (:mod:`headwater.expectations`): its checkpoint did not commit."""


class AuthenticationError(HeadwaterError):
    """The source or destination refused the credentials in the config."""

    exit_code = ExitCode.AUTHENTICATION


class ConnectorError(HeadwaterError):
    """A connector failed while checking, discovering or reading."""


class DestinationError(HeadwaterError):
    """A destination failed to prepare a table or to commit a checkpoint batch."""


class NoTableError(DestinationError):
    """The destination keeps no table of a stream's rows to read back (Kafka: a topic is
    a log of what was sent, not the rows as they are now).

    Raised by :meth:`~headwater.destinations.Destination.read_table`; ``headwater
    verify`` prints it as ``cannot verify: ...``, and the destination kit then reads
    only through the reader it was given.
    """


class CommitOutcomeUnknown(HeadwaterError):
    """A commit raised, and looking its marker up in the table raised too: whether it
    landed is unknown.

    Not raised itself: the destinations raise :class:`CommitOutcomeUnknownError`
    (exit 1) or, when the destination refused the credentials,
    :class:`RefusedCommitOutcomeUnknown` (exit 3), so the kind of error and its exit
    code stay what they were.  A lookup that *answered* (the marker is not there,
    the table does not exist yet) is no such error: that commit failed, plainly.

    Why it matters: a failed run is finished, and the next sync plans a new run
    from the state, reading the checkpoint's partitions again under a new
    marker; had the commit landed, its rows would be in the table twice.  So
    the engine keeps a run that meets this error unfinished (``stopped``, like
    a run stopped on request): the next sync resumes its persisted plan, looks
    the checkpoint's marker up again, and skips it if it landed.  The state
    of the checkpoint is not released meanwhile.
    """

    def __init__(self, what: str, *, error: str, lookup: str | None, stream: str,
                 checkpoint: int | None = None, **context: Any) -> None:
        """``what`` failed with ``error``, then the lookup with ``lookup`` (None: ``what``
        was the lookup itself, as when a resumed attempt looks an earlier one's commit up)."""
        looked = f" and looking it up in the table failed too ({lookup})" if lookup else ""
        super().__init__(
            f"{what} failed ({error}){looked}: could not check whether "
            f"{_unit(checkpoint, stream)} landed; the next sync resumes this run and checks "
            "again", stream=stream, checkpoint=checkpoint, **context)
        self.stream = stream
        #: The checkpoint's index; None for the publish of a staged overwrite.
        self.checkpoint = checkpoint


def _unit(checkpoint: int | None, stream: str) -> str:
    if checkpoint is None:
        return f"the publish of stream {stream}"
    return f"checkpoint {checkpoint} of stream {stream}"


class CommitOutcomeUnknownError(CommitOutcomeUnknown, DestinationError):
    """A commit failed and its lookup failed too (see :class:`CommitOutcomeUnknown`)."""


class RefusedCommitOutcomeUnknown(CommitOutcomeUnknown, AuthenticationError):
    """A commit the destination refused (credentials), whose lookup failed too; exit 3."""


class StateError(HeadwaterError):
    """Stored state cannot be parsed or does not belong to the stream."""


class MetadataStoreError(HeadwaterError):
    """The metadata store cannot be reached or holds something inconsistent."""


class StoreMissingError(MetadataStoreError):
    """A command that only reads (``runs``, ``state show``...) was pointed at a SQLite store
    that does not exist: the path is wrong, or no sync has written it yet.  Exit 2, as for a
    wrong config: creating an empty store there would answer "no runs" for a typo."""

    exit_code = ExitCode.CONFIG


class ConnectionLockedError(MetadataStoreError):
    """Another sync of the same connection holds the lock."""


class StoreBehindTableError(MetadataStoreError):
    """A new checkpoint's index is a ``txnVersion`` its table already holds.

    Checkpoint indices are the Delta ``txnVersion`` of each lane's commits, so
    the store handing one out again means it went back in time (restored from
    an older backup, a lagging replica): Delta would skip the commit as a
    duplicate, and the checkpoint's data would be lost.  The stream stops
    instead; ``headwater state realign`` moves the store's counters past the
    tables' versions.
    """
