"""``headwater replay`` and ``headwater backfill``: runs that re-read without moving state.

Both stop like ``sync`` (:mod:`headwater.cli._stop`): the first SIGINT or
SIGTERM lets the checkpoints in flight commit and starts no other, the run
ends ``stopped`` (exit code 130), and a second signal aborts.  What is left
of a stopped (or killed) replay or backfill is finished by the next
``headwater sync`` of the connection, which resumes the run from its
persisted plan (a replay still replaces the replayed run's rows, a backfill
still leaves state alone); ``replay`` and ``backfill`` refuse to start while
it is unfinished.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from headwater.cli import _common as opt
from headwater.cli._common import ConfOpt, MasterOpt, RemoteOpt
from headwater.config import ConnectionConfig, load_connection, mask
from headwater.errors import ConfigError
from headwater.operations import open_store_to_change, spark_settings, start_engine, store_url

if TYPE_CHECKING:
    from headwater.engine import SyncEngine, SyncResult
    from headwater.metadata_store import MetadataStore

StreamsOpt = Annotated[list[str] | None, typer.Option("--stream", "-s",
                                                      help="Only these streams.")]


def _engine(config: ConnectionConfig, store: MetadataStore, master: str | None,
            remote: str | None, conf: list[str] | None) -> SyncEngine:
    """The run's engine (:func:`~headwater.operations.start_engine`, its Spark started),
    without early reads: a replay or backfill plans partitions of its own."""
    return start_engine(config, store, spark=spark_settings(config, master, remote, conf),
                        early_reads=False)


def _run_stoppable(engine: SyncEngine, run: Callable[[SyncEngine], SyncResult]) -> SyncResult:
    """``run(engine)`` with SIGINT/SIGTERM asking ``engine`` to stop, as ``sync`` does (its
    Spark session started already: a new SparkContext would replace SIGINT's handler)."""
    from headwater.cli._stop import stop_on_signals

    with stop_on_signals(engine.request_stop):
        return run(engine)


def _report(result: SyncResult, config: ConnectionConfig, as_json: bool) -> None:
    from headwater.cli import _common as cli
    from headwater.cli._render import print_result
    from headwater.cli._stop import sync_exit_code

    if as_json:
        cli.emit_json(result.to_dict())
    else:
        print_result(result, cli.out, cli.err)
        if result.status == "stopped":
            where = config.path or config.name
            cli.err.print(f"`headwater sync {where}` finishes this {result.kind}; until then "
                          "`replay` and `backfill` refuse to start", highlight=False,
                          markup=False)
    if result.status != "succeeded":
        raise typer.Exit(sync_exit_code(result))


def replay(
    run_id: Annotated[str, typer.Argument(help="The run to replay (see `headwater runs`).")],
    connection: Annotated[Path | None, typer.Option(
        "--connection", "-c", metavar="CONNECTION.yaml",
        help="The connection file, if not the one the run recorded (it moved, or the run "
             "predates recording it); its metadata store is searched for the run.")] = None,
    store: Annotated[str | None, typer.Option(help="Metadata store URL holding the run.")
                     ] = None,
    stream: StreamsOpt = None,
    as_json: opt.JsonOpt = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """Re-read exactly the partitions RUN_ID committed and replace the rows it wrote.

    One Delta transaction per stream; other runs' rows and the state stay as
    they are; the replay is recorded as a run of kind `replay`.  The connection
    comes from the file the run recorded, or from --connection.
    """
    from headwater.cli import _common as cli
    from headwater.engine._rerun import replay as replay_run

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config, run_store = _replayed_connection(run_id, connection, store)
        engine = _engine(config, run_store, master, remote, conf)
        result = _run_stoppable(engine, lambda e: replay_run(e, run_id, stream or None))
        _report(result, config, as_json)


def _replayed_connection(run_id: str, connection: Path | None,
                         store: str | None) -> tuple[ConnectionConfig, MetadataStore]:
    """The connection RUN_ID belongs to, and the store that holds the run."""

    if connection is not None:
        config = load_connection(connection)
        return config, open_store_to_change(store_url(config, explicit=store, create=False),
                                            "replay")
    url = store_url(explicit=store, create=False)
    run_store = open_store_to_change(url, "replay")
    run = run_store.get_run(run_id)
    if run is None:
        raise ConfigError(f"no run {run_id!r} in the metadata store {mask(url)}; pass "
                          "--store URL, or --connection FILE whose metadata_store holds it",
                          field="RUN_ID")
    recorded = run.config_redacted.get("connection_file")
    if not recorded:
        raise ConfigError(f"run {run_id!r} did not record its connection file; pass "
                          "--connection FILE", field="--connection")
    config = load_connection(recorded)
    if config.name != run.connection:
        raise ConfigError(f"{recorded} now holds connection {config.name!r}, but run "
                          f"{run_id!r} belongs to {run.connection!r}; pass --connection FILE",
                          field="--connection", file=recorded)
    return config, run_store


def backfill(
    connection: opt.ConnectionArg,
    stream: Annotated[str, typer.Option("--stream", "-s", help="The stream to backfill.")],
    start: Annotated[str, typer.Option("--from", help="Window start (inclusive), e.g. 2024-01-01."
                                       )],
    end: Annotated[str, typer.Option("--to", help="Window end (exclusive), e.g. 2024-02-01.")],
    as_json: opt.JsonOpt = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """Read the cursor window [--from, --to) of one stream again, without moving its state."""
    from headwater.cli import _common as cli
    from headwater.engine._rerun import backfill as backfill_run

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        config = load_connection(connection)
        engine = _engine(config, open_store_to_change(store_url(config, create=False), "backfill"),
                         master, remote, conf)
        result = _run_stoppable(engine, lambda e: backfill_run(e, stream, start, end))
        _report(result, config, as_json)


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command()(backfill)
