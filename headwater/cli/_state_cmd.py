"""``headwater state show|reset|realign``: a connection's stored state, and putting the
metadata store back in step with the tables."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from headwater.cli import _common as cli
from headwater.cli._common import ConnectionArg, JsonOpt, VerboseOpt
from headwater.config import load_connection, mask_obj
from headwater.errors import ExitCode
from headwater.operations import (
    open_store_to_change,
    open_store_to_read,
    spark_settings,
    store_url,
)


def state_show(connection: ConnectionArg, as_json: JsonOpt = False) -> None:
    """Show the stored state of every stream of a connection."""
    with cli.handled(as_json):
        config = load_connection(connection)
        states = open_store_to_read(store_url(config, create=False)).get_states(config.name)
        if as_json:
            cli.emit_json({"connection": config.name, "streams": states})
            return
        if not states:
            cli.out.print(f"{config.name}: no state stored yet (the next sync reads everything)")
            return
        cli.out.print_json(data=mask_obj({"connection": config.name, "streams": states}))


def state_reset(
    connection: ConnectionArg,
    stream: Annotated[list[str] | None, typer.Option("--stream", "-s",
                                                     help="Only these streams.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Forget stored state, so the next sync reads the streams from the start."""
    with cli.handled(as_json):
        config = load_connection(connection)
        which = ", ".join(stream) if stream else "every stream"
        if not yes and not as_json and not typer.confirm(
                f"Reset the state of {which} of {config.name}?"):
            raise typer.Exit(ExitCode.FAILED)
        store = open_store_to_change(store_url(config, create=False), "state reset")
        reset = store.reset_state(config.name, stream or None)
        if as_json:
            cli.emit_json({"connection": config.name, "reset": reset})
        else:
            cli.out.print(f"reset: {', '.join(reset) if reset else 'nothing was stored'}")


def state_realign(
    connection: ConnectionArg,
    drop_unknown_runs: Annotated[bool, typer.Option(
        "--drop-unknown-runs",
        help="Also delete, from append tables, the rows of runs the store does not know "
             "(the next sync writes them again, once), and those runs' rows from the "
             "quarantine tables of every stream but overwrite ones (the next sync "
             "quarantines them again).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = 0,
) -> None:
    """Move the store's checkpoint counters past the versions the tables hold.

    For a metadata store restored from an older copy: a sync then stops with
    "the metadata store is behind the table".  Lists, per stream, the runs whose
    rows are in the table but not in the store (their data is read again by the
    next sync); --drop-unknown-runs deletes those rows from append tables.

    A stream's quarantine table counts as its table: the counters move past its
    versions too, --drop-unknown-runs deletes its unknown runs' rows (except under
    overwrite), and the rows it holds of a finished run's checkpoints that never
    committed (a later run quarantined them again) are deleted.  Each such
    checkpoint's commit is looked up in the stream's table first: one that landed
    keeps its rows, and one that cannot be looked up keeps them too and makes the
    command exit 1.
    """
    from headwater.destinations import build_destination
    from headwater.engine import build_source, get_spark, resolve_streams
    from headwater.engine._realign import realign

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        store = open_store_to_change(store_url(config, create=False), "state realign")
        streams = [(s.name, s.destination_sync_mode)
                   for s in resolve_streams(build_source(config), config)]
        destination = build_destination(config.destination.type, config.destination.config)
        with store.lock(config.name):
            spark = get_spark(spark_settings(config))
            found = realign(spark, config, store, destination, streams, apply=False)
            changes = any(f.changes(drop_unknown_runs) for f in found)
            if changes and not yes and not as_json:
                _print_realignment(found)
                if not typer.confirm(f"Realign the metadata store of {config.name}?"):
                    raise typer.Exit(ExitCode.FAILED)
            if changes:
                found = realign(spark, config, store, destination, streams, apply=True,
                                drop_unknown_runs=drop_unknown_runs)
        if as_json:
            cli.emit_json({"connection": config.name, "changed": changes,
                        "streams": [f.to_dict() for f in found]})
        else:
            _print_realignment(found)
        if any(f.unchecked for f in found):
            # Rows kept because a lookup could not answer: not done (the notes say which).
            raise typer.Exit(ExitCode.FAILED)


def _print_realignment(found: list[Any]) -> None:
    from headwater.cli._plan_cmd import table_label

    for item in found:
        lanes = ", ".join(f"{app_id.rsplit('/', 1)[-1]}: {version}"
                          for app_id, version in sorted(item.lanes.items())) or "none"
        table = table_label(item.table, item.table_name)
        cli.out.print(f"[bold]{item.stream}[/] ({item.mode}) {table}\n"
                  f"  table's txn versions by lane: {lanes}\n"
                  f"  next checkpoint index: {item.next_index_before} -> {item.next_index_after}",
                  highlight=False)
        for run_id, rows in item.unknown_runs.items():
            cli.out.print(f"  run unknown to the store: {run_id} ({rows} rows)", highlight=False)
        if item.deleted_rows is not None:
            cli.out.print(f"  deleted {item.deleted_rows} rows of those runs", highlight=False)
        quarantine = item.quarantine
        if quarantine is not None:
            lanes = ", ".join(f"{app_id.rsplit('/', 1)[-1]}: {version}"
                              for app_id, version in sorted(quarantine.lanes.items())) or "none"
            cli.out.print(f"  quarantine table {quarantine.table}: txn versions by lane: "
                          f"{lanes}", highlight=False)
            if quarantine.deleted_rows is not None:
                cli.out.print(f"  deleted {quarantine.deleted_rows} rows of the quarantine "
                              "table", highlight=False)
        for note in item.notes:
            cli.out.print(f"  - {note}", highlight=False)


def register(state_app: typer.Typer) -> None:
    state_app.command("show")(state_show)
    state_app.command("reset")(state_reset)
    state_app.command("realign")(state_realign)
