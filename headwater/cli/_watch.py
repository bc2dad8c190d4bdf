"""``headwater sync --watch``: the CLI side of :mod:`headwater.engine._watch`."""

from __future__ import annotations

import json

from rich.console import Console

from headwater.cli._stop import stop_on_signals, sync_exit_code
from headwater.config import mask, mask_obj
from headwater.engine import SyncEngine, SyncResult
from headwater.engine._results import sync_document
from headwater.engine._watch import watch_engine


def watch_sync(engine: SyncEngine, as_json: bool, out: Console, err: Console) -> int:
    """Run the watch loop until SIGINT/SIGTERM; the exit code says how the last sync ended.

    0: it succeeded (or nothing was ever new), 1: it failed, 130: the signal
    stopped it with checkpoints left (the next sync continues its run).
    """
    from headwater.cli._render import print_result

    config = engine.connection

    def report(result: SyncResult) -> None:
        if as_json:
            print(mask(json.dumps(mask_obj(sync_document([result])), default=str)),
                  flush=True)
        else:
            print_result(result, out, err)

    if not as_json:
        err.print(f"watching {config.name}: Ctrl-C stops after the commits in progress")
    with stop_on_signals(engine.request_stop):
        results = watch_engine(engine, on_result=report)
    return sync_exit_code(results[-1]) if results else 0
