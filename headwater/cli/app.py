"""The ``headwater`` command.

Exit codes mean the same everywhere: 0 success, 1 the sync (or check) failed,
2 the connection file or a config is wrong, 3 credentials were refused,
130 interrupted (a sync, replay or backfill stopped by SIGINT/SIGTERM: the next sync
continues it).
``--json`` prints exactly one JSON document on stdout (nothing else goes to
stdout then); every message is masked for secrets before it is printed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.logging import RichHandler

from headwater.config import ConnectionConfig, install_log_masking, load_connection, mask, mask_obj
from headwater.errors import ConfigError, HeadwaterError

app = typer.Typer(
    name="headwater",
    help="Sync APIs, databases and object storage into lakehouse tables, on Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
runs_app = typer.Typer(help="Run history: list runs, or show one.", invoke_without_command=True)
state_app = typer.Typer(help="Show or reset the state of a connection's streams.",
                        no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(state_app, name="state")

# Wide enough for the summary table when output is piped (rich assumes 80 columns).
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

STORE_ENV = "HEADWATER_METADATA_STORE"
HOME_ENV = "HEADWATER_HOME"

ConnectionArg = Annotated[Path, typer.Argument(help="Connection YAML file.",
                                               metavar="CONNECTION.yaml")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging.")]


def home() -> Path:
    """Where the embedded defaults live: metadata store, logs (``./.headwater``)."""
    return Path(os.environ.get(HOME_ENV) or ".headwater")


def store_url(connection: ConnectionConfig | None = None, explicit: str | None = None) -> str:
    if explicit:
        return explicit
    if connection is not None and connection.metadata_store:
        return connection.metadata_store
    if os.environ.get(STORE_ENV):
        return os.environ[STORE_ENV]
    path = home() / "headwater.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _open_store(url: str) -> Any:
    from headwater.metadata_store import MetadataStore

    return MetadataStore(url)


def _setup_logging(verbose: int, as_json: bool) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    root.handlers.clear()
    handler = RichHandler(console=err, show_path=False, rich_tracebacks=False)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    install_log_masking()


def _emit_json(document: Any) -> None:
    sys.stdout.write(mask(json.dumps(mask_obj(document), default=str, indent=2)) + "\n")
    sys.stdout.flush()


def _fail(exc: BaseException, as_json: bool) -> NoReturn:
    if isinstance(exc, HeadwaterError):
        code = exc.exit_code
        kind = type(exc).__name__
        message = str(exc)
    else:
        code = 1
        kind = type(exc).__name__
        message = f"{kind}: {exc}"
    message = mask(message)
    if as_json:
        _emit_json({"status": "error", "error": {"type": kind, "message": message,
                                                  "exit_code": code}})
    else:
        label = {2: "Config error", 3: "Authentication failed"}.get(code, "Error")
        err.print(f"[bold red]{label}:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


@contextmanager
def _handled(as_json: bool) -> Iterator[None]:
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
    except Exception as exc:
        logging.getLogger("headwater").debug("command failed", exc_info=True)
        _fail(exc, as_json)


def _spark_conf(pairs: list[str] | None) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--conf expects KEY=VALUE, got {pair!r}", field="--conf")
        conf[key.strip()] = value
    return conf


# ---------------------------------------------------------------------- sync


@app.command()
def sync(
    connection: ConnectionArg,
    as_json: JsonOpt = False,
    master: Annotated[str | None, typer.Option(help="Spark master URL, e.g. spark://host:7077."
                                               )] = None,
    remote: Annotated[str | None, typer.Option(help="Spark Connect URL, e.g. sc://host:15002."
                                               )] = None,
    conf: Annotated[list[str] | None, typer.Option("--conf", help="Extra Spark conf KEY=VALUE."
                                                   )] = None,
    verbose: VerboseOpt = 0,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Keep syncing new data (back off up to 5 s when there is none) until "
                        "Ctrl-C/SIGTERM; with --json, one JSON line per sync.")] = False,
) -> None:
    """Sync a connection: read its streams on Spark and commit them exactly once.

    SIGINT (Ctrl-C) or SIGTERM stops it after the commits in progress (exit
    code 130, the next sync continues the run); a second one aborts at once.
    """
    from headwater.cli._render import ProgressObserver, print_result
    from headwater.cli._stop import stop_on_signals, sync_exit_code
    from headwater.engine import SparkSettings, SyncEngine, SyncObserver, SyncOptions, get_spark
    from headwater.engine._steps import seconds_since_process_start

    started = seconds_since_process_start()  # the interpreter's start and the imports
    setting_up = time.perf_counter()
    _setup_logging(verbose, as_json)
    with _handled(as_json):
        config = load_connection(connection)
        file_spark = config.spark
        settings = SparkSettings(
            master=master or (file_spark.master if file_spark else None),
            remote=remote or (file_spark.remote if file_spark else None),
            conf={**(file_spark.conf if file_spark else {}), **_spark_conf(conf)},
            app_name=f"headwater-{config.name}",
            jvm_log_path=home() / "logs" / "spark.log",
        )
        store = _open_store(store_url(config))
        if watch:
            from headwater.cli._watch import watch_sync

            raise typer.Exit(watch_sync(config, store, SyncOptions(spark=settings), as_json,
                                        out, err))
        progress = None if as_json or not err.is_terminal else ProgressObserver(err)
        engine = SyncEngine(config, store, SyncOptions(spark=settings),
                            progress or SyncObserver())
        engine.start_reads_early()  # a source's reads may run while Spark starts
        if started is not None:
            engine.steps.add("cli_start", started)
        engine.steps.add("cli_setup", time.perf_counter() - setting_up)
        with engine.steps.step("spark_session"):
            # Before the handlers (a new SparkContext replaces SIGINT's), with what the
            # connection's destination needs.
            get_spark(engine.options.spark)
        with stop_on_signals(engine.request_stop), progress or nullcontext():
            result = engine.run()
        if as_json:
            _emit_json(result.to_dict())
        else:
            print_result(result, out, err)
        if result.status != "succeeded":
            raise typer.Exit(sync_exit_code(result))


# ---------------------------------------------------------------------- check / discover


@app.command()
def check(connection: ConnectionArg, as_json: JsonOpt = False, verbose: VerboseOpt = 0) -> None:
    """Validate the connection file and ask the source whether it can be read."""
    from headwater.engine import build_source

    _setup_logging(verbose, as_json)
    with _handled(as_json):
        config = load_connection(connection)
        source = build_source(config)
        source.check()
        if as_json:
            _emit_json({"status": "succeeded", "connection": config.name})
        else:
            out.print(f"[green]✓[/] {config.name}: source [bold]{config.source.type}[/] "
                      "is reachable and the config is valid")


@app.command()
def discover(connection: ConnectionArg, as_json: JsonOpt = False,
             verbose: VerboseOpt = 0) -> None:
    """Show the source's catalog: streams, columns, keys, cursors, sync modes."""
    from rich.table import Table

    from headwater.engine import build_source, discover_catalog
    from headwater.table_schema import column_type_label

    _setup_logging(verbose, as_json)
    with _handled(as_json):
        config = load_connection(connection)
        catalog = discover_catalog(build_source(config))
        as_text = {s.name: set(s.json_columns) for s in config.streams or []}
        if as_json:
            _emit_json(catalog.model_dump(mode="json", exclude_none=True))
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
            out.print(table)


# ---------------------------------------------------------------------- runs


def _run_summary(run: Any) -> dict[str, Any]:
    streams = (run.stats or {}).get("streams", [])
    return {
        "run_id": run.run_id,
        "connection": run.connection,
        "kind": run.kind,
        "replay_of": (run.plan or {}).get("replay_of"),
        "status": run.status,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "attempts": len(run.attempts),
        "records_written": sum(s.get("records_written", 0) for s in streams),
        "records_rejected": sum(s.get("records_rejected", 0) for s in streams),
    }


@runs_app.callback()
def runs(
    ctx: typer.Context,
    connection: Annotated[str | None, typer.Option("--connection", "-c",
                                                   help="Only this connection.")] = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 20,
    store: Annotated[str | None, typer.Option(help="Metadata store URL.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List recent runs, newest first."""
    ctx.obj = {"store": store}
    if ctx.invoked_subcommand is not None:
        return
    from headwater.cli._render import rows_table

    with _handled(as_json):
        records = _open_store(store_url(explicit=store)).list_runs(connection, limit=limit)
        rows = [_run_summary(r) for r in records]
        if as_json:
            _emit_json({"runs": rows})
            return
        out.print(rows_table("runs", ["run_id", "connection", "kind", "status", "started_at",
                                      "attempts", "records_written", "records_rejected"], rows))


@runs_app.command("show")
def runs_show(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="A run id from `headwater runs`.")],
    as_json: JsonOpt = False,
) -> None:
    """Show one run: plan, per-stream and per-checkpoint figures, state before and after."""
    from headwater.cli._render import key_value_table, rows_table
    from headwater.cli._run_detail import partition_rows, stream_rows

    store_opt = (ctx.obj or {}).get("store")
    with _handled(as_json):
        store = _open_store(store_url(explicit=store_opt))
        run = store.get_run(run_id)
        if run is None:
            raise ConfigError(f"no run {run_id!r} in the metadata store; see `headwater runs`",
                              field="RUN_ID")
        checkpoints = [
            {"stream": c.stream, "index": c.index, "status": c.status,
             **{k: v for k, v in c.stats.items() if k not in ("partitions", "partition_stats")},
             "partitions": len(c.stats.get("partitions", []))}
            for c in store.list_checkpoints(run_id)
        ]
        document = {
            **_run_summary(run),
            "error": run.error,
            "streams": stream_rows(run),
            "checkpoints": checkpoints,
            "partitions": partition_rows(store.list_checkpoints(run_id)),
            "attempt_details": [
                {"number": a.number, "status": a.status, "pid": a.pid, "host": a.host,
                 "started_at": a.started_at.isoformat() if a.started_at else None,
                 "ended_at": a.ended_at.isoformat() if a.ended_at else None, "error": a.error}
                for a in run.attempts
            ],
            "state_before": run.state_before,
            "state_after": run.state_after,
            "config": run.config_redacted,
        }
        if as_json:
            _emit_json(document)
            return
        summary = _run_summary(run)
        out.print(key_value_table(f"run {run_id}", [*summary.items(), ("error", run.error)]))
        out.print(rows_table("streams", ["name", "mode", "status", "records_read",
                                         "records_written", "records_rejected", "bytes",
                                         "partitions", "duration_s", "error"],
                             document["streams"]))
        out.print(rows_table("checkpoints", ["stream", "index", "status", "partitions",
                                             "records_written", "records_rejected", "bytes",
                                             "duration_s", "attempt", _commit_id(run),
                                             "writer", "writer_reason"],
                             checkpoints))
        out.print(rows_table("partitions", ["stream", "checkpoint", "partition", "records_read",
                                            "records_written", "records_rejected", "bytes",
                                            "duration_s", "retries"], document["partitions"]))
        out.print(rows_table("attempts", ["number", "status", "pid", "host", "started_at",
                                          "ended_at", "error"], document["attempt_details"]))
        out.print_json(data=mask_obj({"state_before": run.state_before,
                                      "state_after": run.state_after}))


def _commit_id(run: Any) -> str:
    """Under which name the run's destination records each commit's identifier."""
    from headwater.destinations import get_destination_class
    from headwater.errors import ConfigError

    kind = ((run.config_redacted or {}).get("destination") or {}).get("type") or "delta"
    try:
        return get_destination_class(kind).capabilities.commit_id
    except ConfigError:  # a destination this version does not know
        return "commit_version"


# ---------------------------------------------------------------------- state


@state_app.command("show")
def state_show(connection: ConnectionArg, as_json: JsonOpt = False) -> None:
    """Show the stored state of every stream of a connection."""
    with _handled(as_json):
        config = load_connection(connection)
        states = _open_store(store_url(config)).get_states(config.name)
        if as_json:
            _emit_json({"connection": config.name, "streams": states})
            return
        if not states:
            out.print(f"{config.name}: no state stored yet (the next sync reads everything)")
            return
        out.print_json(data=mask_obj({"connection": config.name, "streams": states}))


@state_app.command("reset")
def state_reset(
    connection: ConnectionArg,
    stream: Annotated[list[str] | None, typer.Option("--stream", "-s",
                                                     help="Only these streams.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Forget stored state, so the next sync reads the streams from the start."""
    with _handled(as_json):
        config = load_connection(connection)
        which = ", ".join(stream) if stream else "every stream"
        if not yes and not as_json and not typer.confirm(
                f"Reset the state of {which} of {config.name}?"):
            raise typer.Exit(1)
        reset = _open_store(store_url(config)).reset_state(config.name, stream or None)
        if as_json:
            _emit_json({"connection": config.name, "reset": reset})
        else:
            out.print(f"reset: {', '.join(reset) if reset else 'nothing was stored'}")


@state_app.command("realign")
def state_realign(
    connection: ConnectionArg,
    drop_unknown_runs: Annotated[bool, typer.Option(
        "--drop-unknown-runs",
        help="Also delete, from append tables, the rows of runs the store does not know "
             "(the next sync writes them again, once).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = 0,
) -> None:
    """Move the store's checkpoint counters past the versions the tables hold.

    For a metadata store restored from an older copy: a sync then stops with
    "the metadata store is behind the table".  Lists, per stream, the runs whose
    rows are in the table but not in the store (their data is read again by the
    next sync); --drop-unknown-runs deletes those rows from append tables.
    """
    from headwater.cli._rerun import spark_settings
    from headwater.config import validate_config
    from headwater.destinations import get_destination_class
    from headwater.engine import build_source, get_spark, resolve_streams
    from headwater.engine._realign import realign

    _setup_logging(verbose, as_json)
    with _handled(as_json):
        config = load_connection(connection)
        store = _open_store(store_url(config))
        streams = [(s.name, s.destination_sync_mode)
                   for s in resolve_streams(build_source(config), config)]
        dest_cls = get_destination_class(config.destination.type)
        destination = dest_cls(validate_config(dest_cls.spec(), config.destination.config,
                                               where="destination.config"))
        with store.lock(config.name):
            spark = get_spark(spark_settings(config))
            found = realign(spark, config, store, destination, streams, apply=False)
            changes = any(f.behind or (drop_unknown_runs and f.unknown_runs and f.mode == "append")
                          for f in found)
            if changes and not yes and not as_json:
                _print_realignment(found)
                if not typer.confirm(f"Realign the metadata store of {config.name}?"):
                    raise typer.Exit(1)
            if changes:
                found = realign(spark, config, store, destination, streams, apply=True,
                                drop_unknown_runs=drop_unknown_runs)
        if as_json:
            _emit_json({"connection": config.name, "changed": changes,
                        "streams": [f.to_dict() for f in found]})
        else:
            _print_realignment(found)


def _print_realignment(found: list[Any]) -> None:
    for item in found:
        lanes = ", ".join(f"{app_id.rsplit('/', 1)[-1]}: {version}"
                          for app_id, version in sorted(item.lanes.items())) or "none"
        out.print(f"[bold]{item.stream}[/] ({item.mode}) {item.table}\n"
                  f"  table's txn versions by lane: {lanes}\n"
                  f"  next checkpoint index: {item.next_index_before} -> {item.next_index_after}",
                  highlight=False)
        for run_id, rows in item.unknown_runs.items():
            out.print(f"  run unknown to the store: {run_id} ({rows} rows)", highlight=False)
        if item.deleted_rows is not None:
            out.print(f"  deleted {item.deleted_rows} rows of those runs", highlight=False)
        for note in item.notes:
            out.print(f"  - {note}", highlight=False)


# Commands that live in their own modules (they import this one, so this comes last).
from headwater.cli import _plan_cmd, _rerun, _serve, _validate  # noqa: E402

_rerun.register(app)  # replay, backfill
_plan_cmd.register(app)
_validate.register(app)
_serve.register(app)

# Airbyte interop: `headwater airbyte SOURCE ...`, `headwater state import|export`.
from headwater.cli import _airbyte  # noqa: E402

app.command("airbyte")(_airbyte.airbyte)
state_app.command("import")(_airbyte.state_import)
state_app.command("export")(_airbyte.state_export)


def main(argv: list[str] | None = None) -> Callable[..., Any] | None:
    """Console-script entry point."""
    app(args=argv)
    return None


if __name__ == "__main__":
    main()
