"""``headwater sync --watch``: the CLI side of :mod:`headwater.engine._watch`."""

from __future__ import annotations

import json
import threading
from typing import Any

from rich.console import Console

from headwater.config import ConnectionConfig, mask, mask_obj
from headwater.engine import SyncEngine, SyncObserver, SyncOptions, SyncResult
from headwater.engine._watch import stop_on_signals, watch_engine


def watch_sync(config: ConnectionConfig, store: Any, options: SyncOptions, as_json: bool,
               out: Console, err: Console) -> int:
    """Run the watch loop; exit code 0 after a clean stop (1 if the last sync failed)."""
    from headwater.cli._render import summary_table

    engine = SyncEngine(config, store, options, SyncObserver())
    stop = threading.Event()

    def report(result: SyncResult) -> None:
        if as_json:
            print(mask(json.dumps(mask_obj(result.to_dict()), default=str)), flush=True)
        else:
            out.print(summary_table(result))
            for stream in result.streams:
                if stream.error:
                    err.print(f"[red]{stream.name}:[/] {mask(stream.error)}", highlight=False)

    if not as_json:
        err.print(f"watching {config.name}: Ctrl-C stops after the sync in progress")
    with stop_on_signals(stop):
        results = watch_engine(engine, stop, on_result=report)
    return 1 if results and results[-1].status != "succeeded" else 0
