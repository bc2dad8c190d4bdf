"""``headwater verify``: compare, window by window, what the source holds now with the table.

Exit codes (``headwater.errors.ExitCode``): 0 every window compared is equal
(after ``--repair``: equal again); 1 a window differs (after ``--repair``: still
differs, could not be repaired, or the repair run failed); 4 nothing differs but
a stream could not be verified (its source cannot count a window); 2 and 3 as
for every command.  See docs/verify.md.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from headwater.cli import _common as cli
from headwater.cli._common import ConfOpt, ConnectionArg, JsonOpt, MasterOpt, RemoteOpt, VerboseOpt
from headwater.config import load_connection
from headwater.errors import ConfigError
from headwater.operations import open_store_to_change, store_url

if TYPE_CHECKING:
    from headwater.operations._verify import StreamCheck, VerifyReport


def verify(
    connection: ConnectionArg,
    stream: Annotated[list[str] | None, typer.Option(
        "--stream", "-s", help="Only these streams.")] = None,
    runs: Annotated[int, typer.Option(
        min=1, help="Verify the windows of the last N syncs that read each stream.")] = 1,
    since: Annotated[str | None, typer.Option(
        help="Verify the windows of every sync started since then: an ISO date or "
             "date-time (UTC unless it says), or a duration back from now (36h, 7d).")] = None,
    start: Annotated[str | None, typer.Option(
        "--from", help="Verify this cursor window instead (inclusive start, as backfill).")
    ] = None,
    end: Annotated[str | None, typer.Option(
        "--to", help="The window's end (exclusive).")] = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Re-read the windows that differ (one run, committed as a backfill "
                         "commits), then verify them again.")] = False,
    as_json: JsonOpt = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    verbose: VerboseOpt = 0,
) -> None:
    """Compare each window the last syncs read (or --from/--to) at the source now and in the
    table: counts, and checksums of the primary keys where the source computes them.

    Prints the windows that differ; exit code 1 when one does, 4 when a stream could not
    be verified, 0 when all are equal.  --repair re-reads the differing windows, exactly
    as `headwater backfill` commits them, and verifies them again.
    """
    from headwater.cli._rerun import _engine
    from headwater.engine import get_spark
    from headwater.operations._verify import WindowChoice
    from headwater.operations._verify import repair as repair_windows
    from headwater.operations._verify import verify as verify_windows

    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        if since is not None and (start is not None or end is not None):
            raise ConfigError("--since chooses runs, --from/--to a window: choose one",
                              field="--since")
        choice = WindowChoice(runs=runs, since=_moment(since), start=start, end=end)
        config = load_connection(connection)
        store = open_store_to_change(store_url(config, create=False), "verify")
        engine = _engine(config, store, master, remote, conf)
        spark = get_spark(engine.options.spark)
        report = verify_windows(engine, spark, streams=stream or None, choice=choice)
        if repair and any(s.differing for s in report.streams):
            from headwater.cli._stop import stop_on_signals

            # Stops as a backfill does: the commits in flight land, the next sync finishes.
            with stop_on_signals(engine.request_stop):
                report = repair_windows(engine, spark, report)
        if as_json:
            cli.emit_json(report.to_dict())
        else:
            _print(report, repair)
        if report.exit_code:
            raise typer.Exit(report.exit_code)


def _moment(text: str | None) -> datetime | None:
    """``--since`` as an aware UTC time."""
    if text is None:
        return None
    ago = re.fullmatch(r"(\d+)\s*([hd])", text.strip())
    if ago:
        hours = int(ago.group(1)) * (24 if ago.group(2) == "d" else 1)
        return datetime.now(UTC) - timedelta(hours=hours)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ConfigError(f"--since {text!r} is neither an ISO date-time nor a duration "
                          "like 36h or 7d", field="--since") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _print(report: VerifyReport, repair: bool) -> None:
    for check in report.streams:
        if check.cannot:
            cli.err.print(f"[yellow]{check.name}: cannot verify:[/] {check.cannot}",
                          highlight=False)
    _print_differing("verify", report.streams)
    compared = sum(len(s.windows) for s in report.streams)
    differing = sum(len(s.differing) for s in report.streams)
    cli.out.print(f"{report.connection}: {compared} windows compared, {differing} differ",
                  highlight=False, markup=False)
    for check in report.streams:
        if check.differing and check.not_repairable and repair:
            cli.err.print(f"[yellow]{check.name}: not repaired:[/] {check.not_repairable}",
                          highlight=False)
    outcome = report.repair
    if outcome is None:
        return
    _print_differing("after the repair", outcome.after)
    verdict = "the windows are equal now" if outcome.equal else "windows still differ"
    cli.out.print(f"repair run {outcome.run_id} ({outcome.status}) re-read "
                  f"{outcome.partitions} partitions; verified again: {verdict}",
                  highlight=False, markup=False)


def _print_differing(title: str, checks: list[StreamCheck]) -> None:
    from headwater.cli._render import rows_table

    rows = [{"stream": s.name, "mode": s.mode, "window": w.window.rows.label(),
             "source rows": w.source.count, "table rows": w.table.count,
             "keys": ("not compared" if not w.keys_compared else
                      "differ" if w.source.key_checksum != w.table.key_checksum else "same")}
            for s in checks for w in s.differing]
    if rows:
        cli.out.print(rows_table(f"{title}: windows that differ",
                                 ["stream", "mode", "window", "source rows", "table rows",
                                  "keys"], rows))


def register(app: typer.Typer) -> None:
    app.command()(verify)
