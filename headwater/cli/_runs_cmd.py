"""``headwater runs`` and ``headwater runs show``: the run history of the metadata store."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from headwater.cli import _common as cli
from headwater.cli._common import JsonOpt
from headwater.config import mask_obj
from headwater.errors import ConfigError
from headwater.operations import open_store_to_read, store_url


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

    with cli.handled(as_json):
        reader = open_store_to_read(store_url(explicit=store, create=False))
        records = reader.list_runs(connection, limit=limit)
        rows = [_run_summary(r) for r in records]
        if as_json:
            cli.emit_json({"runs": rows})
            return
        cli.out.print(rows_table("runs", ["run_id", "connection", "kind", "status", "started_at",
                                      "attempts", "records_written", "records_rejected"], rows))


def runs_show(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="A run id from `headwater runs`.")],
    as_json: JsonOpt = False,
) -> None:
    """Show one run: plan, per-stream and per-checkpoint figures, state before and after."""
    from headwater.cli._render import expectations_table, key_value_table, rows_table
    from headwater.operations import commit_id_key, partition_rows, stream_rows

    store_opt = (ctx.obj or {}).get("store")
    with cli.handled(as_json):
        store = open_store_to_read(store_url(explicit=store_opt, create=False))
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
            # Where the run's log lines are: the store keeps them; `headwater ui` shows them.
            "log_lines": len(store.run_logs(run_id)[0]),
        }
        if as_json:
            cli.emit_json(document)
            return
        summary = _run_summary(run)
        cli.out.print(key_value_table(f"run {run_id}", [*summary.items(), ("error", run.error)]))
        shown = [{**s, "warnings": "; ".join(s.get("warnings", ()))}
                 for s in document["streams"]]
        cli.out.print(rows_table("streams", ["name", "mode", "status", "records_read",
                                         "records_written", "records_rejected", "bytes",
                                         "partitions", "duration_s", "error", "warnings"],
                             shown))
        checks = expectations_table(document["streams"])
        if checks is not None:
            cli.out.print(checks)
        cli.out.print(rows_table("checkpoints", ["stream", "index", "status", "partitions",
                                             "records_written", "records_rejected", "bytes",
                                             "duration_s", "attempt", commit_id_key(run),
                                             "writer", "writer_reason"],
                             checkpoints))
        cli.out.print(rows_table("partitions", ["stream", "checkpoint", "partition", "records_read",
                                            "records_written", "records_rejected", "bytes",
                                            "duration_s", "retries"], document["partitions"]))
        cli.out.print(rows_table("attempts", ["number", "status", "pid", "host", "started_at",
                                          "ended_at", "error"], document["attempt_details"]))
        cli.out.print_json(data=mask_obj({"state_before": run.state_before,
                                      "state_after": run.state_after}))
        cli.out.print(f"{document['log_lines']} log lines of this run are in the metadata "
                      f"store: `headwater ui` shows them (GET /api/runs/{run_id}/logs)",
                      highlight=False, markup=False)


def register(runs_app: typer.Typer) -> None:
    runs_app.callback()(runs)
    runs_app.command("show")(runs_show)
