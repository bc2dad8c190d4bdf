"""The JSON shapes of the page's API, from store records and connection files.

Pure functions (records in, plain dicts out, ``now`` passed in), so they are
tested without a server.  Every document leaves through :func:`masked` in
``_app``; these functions do not mask.  The per-stream and per-partition
figures of a run are read by :mod:`headwater.operations` (``runs show``'s
reading of the same records).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from headwater.metadata_store import (
    DURABLE_CHECKPOINT_STATUSES,
    CheckpointRecord,
    LiveFigure,
    RunLogLine,
    RunRecord,
    RunSummary,
)
from headwater.operations import partition_rows, stream_rows
from headwater.ui._partition_outcomes import stream_outcomes

#: The key under which the full-refresh cursor marks a completed sync.
_FULL_REFRESH_DONE = "__ab_full_refresh_sync_complete"


def iso(value: datetime | None) -> str | None:
    """An ISO-8601 UTC time, or ``None``."""
    return value.isoformat() if value is not None else None


def run_summary(run: RunSummary | RunRecord, now: datetime) -> dict[str, Any]:
    """``RunSummary`` of the contract: figures summed over the run's streams.

    A run still ``running`` has no figures in its record yet (``None``); its
    duration is counted to ``now``.  A run of several attempts (stopped or
    killed, then resumed) lasts from its first attempt's start to its last
    one's end, the time between attempts included, as ``/metrics`` counts it;
    its figures are every attempt's (the engine records them so).
    """
    streams = (run.stats or {}).get("streams")
    end = run.ended_at or (now if run.status == "running" else None)
    # Rounded once, and the rate taken from the rounded figure: every view that
    # recomputes the rate from ``duration_s`` (the run page of a resumed run) agrees.
    duration = round((end - run.started_at).total_seconds(), 3) if end is not None else None
    records = _total(streams, "records_written")
    return {
        "run_id": run.run_id,
        "connection": run.connection,
        "kind": run.kind,
        "status": run.status,
        "started_at": iso(run.started_at),
        "ended_at": iso(run.ended_at),
        "duration_s": duration,
        "records": records,
        "bytes": _total(streams, "bytes"),
        "rejected": _total(streams, "records_rejected"),
        "rows_per_s": _rate(records, duration),
    }


def last_run(runs: Sequence[dict[str, Any]],
             summaries: Sequence[RunSummary | RunRecord]) -> dict[str, Any] | None:
    """The run a list shows as a connection's last (``runs``: :func:`run_summary` of each of
    ``summaries``, newest first): the newest, unless it is the empty new run ``headwater
    sync`` starts right after finishing a resumed one (its stats say ``follows_resumed``):
    then the resumed run, which did the work (the empty one read as "0 records")."""
    if not runs:
        return None
    newest = summaries[0].stats or {}
    follows = newest.get("follows_resumed")
    if follows and runs[0]["status"] == "succeeded" and not runs[0]["records"]:
        return next((r for r in runs if r["run_id"] == follows), runs[0])
    return runs[0]


def _total(streams: Sequence[Mapping[str, Any]] | None, key: str) -> int | None:
    if streams is None:
        return None
    return sum(int(s.get(key) or 0) for s in streams)


def _rate(records: int | None, seconds: float | None) -> float | None:
    if records is None or not seconds:
        return None
    return round(records / seconds, 1)


# ---------------------------------------------------------------- state in words


def parse_time(value: Any) -> datetime | None:
    """A cursor value as an aware time, if it is one (ISO text), else ``None``."""
    if not isinstance(value, str) or len(value) < 10 or value[4:5] != "-":
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _words(value: Any) -> str:
    parsed = parse_time(value)
    if parsed is None:
        return str(value)
    if len(value) == 10:  # a date
        return value
    return parsed.strftime("%Y-%m-%d %H:%M")


def newest_cursor(state: Mapping[str, Any] | None) -> Any:
    """The highest committed cursor value a stream's state records (``None``: none)."""
    if not state:
        return None
    slices = state.get("slices")
    if isinstance(slices, list) and slices:
        ends: list[Any] = [s.get("end") for s in slices
                           if isinstance(s, Mapping) and s.get("end") is not None]
        try:
            return max(ends) if ends else None
        except TypeError:
            return ends[-1]
    return None


def state_text(state: Mapping[str, Any] | None) -> str:
    """A stream's state for people: "read up to 2026-11-20 14:00", "no state yet"..."""
    if not state:
        return "no state yet: the next sync reads everything"
    if state.get(_FULL_REFRESH_DONE):
        return "full refresh: the last sync read everything"
    slices = state.get("slices")
    if isinstance(slices, list):
        if not slices:
            return "nothing read yet"
        first = slices[0]
        text = f"read up to {_words(first.get('end'))}"
        if first.get("start") not in (None, "") and len(slices) == 1:
            text = f"read from {_words(first.get('start'))} up to {_words(first.get('end'))}"
        if len(slices) > 1:
            text += (f", and {len(slices) - 1} later range(s) up to "
                     f"{_words(newest_cursor(state))} (gaps are read by the next sync)")
        return text
    if state.get("state_type") == "object-keys":
        return _objects_text(state)
    return f"the connector's own state ({len(state)} key(s))"


def _objects_text(state: Mapping[str, Any]) -> str:
    """The object storage cursor's state (:mod:`headwater.connectors.object_storage._cursor`):
    the objects it remembers as read, the highest key, the floor below which every key
    counts as read, and the large objects read in part."""
    recent = state.get("recent") or {}
    in_flight = state.get("in_flight") or {}
    floor = state.get("floor")
    if not recent and not in_flight and floor is None:
        return "no object read yet"
    keys = [*recent, *([floor] if floor else [])]
    parts = [f"{len(recent):,} object(s) read" + (f", up to key {max(keys)}" if keys else "")]
    if floor:
        parts.append(f"every key up to {floor} counts as read")
    if in_flight:
        parts.append(f"{len(in_flight):,} large object(s) read in part (the next sync "
                     "reads the rest)")
    return "; ".join(parts)


def freshness_s(state: Mapping[str, Any] | None, now: datetime) -> float | None:
    """Now minus the newest committed cursor, when that cursor is a time: read as
    ``/metrics`` reads it (:func:`headwater.observability.metrics.cursor_time`), so the
    page and the freshness metric agree."""
    from headwater.observability.metrics import cursor_time

    newest = cursor_time(state)
    return round((now - newest).total_seconds(), 1) if newest is not None else None


def stream_views(configured: Sequence[Mapping[str, Any]], states: Mapping[str, Any],
                 tables: Mapping[str, str | None], now: datetime) -> list[dict[str, Any]]:
    """The streams of a connection page: how each is synced and its state in words.

    ``configured``: ``{name, sync_mode, cursor_field, primary_key}`` per stream,
    from the connection file or its last plan; a stream with state but not
    configured (any more) is listed too.
    """
    names = [c["name"] for c in configured]
    rows = list(configured) + [{"name": n} for n in sorted(states) if n not in names]
    views = []
    for row in rows:
        state = states.get(row["name"])
        views.append({
            "name": row["name"],
            "sync_mode": row.get("sync_mode"),
            "cursor_field": row.get("cursor_field"),
            "primary_key": list(row.get("primary_key") or []),
            "table": tables.get(row["name"]),
            "state": state,
            "state_text": state_text(state),
            "newest_cursor": newest_cursor(state),
            "freshness_s": freshness_s(state, now),
        })
    return views


def configured_from_plan(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How each stream was synced, as a run's persisted plan says (no connecting)."""
    found = []
    for stream_plan in plan.get("streams") or []:
        stream = stream_plan.get("stream") or {}
        mode = f"{stream.get('sync_mode')}+{stream.get('destination_sync_mode')}"
        found.append({"name": stream.get("name"), "sync_mode": mode,
                      "cursor_field": stream.get("cursor_field"),
                      "primary_key": stream.get("primary_key") or []})
    return found


# ---------------------------------------------------------------- one run


def _planned(plan: Mapping[str, Any]) -> dict[str, int]:
    """Partitions planned per stream."""
    return {str((s.get("stream") or {}).get("name")): sum(len(c.get("partitions") or [])
                                                      for c in s.get("checkpoints") or [])
            for s in plan.get("streams") or []}


def _planned_partitions(plan: Mapping[str, Any]) -> dict[str, dict[int, list[str]]]:
    """stream -> checkpoint index -> the partition ids the plan gave that checkpoint."""
    found: dict[str, dict[int, list[str]]] = {}
    for s in plan.get("streams") or []:
        found[str((s.get("stream") or {}).get("name"))] = {
            int(c.get("index", 0)): [str(p.get("id")) for p in c.get("partitions") or []]
            for c in s.get("checkpoints") or []}
    return found


def run_detail(run: RunRecord, checkpoints: Sequence[CheckpointRecord], commit_key: str,
               now: datetime, live: Sequence[LiveFigure] = ()) -> dict[str, Any]:
    """``GET /api/runs/{id}``: the run with per-stream, per-checkpoint and per-partition
    figures.  A running run's figures come from its committed checkpoints so far, and
    ``live``: the records its tasks have read so far in the checkpoints not committed yet
    (``reading`` partitions, ``records_reading``)."""
    live = live if run.status == "running" else ()  # a killed run's last figures: not live
    planned = _planned(run.plan)
    by_checkpoint = _planned_partitions(run.plan)
    recorded = {row.get("name"): row for row in stream_rows(run)}
    partitions = partition_rows(checkpoints)
    names: list[str] = list(dict.fromkeys([*planned, *(str(n) for n in recorded),
                                           *(c.stream for c in checkpoints)]))
    streams, errors = [], []
    # A resumed run's figures, from its checkpoints: the engine records the run's totals
    # over its attempts, but runs recorded before it did hold their last attempt's only.
    resumed = len(run.attempts) > 1
    for name in names:
        mine = [c for c in checkpoints if c.stream == name]
        done = [c for c in mine if c.status in DURABLE_CHECKPOINT_STATUSES]
        row = recorded.get(name) or {}
        figures = {key: sum(int(c.stats.get(key) or 0) for c in done)
                   for key in ("records_written", "records_rejected", "bytes")}
        if not resumed:
            figures = {key: row.get(key, value) for key, value in figures.items()}
        outcomes = stream_outcomes(name, by_checkpoint.get(name, {}), mine, run.status,
                                   row.get("error"))
        errors += outcomes.errors
        reading = [{"checkpoint_index": f.checkpoint_index, "partition_id": f.partition_id,
                    "records": f.records, "bytes": None, "duration_s": None,
                    "status": "reading", "error": None, "updated_at": iso(f.updated_at)}
                   for f in live if f.stream == name]
        streams.append({
            "name": name,
            "status": row.get("status") or ("running" if run.status == "running" else None),
            "records": figures["records_written"],
            "rejected": figures["records_rejected"],
            "bytes": figures["bytes"],
            "partitions_done": sum(len(c.stats.get("partitions") or []) for c in done),
            "partitions_planned": planned.get(name, 0),
            "records_reading": sum(f.records for f in live if f.stream == name),
            "error": row.get("error"),
            "warnings": list(row.get("warnings") or ()),
            "checkpoints": [{"index": c.index, "checkpoint_id": c.checkpoint_id,
                             "status": c.status, "records": c.stats.get("records_written"),
                             "bytes": c.stats.get("bytes"),
                             "duration_s": c.stats.get("duration_s"),
                             "commit": c.stats.get(commit_key), "error": c.stats.get("error")}
                            for c in mine],
            # The committed partitions with their figures, then (a run that ended) what
            # became of each other planned one: failed, cancelled, not started, and why.
            "partitions": sorted(
                [{"checkpoint_index": p["checkpoint"], "partition_id": p["partition"],
                  "records": p.get("records_written"), "bytes": p.get("bytes"),
                  "duration_s": p.get("duration_s"), "status": "committed",
                  "error": p.get("error")} for p in partitions if p["stream"] == name]
                + outcomes.partitions + reading, key=lambda p: p["checkpoint_index"]),
        })
    summary = run_summary(run, now)
    if summary["records"] is None or resumed:  # running, resumed: what is committed
        summary["records"] = sum(s["records"] or 0 for s in streams)
        summary["bytes"] = sum(s["bytes"] or 0 for s in streams)
        summary["rejected"] = sum(s["rejected"] or 0 for s in streams)
        summary["rows_per_s"] = _rate(summary["records"], summary["duration_s"])
    # A stop's reason is no error, nor a warned run's warnings (the page shows both apart).
    if run.error and not errors and run.status not in ("stopped", "warned"):
        errors.append({"stream": None, "checkpoint_index": None, "partition_id": None,
                       "message": run.error})
    return {
        **summary,
        "plan": run.plan,
        "state_before": run.state_before,
        "state_after": run.state_after,
        "error": run.error,
        "replay_of": run.plan.get("replay_of"),
        "config": run.config_redacted,
        "attempts": [{"number": a.number, "status": a.status, "pid": a.pid, "host": a.host,
                      "started_at": iso(a.started_at), "ended_at": iso(a.ended_at),
                      "error": a.error} for a in run.attempts],
        "streams": streams,
        "errors": errors,
        # Seconds per step (Spark session, early reads, plan, commits...), as recorded.
        "steps_s": (run.stats or {}).get("steps_s") or {},
        "progress": {
            "records": summary["records"],
            "partitions_done": sum(s["partitions_done"] for s in streams),
            "partitions_planned": sum(s["partitions_planned"] for s in streams),
            "rows_per_s": summary["rows_per_s"],
            "records_reading": sum(f.records for f in live),
            "partitions_reading": len(live),
            "live": run.status == "running",
        },
    }


def log_lines(lines: Sequence[RunLogLine], omitted: int) -> dict[str, Any]:
    """``GET /api/runs/{id}/logs``: the lines, and how many were left out to bound the store."""
    return {"lines": [{"seq": line.seq, "at": iso(line.at), "level": line.level,
                       "logger": line.logger, "message": line.message} for line in lines],
            "omitted": omitted}


def log_text(run: RunSummary | RunRecord, lines: Sequence[RunLogLine], omitted: int,
             kept: tuple[int, int]) -> str:
    """The run's stored log lines as a text file (``GET /api/runs/{id}/logs.txt``): one
    line per record (a traceback's lines indented under it), and where the store left lines
    out to bound a run (``kept``: its first and last counts), a line saying how many."""
    out = [f"# headwater run {run.run_id} of {run.connection} ({run.kind}, {run.status}), "
           f"started {iso(run.started_at)}",
           f"# a run keeps its first {kept[0]} and last {kept[1]} log lines; "
           f"{omitted} left out"]
    previous = 0
    for line in lines:
        if line.seq > previous + 1 and omitted:
            out.append(f"[... {line.seq - previous - 1} line(s) left out here ...]")
        previous = line.seq
        first, *rest = line.message.splitlines() or [""]
        out.append(f"{iso(line.at)} {line.level:<7} {line.logger}: {first}")
        out.extend(f"    {more}" for more in rest)
    return "\n".join(out) + "\n"
