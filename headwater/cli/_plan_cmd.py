"""``headwater plan``: what a sync would do now, without reading data or writing anything."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from headwater.cli import _common as opt
from headwater.config import ConnectionConfig, load_connection, mask_obj
from headwater.operations import open_store, store_url

if TYPE_CHECKING:
    from headwater.engine import SyncEngine
    from headwater.metadata_store import MetadataStore


@contextmanager
def _states_store(config: ConnectionConfig) -> Iterator[MetadataStore]:
    """The store ``config``'s states are read from, opened without creating anything.

    ``plan`` writes nothing, so a store no sync has written yet is not made: the plan
    is the first sync's, from no state, read from an empty store of its own that goes
    with the command.
    """
    store = open_store(store_url(config, create=False), create=False)
    if not store.missing:
        with store:
            # Read once even when no stream needs a state: a store the sync could not
            # reach is the plan's error too, not found by the sync after it.
            _ = store.store_id
            yield store
        return
    with (tempfile.TemporaryDirectory(prefix="headwater-plan-") as empty,
          open_store(f"sqlite:///{empty}/no-state-yet.db") as blank):
        yield blank


def describe_plan(engine: SyncEngine, parallelism: int | None = None) -> dict[str, Any]:
    """The plan document ``plan --json`` prints (also used by tests and the Airflow operator).

    Per stream: sync mode, the table it lands in (``table``: its location;
    ``table_name``: the name it is registered under, or ``None``), the state it
    starts from, partition and checkpoint counts, the cursor bounds the partitions
    cover, each partition with the rows the source estimates (``None``: the source
    cannot tell), the sum when every partition has an estimate, and the schema
    changes the sync would meet with what its ``schema_contract`` does with each
    (``schema_changes``; ``None`` with ``schema_changes_unknown`` saying why when the
    table cannot be read without Spark).
    """
    from headwater.engine._contracts import describe_changes
    plan = engine.preview(parallelism)
    streams = []
    for stream_plan in plan.streams:
        name = stream_plan.stream.name
        stream = engine.source.stream(name)
        partitions = [p for c in stream_plan.checkpoints for p in c.partitions]
        estimates = [stream.estimate_rows(p) for p in partitions]
        known = [e for e in estimates if e is not None]
        streams.append({
            "name": name,
            "sync_mode": stream_plan.stream.mode_label,
            "table": engine.destination.table_location(name),
            "table_name": engine.destination.table_name(name),
            "state_before": stream_plan.state_before,
            "partitions": len(partitions),
            "checkpoints": len(stream_plan.checkpoints),
            "lanes": stream_plan.lanes,
            "bounds": _bounds(partitions),
            "estimated_rows": sum(known) if len(known) == len(estimates) else None,
            "partition_list": [{"id": p.id, "params": dict(p.params), "estimated_rows": e}
                               for p, e in zip(partitions, estimates, strict=True)],
            **describe_changes(engine, stream_plan.stream),
        })
    return {"connection": plan.connection, "streams": streams}


def change_lines(stream: dict[str, Any]) -> list[str]:
    """The schema changes of one stream of the plan document, one line each, for people."""
    from headwater.schema_contracts import ACTION_EFFECTS, KIND_LABELS

    name = stream["name"]
    if stream["schema_changes"] is None:
        return [f"{name}: schema changes not known before the sync: "
                f"{stream['schema_changes_unknown']}"]
    lines = []
    for change in stream["schema_changes"]:
        what = KIND_LABELS[change["kind"]]
        if change["column"] is not None:
            types = change["stream_type"] if change["table_type"] is None else \
                f"the stream's {change['stream_type']}, the table's {change['table_type']}"
            what += f" {change['column']} ({types})"
        lines.append(f"{name}: {what}: schema_contract {change['action']}, "
                     f"{ACTION_EFFECTS[change['kind']][change['action']]}")
    return lines


def table_label(location: str, name: str | None) -> str:
    """A stream's table for people: ``raw.hw_users (/lake/users)``, or the location alone."""
    return location if name is None else f"{name} ({location})"


def _bounds(partitions: list[Any]) -> dict[str, Any] | None:
    """``{"start", "end"}`` of cursor windows (the lowest start, the highest end)."""
    windows = [(p.params["start"], p.params["end"]) for p in partitions
               if "start" in p.params and "end" in p.params]
    if not windows or len(windows) != len(partitions):
        return None
    try:
        return {"start": min(w[0] for w in windows), "end": max(w[1] for w in windows)}
    except TypeError:  # bounds of mixed kinds cannot be ordered
        return None


def plan(
    connection: opt.ConnectionArg,
    as_json: opt.JsonOpt = False,
    parallelism: Annotated[int | None, typer.Option(
        help="Spark parallelism to size checkpoints by (default: this machine's cores).")] = None,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """Show the partitions a sync would run per stream, without reading data.

    Nothing is written: no run is recorded and no checkpoint index allocated.
    """
    from headwater.cli import _common as cli
    from headwater.cli._render import rows_table
    from headwater.engine import SyncEngine

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        with _states_store(config) as store:
            document = describe_plan(SyncEngine(config, store), parallelism)
        if as_json:
            cli.emit_json(document)
            return
        rows = [{**s, "table": table_label(s["table"], s["table_name"]),
                 "from": (s["bounds"] or {}).get("start"),
                 "to": (s["bounds"] or {}).get("end"),
                 "state": "none" if s["state_before"] is None else "stored",
                 "estimated_rows": "unknown" if s["estimated_rows"] is None
                 else f"{s['estimated_rows']:,}"}
                for s in document["streams"]]
        cli.out.print(rows_table(f"plan of {document['connection']} (nothing is read)",
                                 ["name", "sync_mode", "table", "state", "partitions",
                                  "checkpoints", "from", "to", "estimated_rows"], rows))
        for stream in document["streams"]:
            for line in change_lines(stream):
                cli.out.print(line, highlight=False)
            if stream["state_before"] is not None:
                cli.out.print(f"[bold]{stream['name']}[/] starts from state:")
                cli.out.print_json(data=mask_obj(stream["state_before"]))


def register(app: typer.Typer) -> None:
    app.command()(plan)
