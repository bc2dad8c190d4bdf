"""``headwater check`` and ``headwater discover``: ask the source, read nothing."""

from __future__ import annotations

import typer

from headwater.cli import _common as cli
from headwater.cli._common import ConnectionArg, JsonOpt, VerboseOpt
from headwater.config import load_connection


def check(connection: ConnectionArg, as_json: JsonOpt = False, verbose: VerboseOpt = 0) -> None:
    """Validate the connection file and ask the source whether it can be read."""
    from headwater.engine import build_source

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        source = build_source(config)
        source.check()
        if as_json:
            cli.emit_json({"status": "succeeded", "connection": config.name})
        else:
            cli.out.print(f"[green]✓[/] {config.name}: source [bold]{config.source.type}[/] "
                      "is reachable and the config is valid")


def discover(connection: ConnectionArg, as_json: JsonOpt = False,
             verbose: VerboseOpt = 0) -> None:
    """Show the source's catalog: streams, columns, keys, cursors, sync modes."""
    from rich.table import Table

    from headwater.engine import build_source, discover_catalog
    from headwater.table_schema import column_type_label

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        catalog = discover_catalog(build_source(config))
        as_text = {s.name: set(s.json_columns) for s in config.streams or []}
        if as_json:
            cli.emit_json(catalog.model_dump(mode="json", exclude_none=True))
            return
        for stream in catalog.streams:
            keys = ", ".join(".".join(k) for k in stream.source_defined_primary_key or [])
            cursor = ", ".join(stream.default_cursor_field or [])
            candidates = stream.json_schema.get("x-cursor-candidates")
            if not cursor and candidates:
                cursor = "- (candidates: " + ", ".join(candidates) + ")"
            modes = ", ".join(m.value for m in stream.supported_sync_modes)
            table = Table(title=f"{stream.name}  (primary key: {keys or '-'}; "
                          f"cursor: {cursor or '-'}; modes: {modes})", title_justify="left")
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
