"""What a sync reports: per-stream figures, the run's result, and the observer hooks.

Its own module so that what reads results (the CLI, the ``after_sync`` hooks,
the scheduler) does not import the engine that produces them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.metadata_store import RunStatus

if TYPE_CHECKING:
    from headwater.destinations import CommitResult
    from headwater.plan import RunPlan


@dataclass
class StreamStats:
    """Per-stream figures of one run, as shown in the summary and in ``--json``.

    The records, rejected records and bytes are the whole run's: those of a
    resumed run include what its earlier attempts committed (each checkpoint
    once), so the run's record, ``headwater runs``, the web page and
    ``/metrics`` all say the same.  ``checkpoints_done`` is the run's too;
    ``duration_s`` is the time this attempt spent on the stream.
    """

    name: str
    mode: str
    status: str = "pending"
    records_read: int = 0
    records_written: int = 0
    records_rejected: int = 0
    bytes: int = 0
    partitions: int = 0
    checkpoints: int = 0
    checkpoints_done: int = 0
    duration_s: float = 0.0
    error: str | None = None
    #: The table version of the commit that published a staged overwrite (see the
    #: module docstring); also recorded on the stream's last checkpoint.
    published_version: int | None = None
    #: A commit of this attempt raised and its lookup too: whether it landed is unknown
    #: (:class:`~headwater.errors.CommitOutcomeUnknown`; ``error`` says which).  The
    #: stream is then ``stopped`` (or ``failed``, when another checkpoint failed).
    outcome_unknown: bool = False
    #: Why a stream that committed everything looks wrong (:func:`stream_warnings`): its
    #: status is then ``warned``, or ``failed`` with ``on_warning: fail``.
    warnings: list[str] = field(default_factory=list)
    #: Rows the stream's schema contract kept out (``discard_row``), and how many per reason.
    records_discarded: int = 0
    discarded: dict[str, int] = field(default_factory=dict)
    #: Per expectation (:mod:`headwater.expectations`): ``{name: {action, evaluated,
    #: failed}}``, the run's like the records; empty for a stream without any.
    expectations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "mode": self.mode,
            "status": self.status,
            "records_read": self.records_read,
            "records_written": self.records_written,
            "records_rejected": self.records_rejected,
            "bytes": self.bytes,
            "partitions": self.partitions,
            "checkpoints": self.checkpoints,
            "checkpoints_done": self.checkpoints_done,
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
        }
        if self.published_version is not None:
            data["published_version"] = self.published_version
        if self.outcome_unknown:
            data["outcome_unknown"] = True
        if self.warnings:
            data["warnings"] = list(self.warnings)
        if self.records_discarded:
            data["records_discarded"] = self.records_discarded
            data["discarded"] = dict(self.discarded)
        if self.expectations:
            data["expectations"] = {name: dict(counts)
                                    for name, counts in self.expectations.items()}
        return data


@dataclass
class SyncResult:
    run_id: str
    connection: str
    status: str
    resumed: bool
    attempt: int
    streams: list[StreamStats] = field(default_factory=list)
    duration_s: float = 0.0
    #: ``sync``, ``backfill`` or ``replay`` (see :data:`~headwater.plan.RUN_PURPOSES`).
    kind: str = "sync"
    replay_of: str | None = None
    #: What each ``after_sync`` hook did (command, exit code), in order.
    hooks: list[dict[str, Any]] = field(default_factory=list)
    #: Why a ``stopped`` run stopped and what it left (see :meth:`SyncEngine.request_stop`).
    stop_reason: str | None = None
    #: The exit code of a run that stopped because a commit's outcome is unknown (the
    #: error's: 1, or 3 for refused credentials), not on request; None: its status's.
    exit_code: int | None = None
    #: Seconds per step of the sync (:mod:`headwater.engine._steps`): where a small
    #: sync's fixed cost goes.
    steps_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "run_id": self.run_id,
            "connection": self.connection,
            "status": self.status,
            "resumed": self.resumed,
            "attempt": self.attempt,
            "duration_s": round(self.duration_s, 3),
            "streams": [s.to_dict() for s in self.streams],
        }
        if self.kind != "sync":
            data["kind"] = self.kind
        if self.replay_of is not None:
            data["replay_of"] = self.replay_of
        if self.hooks:
            data["hooks"] = self.hooks
        if self.stop_reason is not None:
            data["stop_reason"] = self.stop_reason
        if self.exit_code is not None:
            data["outcome_unknown"] = True
        if self.steps_s:
            data["steps_s"] = self.steps_s
        return data


def sync_document(results: Sequence[SyncResult]) -> dict[str, Any]:
    """The ``--json`` document of one ``headwater sync``: the newest run's own document,
    with ``runs``, every run the command ran (oldest first, the newest last).

    A sync that resumed an unfinished run and then ran a new one ran two runs;
    the top level stays one run's document (the newest: the one whose status
    decides the exit code), so readers of a single run's fields keep working.
    """
    if not results:
        raise ValueError("a sync runs at least one run")
    runs = [result.to_dict() for result in results]
    return {**runs[-1], "runs": runs}


class SyncObserver:
    """Hooks the CLI uses to draw progress; every method may be called from any thread."""

    def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
        """The plan is persisted and reading starts."""

    def stream_resumed(self, stream: str, partitions: int, rows: int) -> None:
        """A resumed run's stream starts: earlier attempts released checkpoints of
        ``partitions`` planned partitions holding ``rows`` rows, which are not run again
        (so :meth:`checkpoint_committed` never reports them).  Not called for a stream
        with none."""

    def checkpoint_started(self, stream: str, index: int) -> None:
        """A lane starts checkpoint ``index``: a stop requested from now on lets it commit."""

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        """One checkpoint's data is durable."""

    def stream_finished(self, stats: StreamStats) -> None:
        """A stream succeeded or failed."""


def stream_warnings(stats: StreamStats, unwritten: Sequence[str] = ()) -> list[str]:
    """Why a stream that committed everything still did not plainly succeed.

    Every record it read was rejected (at least one read): a sync whose rows all
    carry notes instead of values is no success, whatever made them misfit (a
    schema sampled wrong, a changed source).  Or its table has columns
    (``unwritten``) the stream's schema no longer has: this run's rows hold null in
    them, and their values, if any came, are in ``_hw_notes``.
    """
    found = []
    if stats.records_read and stats.records_rejected >= stats.records_read:
        found.append(f"every record read was rejected ({stats.records_rejected:,} of "
                     f"{stats.records_read:,}; why is in the table's _hw_notes)")
    if unwritten:
        found.append("the table has columns the stream's schema no longer has (null in this "
                     f"run's rows): {', '.join(unwritten)}")
    return found


def outcome(stats: Sequence[StreamStats], stop_reason: str,
            unchecked: Sequence[str] = ()) -> tuple[RunStatus, str | None]:
    """The run's status and error: any commit whose outcome is unknown stops it, else
    any failed stream fails it, else any stopped one stops it, else any ``warned`` one
    makes it ``warned`` (its error then lists the warnings).

    ``unchecked``: checkpoints an earlier attempt could not check and this one did
    not get to (``stream: why``).  A run with either is ``stopped``, not
    ``failed``: a failed run is finished, and the next sync would plan a new run
    from the state and write again what may have landed; stopped, it is resumed
    and the commits are looked up again.  Its error names every stream's problem.
    """
    if unchecked or any(s.outcome_unknown for s in stats):
        problems = [f"{s.name}: {s.error}" for s in stats
                    if s.error and (s.outcome_unknown or s.status == "failed")]
        return "stopped", "; ".join([*problems, *unchecked])
    failed = [s for s in stats if s.status == "failed"]
    if failed:
        return "failed", "; ".join(f"{s.name}: {s.error}" for s in failed)
    stopped = [s for s in stats if s.status == "stopped"]
    if stopped:
        left = ", ".join(f"{s.name} {s.checkpoints_done} of {s.checkpoints}" for s in stopped)
        return "stopped", (f"{stop_reason}: stopped after the commits in flight, checkpoints "
                           f"committed: {left}; the next sync continues this run")
    warned = [f"{s.name}: {w}" for s in stats if s.status == "warned" for w in s.warnings]
    if warned:
        return "warned", "; ".join(warned)
    return "succeeded", None


__all__ = ["StreamStats", "SyncObserver", "SyncResult", "outcome", "stream_warnings",
           "sync_document"]
