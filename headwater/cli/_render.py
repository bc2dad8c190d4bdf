"""How results look on a terminal: progress while syncing, tables after."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from headwater.config import mask
from headwater.destinations import CommitResult
from headwater.engine import RunPlan, StreamStats, SyncObserver, SyncResult


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


class ProgressObserver(SyncObserver):
    """A live bar per stream: partitions committed out of planned, and rows so far."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.fields[stream]:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("partitions"),
            TextColumn("{task.fields[rows]:>12,} rows"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> ProgressObserver:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
        verb = "Resuming" if resumed else "Starting"
        self.console.print(f"{verb} run [bold]{run_id}[/] of [bold]{plan.connection}[/]")
        for stream in plan.streams:
            self.tasks[stream.stream.name] = self.progress.add_task(
                stream.stream.name, total=max(stream.partition_count, 1),
                completed=0 if stream.partition_count else 1,
                stream=stream.stream.name, rows=0, status="")

    def stream_resumed(self, stream: str, partitions: int, rows: int) -> None:
        # A resumed run's bar starts at what earlier attempts released, so it ends full
        # and its rows agree with the summary (the run's, over every attempt).
        with self._lock:
            task = self.tasks.get(stream)
            if task is not None:
                self.progress.update(task, advance=partitions,
                                     rows=self.progress.tasks[task].fields["rows"] + rows)

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        with self._lock:
            task = self.tasks[stream]
            rows = self.progress.tasks[task].fields["rows"] + result.rows
            self.progress.update(task, advance=partitions, rows=rows)

    def stream_finished(self, stats: StreamStats) -> None:
        mark = {"succeeded": "[green]done[/]", "warned": "[yellow]warned[/]",
                "stopped": "[yellow]stopped[/]"}.get(stats.status, "[red]failed[/]")
        with self._lock:
            task = self.tasks.get(stats.name)
            if task is not None:
                self.progress.update(task, status=mark)


def summary_table(result: SyncResult) -> Table:
    resumed = f" (resumed, attempt {result.attempt})" if result.resumed else ""
    table = Table(title=f"run {result.run_id}{resumed} · {result.status}", title_justify="left")
    for column in ("stream", "mode", "status"):
        table.add_column(column)
    for column in ("read", "written", "rejected", "bytes", "partitions", "time"):
        table.add_column(column, justify="right")
    for s in result.streams:
        status = {"succeeded": "[green]succeeded[/]", "warned": "[yellow]warned[/]",
                  "stopped": f"[yellow]stopped {s.checkpoints_done}/{s.checkpoints}[/]"}.get(
            s.status, f"[red]{s.status}[/]")
        rejected = f"[yellow]{s.records_rejected:,}[/]" if s.records_rejected else "0"
        table.add_row(s.name, s.mode, status, f"{s.records_read:,}", f"{s.records_written:,}",
                      rejected, human_bytes(s.bytes), str(s.partitions), f"{s.duration_s:.1f}s")
    return table


def expectations_table(streams: Iterable[Mapping[str, Any]]) -> Table | None:
    """Each stream's expectations (rows evaluated, failed, action), from streams' figures
    as ``--json`` and the store have them; None when no stream has any."""
    rows = [(str(stream.get("name")), name, counts)
            for stream in streams for name, counts in (stream.get("expectations") or {}).items()]
    if not rows:
        return None
    table = Table(title="expectations", title_justify="left")
    for column in ("stream", "expectation", "action"):
        table.add_column(column)
    for column in ("evaluated", "failed"):
        table.add_column(column, justify="right")
    for stream, name, counts in rows:
        failed = int(counts.get("failed") or 0)
        table.add_row(stream, name, str(counts.get("action", "")),
                      f"{int(counts.get('evaluated') or 0):,}",
                      f"[yellow]{failed:,}[/]" if failed else "0")
    return table


def print_result(result: SyncResult, out: Console, err: Console) -> None:
    """A sync's summary table on ``out``; why streams failed or warned, or why it stopped,
    on ``err``."""
    out.print(summary_table(result))
    checks = expectations_table(s.to_dict() for s in result.streams)
    if checks is not None:
        out.print(checks)
    for stream in result.streams:
        if stream.error:
            err.print(f"[red]{stream.name}:[/] {mask(stream.error)}", highlight=False)
        elif stream.warnings:
            for warning in stream.warnings:
                err.print(f"[yellow]{stream.name}:[/] {mask(warning)}", highlight=False)
        for reason, count in stream.discarded.items():
            err.print(f"[yellow]{stream.name}:[/] {count:,} rows kept out: {reason}",
                      highlight=False)
    if result.status == "stopped":
        err.print(f"[yellow]run {result.run_id} stopped:[/] "
                  f"{mask(result.stop_reason or 'on request')}", highlight=False)


def key_value_table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("", style="bold")
    table.add_column("")
    for key, value in rows:
        table.add_row(key, "" if value is None else str(value))
    return table


def rows_table(title: str, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*["" if row.get(c) is None else str(row.get(c)) for c in columns])
    return table
