"""A connection's streams as the page knows them, without connecting to its source: its
file, and the newest sync's persisted plan for what the file leaves to the source."""

from __future__ import annotations

from typing import Any

from headwater.metadata_store import MetadataStore
from headwater.ui import _views as views
from headwater.ui._folder import ConnectionFile


def configured_streams(connection: ConnectionFile,
                       store: MetadataStore | None) -> list[dict[str, Any]]:
    """How each stream of the connection is synced: its file, over which the newest sync's
    persisted plan (when ``store`` is given) fills in what the file leaves to the source."""
    config = connection.config
    configured: list[dict[str, Any]] = []
    if config is not None and config.streams:
        configured = [{"name": s.name,
                       "sync_mode": f"{s.sync_mode.value}+{s.destination_sync_mode.value}",
                       "cursor_field": s.cursor_field, "primary_key": s.primary_key or []}
                      for s in config.streams]
    if store is None:
        return configured
    newest = next((s for s in store.list_run_summaries(connection.name, limit=10)
                   if s.kind == "sync"), None)
    if newest is not None:
        run = store.get_run(newest.run_id)
        planned = {p["name"]: p for p in views.configured_from_plan(run.plan if run else {})}
        configured = [{**c, **{k: v for k, v in planned.get(c["name"], {}).items() if v}}
                      for c in configured] or list(planned.values())
    return configured


def known_streams(connection: ConnectionFile, store: MetadataStore) -> set[str] | None:
    """Every stream the page can name for ``connection``: configured, planned or with a
    state (a reset of any other answers 404); ``None`` when nothing says (a file that
    leaves its streams to the source, never synced: only the source could tell)."""
    configured = {c["name"] for c in configured_streams(
        connection, None if store.missing else store)}
    states = set() if store.missing else set(store.get_states(connection.name))
    return (configured | states) or None
