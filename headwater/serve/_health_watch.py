"""``headwater serve`` watches its connections' health and fires ``when: late`` /
``when: stale`` hooks once per change.

Why in ``serve``: it is the long-lived process that owns the schedules; the page and
``/metrics`` only show the same judgement (:mod:`headwater.observability.health`)
when asked.  A look reads each scheduled connection's newest run and states from its
store (opened to read: never created), at most every :attr:`HealthWatch.every_s`, on a
thread of its own so that a slow store or a slow hook never delays a firing.  A store
that does not answer leaves that connection's last known health in place: its
coming back does not fire the same change again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING

from headwater.config import ConnectionConfig, mask
from headwater.errors import MetadataStoreError

if TYPE_CHECKING:
    from headwater.metadata_store import MetadataStore
    from headwater.observability.health import ConnectionHealth
    from headwater.serve._scheduler import SchedulerSnapshot

log = logging.getLogger(__name__)

#: Fires a connection's hooks for a change: ``(config, "late" | "stale", health)``.
HealthHooks = Callable[[ConnectionConfig, str, "ConnectionHealth"], object]


class HealthWatch:
    """Looks at the connections of a scheduler's snapshots; fires hooks on changes.

    ``open_store`` opens a connection's store to read; ``hooks`` runs the hooks
    (default: :func:`headwater.engine._hooks.run_health_hooks`).
    """

    def __init__(self, open_store: Callable[[ConnectionConfig], MetadataStore] | None = None,
                 *, hooks: HealthHooks | None = None, every_s: float = 60.0) -> None:
        self._stores: dict[str, MetadataStore] = {}
        self.open_store = open_store or self._reader
        self.hooks = hooks
        self.every_s = every_s
        self.known: dict[str, ConnectionHealth] = {}
        self._last_look: datetime | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hw-health")
        self._busy = threading.Lock()
        self._snapshot: SchedulerSnapshot | None = None

    def healths(self) -> list[ConnectionHealth]:
        """As of the last look, for ``serve --metrics``: every file of the folder, invalid
        ones as such, scheduled ones with their health when their store answered."""
        from headwater.observability.health import ConnectionHealth

        snapshot = self._snapshot
        if snapshot is None:
            return []
        known = dict(self.known)
        return [known.get(f.name) or ConnectionHealth(
            name=f.name, valid=f.config is not None,
            scheduled=f.config is not None and f.config.schedule is not None)
            for f in snapshot.files]

    def on_tick(self, now: datetime, snapshot: SchedulerSnapshot) -> None:
        """The scheduler's tick: a look on the watch's thread when one is due."""
        if self._last_look is not None and (now - self._last_look).total_seconds() < self.every_s:
            return
        if not self._busy.acquire(blocking=False):  # the last look still runs
            return
        self._last_look = now
        self._snapshot = snapshot
        configs = [f.config for f in snapshot.files
                   if f.config is not None and f.config.schedule is not None]

        def look() -> None:
            try:
                self.look(configs, now)
            except Exception:  # a look must never stop the next one
                log.warning("could not look at the connections' health", exc_info=True)
            finally:
                self._busy.release()

        self._pool.submit(look)

    def look(self, configs: Sequence[ConnectionConfig], now: datetime) -> None:
        """Judge each connection now; run the hooks of each change since the last look."""
        from headwater.observability.health import connection_health, transitions

        found = []
        for config in configs:
            try:
                store = self.open_store(config)
                newest = store.list_run_summaries(config.name, limit=1)
                states = store.get_states(config.name)
            except MetadataStoreError as exc:
                log.warning("health of %s unknown: %s", config.name, mask(exc.message))
                continue
            found.append((config, connection_health(
                config.name, config, valid=True,
                last_started=newest[0].started_at if newest else None,
                known_since=_modified_at(config), states=states, now=now)))
        by_name = {config.name: config for config, _ in found}
        for name, event, health in transitions(self.known, [h for _, h in found]):
            log.warning("%s is %s: %s", name, event, _words(health, event))
            self._fire(by_name[name], event, health)
        self.known.update({h.name: h for _, h in found})

    def _fire(self, config: ConnectionConfig, event: str, health: ConnectionHealth) -> None:
        if self.hooks is not None:
            self.hooks(config, event, health)
            return
        from headwater.engine._hooks import run_health_hooks

        run_health_hooks(config, event, health)

    def wait(self) -> None:
        """Return once the look in progress (if any) has ended."""
        self._pool.submit(lambda: None).result()

    def _reader(self, config: ConnectionConfig) -> MetadataStore:
        """The connection's store, as ``headwater sync`` finds it, opened once to read."""
        from headwater.operations import open_store, store_url

        url = store_url(config, create=False)
        if url not in self._stores:
            self._stores[url] = open_store(url, create=False)
        return self._stores[url]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for store in self._stores.values():
            store.close()


def _modified_at(config: ConnectionConfig) -> datetime | None:
    """When the connection file last changed (a never-run connection is late from then)."""
    from datetime import UTC

    if config.path is None:
        return None
    try:
        return datetime.fromtimestamp(config.path.stat().st_mtime, UTC)
    except OSError:
        return None


def _words(health: ConnectionHealth, event: str) -> str:
    if event == "late" and health.late is not None:
        return f"its schedule fired at {health.late.since.isoformat()} and no run started"
    return ", ".join(f"{s.stream} is {s.freshness_s:.0f} s old (over {s.threshold_s:.0f} s)"
                     for s in health.stale)


__all__ = ["HealthHooks", "HealthWatch"]
