"""``headwater airbyte SOURCE ...`` and ``headwater state import|export``.

``airbyte`` makes every built-in source an Airbyte source connector: the
protocol's own argument shape (``spec``, ``check --config``, ``discover
--config``, ``read --config --catalog [--state]``) and only protocol messages on
stdout.  It runs without Spark.  ``state import`` / ``state export`` move a
connection's state from and to Airbyte's format (see
:mod:`headwater.interop._state_migration`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from headwater.errors import ConfigError, ExitCode

_COMMANDS = ("spec", "check", "discover", "read")


def _read_json(path: Path | None, what: str) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} file {path}: {exc.strerror}",
                          field=f"--{what}") from exc
    except ValueError as exc:
        raise ConfigError(f"the {what} file {path} is not JSON: {exc}", field=f"--{what}") from exc


def airbyte(
    source: Annotated[str, typer.Argument(help="A source type, e.g. sample.", metavar="SOURCE")],
    command: Annotated[str, typer.Argument(help="spec | check | discover | read",
                                           metavar="COMMAND")],
    config: Annotated[Path | None, typer.Option("--config", help="Source config (JSON).")] = None,
    catalog: Annotated[Path | None, typer.Option("--catalog",
                                                 help="Configured catalog (JSON).")] = None,
    state: Annotated[Path | None, typer.Option("--state", help="Airbyte state (JSON).")] = None,
) -> None:
    """Run a Headwater source as an Airbyte source connector (protocol messages on stdout)."""
    from headwater.config import install_log_masking
    from headwater.interop import AirbyteServer

    server = AirbyteServer(source, sys.stdout)
    with server.capture_logs():
        install_log_masking()
        ok = _serve(server, command, config, catalog, state)
    sys.stdout.flush()
    if not ok:
        raise typer.Exit(ExitCode.FAILED)


def _serve(server: Any, command: str, config: Path | None, catalog: Path | None,
           state: Path | None) -> bool:
    """Run one protocol command; every failure becomes an error TRACE (False)."""
    from headwater.config import mask
    from headwater.protocol import (
        AirbyteErrorTraceMessage,
        AirbyteMessage,
        AirbyteTraceMessage,
        FailureType,
        MessageType,
        TraceType,
    )

    ok = True
    try:
        if command not in _COMMANDS:
            raise ConfigError(f"unknown command {command!r}; expected one of "
                              f"{', '.join(_COMMANDS)}", field="COMMAND")
        if command == "spec":
            server.spec()
        else:
            if config is None:
                raise ConfigError(f"`{command}` needs --config FILE", field="--config")
            document = _read_json(config, "config")
            if command == "check":
                server.check(document)
            elif command == "discover":
                server.discover(document)
            else:
                ok = server.read(document, _read_json(catalog, "catalog"),
                                 _read_json(state, "state"))
    except Exception as exc:
        text = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        server.emit(AirbyteMessage(type=MessageType.TRACE, trace=AirbyteTraceMessage(
            type=TraceType.ERROR, emitted_at=time.time() * 1000, error=AirbyteErrorTraceMessage(
                message=mask(text), failure_type=FailureType.config_error
                if isinstance(exc, ConfigError) else FailureType.system_error))))
        ok = False
    return ok


def state_import(
    connection: Annotated[Path, typer.Argument(help="Connection YAML file.",
                                               metavar="CONNECTION.yaml")],
    file: Annotated[Path, typer.Argument(help="Airbyte state: STATE messages (a JSON list) "
                                         "or an Airbyte API connection state.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    create_store: Annotated[bool, typer.Option(
        "--create-store", help="Start the connection's metadata store if it does not exist "
                               "(a connection moving from Airbyte before its first sync).")
    ] = False,
) -> None:
    """Import an Airbyte connection's state (STREAM or GLOBAL) into a connection.

    Into the store a sync of it has made: a store that does not exist is refused (exit 2,
    naming its path) unless ``--create-store`` says to start one, so a mistyped path never
    takes the state while the real store stays as it was."""
    from headwater.cli._common import emit_json, handled, out
    from headwater.config import load_connection
    from headwater.interop import parse_airbyte_state
    from headwater.operations import open_store, open_store_to_change, store_url

    with handled(as_json):
        config = load_connection(connection)
        imported = parse_airbyte_state(_read_json(file, "state"))
        store = (open_store(store_url(config)) if create_store
                 else open_store_to_change(store_url(config, create=False), "state import "
                                           "(--create-store starts one)"))
        # An Airbyte connector gets its GLOBAL state back from each stream's own state.
        stored = imported.per_stream(shared_with_streams=config.source.type == "airbyte")
        for stream, value in stored.items():
            store.save_state(config.name, stream, value, run_id=None, checkpoint_index=None)
        if as_json:
            emit_json({"connection": config.name, "kind": imported.kind,
                        "imported": sorted(stored)})
        else:
            out.print(f"{config.name}: imported {imported.kind} state of "
                      f"{', '.join(sorted(stored)) or 'no stream'}")


def state_export(
    connection: Annotated[Path, typer.Argument(help="Connection YAML file.",
                                               metavar="CONNECTION.yaml")],
    file: Annotated[Path | None, typer.Argument(help="Where to write (default: stdout).")] = None,
) -> None:
    """Export a connection's state as Airbyte STATE messages (a JSON list)."""
    from headwater.cli._common import handled, out
    from headwater.config import load_connection
    from headwater.interop import export_state
    from headwater.operations import open_store_to_read, store_url

    with handled(False):
        config = load_connection(connection)
        messages = export_state(open_store_to_read(store_url(config, create=False))
                               .get_states(config.name))
        text = json.dumps(messages, indent=2) + "\n"
        if file is None:
            sys.stdout.write(text)
        else:
            file.write_text(text)
            out.print(f"{config.name}: wrote {len(messages)} state message(s) to {file}")
