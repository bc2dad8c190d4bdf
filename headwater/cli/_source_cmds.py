"""``headwater check`` and ``headwater discover``: ask the source (and the destination), read
nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape

from headwater.cli import _common as cli
from headwater.cli._common import ConnectionArg, JsonOpt, VerboseOpt
from headwater.config import ConnectionConfig, load_connection, mask
from headwater.errors import ConfigError, ExitCode
from headwater.operations import check_store_url


def _checked(kind: str, type_name: str, run: Callable[[], str | None]) -> dict[str, Any]:
    """One part of ``headwater check``: ``run`` builds and checks it (returning why nothing
    was checked, or None); any error it raises is the part's failure."""
    try:
        skipped = run()
    except Exception as exc:
        logging.getLogger("headwater").debug("%s check failed", kind, exc_info=True)
        return {"part": kind, "type": type_name, "status": "failed", "error": cli.describe(exc)}
    if skipped:
        return {"part": kind, "type": type_name, "status": "skipped",
                "message": mask(skipped)}
    return {"part": kind, "type": type_name, "status": "succeeded"}


def _check_source(config: ConnectionConfig) -> str | None:
    """The source reachable, and the connection's streams ones it can sync (as ``sync``
    resolves them: a stream it lacks, a cursor it cannot read or order by...)."""
    from headwater.engine import build_source, resolve_streams

    source = build_source(config)
    offline = type(source).offline_catalog
    if offline != "spec":  # what the file alone gets wrong first, as validate says it
        resolve_streams(source, config, schemas=offline == "schemas")
    source.check()
    if offline != "schemas":  # what needs the source reached
        resolve_streams(source, config)
    return None


def _check_destination(config: ConnectionConfig) -> str | None:
    from headwater.destinations import build_destination

    destination = build_destination(config.destination.type, config.destination.config)
    destination.use_spark_conf(config.spark.conf)
    destination.use_connection(config.name)
    skipped = destination.check_skipped()
    if skipped is None:
        destination.check()
    schemas = _stream_schemas(config)
    if schemas is not None:  # else the source's part says why
        destination.check_tables(schemas)
    return skipped


def _stream_schemas(config: ConnectionConfig) -> dict[str, Any] | None:
    """Each configured stream's data columns, as a sync hands them to the destination's
    ``prepare`` (None: the source cannot say, and its own check fails)."""
    from headwater.engine import build_source, resolve_streams
    from headwater.table_schema import arrow_schema_for

    try:
        source = build_source(config)
        streams = resolve_streams(source, config)
        return {s.name: arrow_schema_for(source.stream(s.name).json_schema(), s.json_columns)
                for s in streams}
    except ConfigError as exc:
        if str(exc.context.get("field", "")).startswith("streams"):
            raise  # the connection file's streams (their table_properties among them)
    except Exception:
        pass
    logging.getLogger("headwater").debug("stream schemas not known", exc_info=True)
    return None


_PASSED = {"source": "is reachable and the config is valid",
           "destination": "is reachable and writable"}


def _print(name: str, part: dict[str, Any]) -> None:
    what = f"{name}: {part['part']} [bold]{escape(part['type'])}[/]"
    if part["status"] == "succeeded":
        cli.out.print(f"[green]✓[/] {what} {_PASSED[part['part']]}")
    elif part["status"] == "skipped":
        cli.out.print(f"[yellow]-[/] {what} not checked: {escape(part['message'])}")
    else:
        error = part["error"]
        label = cli.FAILURE_LABELS.get(error["exit_code"])
        cli.err.print(f"[bold red]✗[/] {what} failed: "
                      + (f"[bold red]{label}:[/] " if label else "")
                      + escape(error["message"]), highlight=False)


def check(connection: ConnectionArg, as_json: JsonOpt = False, verbose: VerboseOpt = 0) -> None:
    """Validate the connection file, ask the source whether it can be read and the
    destination whether it can be written, its streams' existing tables included (the
    exit code is non-zero if either fails)."""
    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        check_store_url(config)  # the store sync would record the run in, not opened
        parts = [
            _checked("source", config.source.type, lambda: _check_source(config)),
            _checked("destination", config.destination.type,
                     lambda: _check_destination(config)),
        ]
    failed = [p for p in parts if p["status"] == "failed"]
    # The source's failure decides the exit code (a refused credential stays exit 3).
    code = failed[0]["error"]["exit_code"] if failed else int(ExitCode.SUCCEEDED)
    if as_json:
        document: dict[str, Any] = {"status": "error" if failed else "succeeded",
                                    "connection": config.name}
        if failed:
            document["error"] = failed[0]["error"]
        for part in parts:
            document[part.pop("part")] = part
        cli.emit_json(document)
    else:
        for part in parts:
            _print(config.name, part)
    if code:
        raise typer.Exit(code)


def discover(connection: ConnectionArg, as_json: JsonOpt = False,
             verbose: VerboseOpt = 0) -> None:
    """Show the source's catalog: streams, columns, keys, cursors, sync modes, and the
    table each stream would be written to (``tables`` in ``--json``)."""
    from rich.table import Table

    from headwater.cli._plan_cmd import table_label
    from headwater.destinations import build_destination
    from headwater.engine import build_source, discover_catalog
    from headwater.table_schema import column_type_label

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        catalog = discover_catalog(build_source(config))
        destination = build_destination(config.destination.type, config.destination.config)
        tables: dict[str, dict[str, str | None]] = {
            s.name: {"table": destination.table_location(s.name),
                     "table_name": destination.table_name(s.name)} for s in catalog.streams}
        as_text = {s.name: set(s.json_columns) for s in config.streams or []}
        if as_json:
            cli.emit_json({**catalog.model_dump(mode="json", exclude_none=True),
                           "tables": tables})
            return
        for stream in catalog.streams:
            keys = ", ".join(".".join(k) for k in stream.source_defined_primary_key or [])
            cursor = ", ".join(stream.default_cursor_field or [])
            candidates = stream.json_schema.get("x-cursor-candidates")
            if not cursor and candidates:
                cursor = "- (candidates: " + ", ".join(candidates) + ")"
            modes = ", ".join(m.value for m in stream.supported_sync_modes)
            written = tables[stream.name]
            table = Table(title=f"{stream.name}  (primary key: {keys or '-'}; "
                          f"cursor: {cursor or '-'}; modes: {modes})\n"
                          f"  -> {destination.type_name} table "
                          f"{table_label(str(written['table']), written['table_name'])}",
                          title_justify="left")
            table.add_column("column")
            table.add_column("JSON type")
            table.add_column("table type")
            for name, prop in (stream.json_schema.get("properties") or {}).items():
                declared = prop.get("type")
                fmt = prop.get("format")
                label = "/".join(declared) if isinstance(declared, list) else str(declared)
                table.add_row(name, label + (f" ({fmt})" if fmt else ""), column_type_label(
                    prop, json_text=name in as_text.get(stream.name, set())))
            cli.out.print(table)


def register(app: typer.Typer) -> None:
    app.command()(check)
    app.command()(discover)
