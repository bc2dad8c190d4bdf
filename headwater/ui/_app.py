"""The page's aiohttp application: routes, JSON answers, errors.

Routes are listed in ``docs/ui.md`` (the API's documentation).  Every JSON
document is masked on its way out: its text with :func:`~headwater.config.mask`,
which finds each registered secret as written and as JSON escapes it (so in any
string, key or value, of the document); stored configs are redacted already and
log lines masked before they are stored.  One pass over the text, not one per
string (``mask_obj``), is what keeps the connections list fast.  Store reads
are blocking (SQLAlchemy), so each handler runs its reading on a worker thread,
never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from headwater.config import mask, register_secrets
from headwater.errors import HeadwaterError, MetadataStoreError
from headwater.metadata_store import MetadataStore, RunSummary
from headwater.observability.health import health_view
from headwater.operations import commit_id_key
from headwater.serve import RunsInProgress, Scheduler, next_firing
from headwater.ui import _views as views
from headwater.ui._actions import ActionError, Actions
from headwater.ui._folder import ConnectionFile, ConnectionFolder
from headwater.ui._health import folder_health, health_of
from headwater.ui._security import csrf_middleware, error, host_middleware, token_middleware
from headwater.ui._streams import configured_streams

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
#: Runs per connection in the list's small chart.
RECENT_RUNS = 20
MAX_RUNS_PAGE = 500
#: Log lines per answer (``?limit=``, at most the larger figure): the page asks for more.
LOG_LINES_PAGE = 200
MAX_LOG_LINES_PAGE = 1000

FOLDER = web.AppKey("folder", ConnectionFolder)
ACTIONS = web.AppKey("actions", Actions)
SCHEDULER: web.AppKey[Scheduler | None] = web.AppKey("scheduler")
_T = TypeVar("_T")


def create_app(directory: Path, store_url: str | None = None, *, token: str | None = None,
               runs: RunsInProgress | None = None,
               scheduler: Scheduler | None = None) -> web.Application:
    """The page over the connection files of ``directory``.

    ``store_url``: one metadata store for every connection (default: each
    file's own, as ``headwater sync`` finds it).  ``token``: required from API
    clients when set.  ``runs``: where the syncs the page starts register, so
    that one SIGTERM stops them (``serve --ui`` passes the scheduler's);
    ``scheduler``: ``serve --ui``'s, whose health ``/metrics`` adds to the store's figures.
    """
    if token:
        register_secrets([token])  # never in a log line or an answer
    app = web.Application(middlewares=[_errors, host_middleware(token), token_middleware(token),
                                       csrf_middleware])
    folder = ConnectionFolder(Path(directory), store_url)
    app[FOLDER] = folder
    app[ACTIONS] = Actions(folder, runs if runs is not None else RunsInProgress())
    app[SCHEDULER] = scheduler
    app.router.add_get("/", _index)
    app.router.add_static("/static", STATIC_DIR, show_index=False, follow_symlinks=False)
    app.router.add_get("/api/connections", _connections)
    app.router.add_get("/api/connections/{name}", _connection)
    app.router.add_get("/api/runs/{run_id}", _run)
    app.router.add_get("/api/runs/{run_id}/logs", _logs)
    app.router.add_get("/api/runs/{run_id}/logs.txt", _logs_text)
    app.router.add_get("/metrics", _metrics)
    for path, call, status in ACTION_ROUTES:
        app.router.add_post(path, _action(call, status))
    app.on_cleanup.append(_close)
    return app


async def _close(app: web.Application) -> None:
    app[FOLDER].close()


def answer(document: Any, status: int = 200) -> web.Response:
    """A JSON answer, masked (see the module docstring)."""
    text = mask(json.dumps(document, default=str, separators=(",", ":")))
    return web.Response(text=text, status=status, content_type="application/json")


async def _blocking(fn: Callable[[], _T]) -> _T:
    return await asyncio.to_thread(fn)


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Errors as ``{"error": message}`` (masked) with a status that says what happened."""
    try:
        return await handler(request)
    except ActionError as exc:
        return error(exc.status, mask(exc.message))
    except MetadataStoreError as exc:  # unreachable, missing, not a store: not bad input
        return error(503, mask(exc.message))
    except web.HTTPException as exc:
        if request.path.startswith("/api/") and exc.status >= 400:
            return error(exc.status, exc.reason)
        raise
    except HeadwaterError as exc:
        return error(400, mask(exc.message))
    except Exception as exc:
        log.warning("%s %s failed", request.method, request.path, exc_info=True)
        return error(500, mask(f"{type(exc).__name__}: {exc}"))


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC_DIR / "index.html",
                            headers={"Cache-Control": "no-cache"})


# ---------------------------------------------------------------- reading


_FIRINGS: dict[str, datetime] = {}
_FIRINGS_LOCK = threading.Lock()  # handlers run on several worker threads


def _next_firing(schedule: str, now: datetime) -> datetime | None:
    """When ``schedule`` fires next (as ``serve`` computes it), kept until that time passes:
    croniter costs milliseconds a call, and the list shows every connection's."""
    with _FIRINGS_LOCK:
        known = _FIRINGS.get(schedule)
    if known is not None and known > now:
        return known
    try:
        found = next_firing(schedule, now)
    except (ValueError, KeyError):
        return None
    with _FIRINGS_LOCK:
        _FIRINGS[schedule] = found
    return found


def connection_document(folder: ConnectionFolder, actions: Actions, connection: ConnectionFile,
                        now: datetime, summaries: list[RunSummary] | None = None
                        ) -> dict[str, Any]:
    """``Connection`` of the contract: the file, its schedule, its recent runs
    (``summaries``, the newest first, when the caller read them already)."""
    config = connection.config
    if summaries is None and connection.valid:
        summaries = folder.store_for(connection).list_run_summaries(connection.name,
                                                                    limit=RECENT_RUNS)
    runs = [views.run_summary(s, now) for s in summaries or []]
    schedule = config.schedule if config is not None else None
    following = views.iso(_next_firing(schedule, now)) if schedule and connection.valid else None
    job = actions.job_of(connection.name)
    return {
        "name": connection.name,
        "file": str(connection.path),
        "valid": connection.valid,
        "problems": connection.problems,
        "source_type": config.source.type if config is not None else None,
        "destination_type": config.destination.type if config is not None else None,
        "schedule": schedule,
        "next_firing": following,
        "last_run": views.last_run(runs, summaries or []),
        "recent_runs": list(reversed(runs)),
        "busy": job.kind if job is not None else None,
    }


async def _connections(request: web.Request) -> web.Response:
    folder, actions = request.app[FOLDER], request.app[ACTIONS]

    def read() -> dict[str, Any]:
        now = datetime.now(UTC)
        connections = folder.connections()
        recent, unread = recent_runs(folder, connections, RECENT_RUNS)
        healths = folder_health(folder, connections, recent, unread, now)
        documents = []
        for c, health in zip(connections, healths, strict=True):
            document = connection_document(folder, actions, c, now, recent.get(c.name, []))
            document.update(store_error=unread.get(c.name), **health_view(health),
                            store_missing=c.valid and folder.store_for(c).missing)
            documents.append(document)
        return {"connections": documents}

    return answer(await _blocking(read))


def recent_runs(folder: ConnectionFolder, connections: list[ConnectionFile], limit: int
                ) -> tuple[dict[str, list[RunSummary]], dict[str, str]]:
    """The newest ``limit`` runs of each valid connection (one statement per store), and
    the store's error for the connections whose store did not answer: one unreadable
    store blanks its own connections, said so, not the whole list."""
    by_store: dict[int, tuple[MetadataStore, list[str]]] = {}
    for c in connections:
        if c.valid:
            store = folder.store_for(c)
            by_store.setdefault(id(store), (store, []))[1].append(c.name)
    recent: dict[str, list[RunSummary]] = {}
    unread: dict[str, str] = {}
    for store, names in by_store.values():
        if store.missing:  # no sync wrote it yet: no runs, and said so (``store_missing``)
            recent.update({name: [] for name in names})
            continue
        try:
            recent.update(store.recent_run_summaries(names, limit))
        except MetadataStoreError as exc:
            unread.update(dict.fromkeys(names, mask(exc.message)))
    return recent, unread


def _int_query(request: web.Request, name: str, default: int, most: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ActionError(400, f"?{name}= must be a whole number, not {raw!r}") from None
    if value < 0:
        raise ActionError(400, f"?{name}= must not be negative")
    return min(value, most)


def _streams(connection: ConnectionFile, store: MetadataStore | None,
             now: datetime) -> list[dict[str, Any]]:
    """The connection's streams from its file and its newest plan, with their states."""
    config = connection.config
    configured = configured_streams(connection, store)
    tables: dict[str, str | None] = {}
    if config is not None and connection.valid:
        try:
            from headwater.destinations import build_destination

            destination = build_destination(config.destination.type, config.destination.config)
            tables = {c["name"]: destination.table_location(c["name"]) for c in configured}
        except Exception:  # the page still shows the rest
            log.debug("no table locations for %s", connection.name, exc_info=True)
    states = store.get_states(connection.name) if store is not None else {}
    return views.stream_views(configured, states, tables, now)


#: What ``?before=`` takes: a run id (:func:`headwater.metadata_store.new_run_id`).
RUN_ID_SHAPE = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]+")


def _before(request: web.Request) -> str | None:
    before = request.query.get("before")
    if before is not None and not RUN_ID_SHAPE.fullmatch(before):
        raise ActionError(400, f"?before= must be a run id such as 20261122T041500Z-1a2b3c "
                               f"(the oldest run of the page before), not {before!r}")
    return before


async def _connection(request: web.Request) -> web.Response:
    folder, actions = request.app[FOLDER], request.app[ACTIONS]
    name = request.match_info["name"]
    limit = _int_query(request, "limit", 50, MAX_RUNS_PAGE)
    before = _before(request)

    def read() -> dict[str, Any]:
        connection = folder.get(name)
        if connection is None:
            raise ActionError(404, f"no connection {name!r} in {folder.folder}")
        now = datetime.now(UTC)
        if not connection.valid:  # no store: its file names none a sync of it wrote
            return {**connection_document(folder, actions, connection, now),
                    "store_error": None, "late": None, "stale": [],
                    "streams": _streams(connection, None, now), "runs": []}
        store = folder.store_for(connection)
        try:
            if before is not None:
                anchor = store.get_run(before)
                if anchor is None or anchor.connection != name:
                    raise ActionError(404, f"?before=: no run {before!r} of {name}")
            recent = store.list_run_summaries(name, limit=RECENT_RUNS)
            document = connection_document(folder, actions, connection, now, recent)
            document.update(health_view(health_of(folder, connection, now, recent)))
            document["streams"] = _streams(connection, store, now)
            document["runs"] = [views.run_summary(s, now) for s in
                                store.list_run_summaries(name, limit=limit, before=before)]
            document["store_error"] = None
        except MetadataStoreError as exc:  # the file's own figures, and why no history
            document = connection_document(folder, actions, connection, now, [])
            document.update(store_error=mask(exc.message), late=None, stale=[],
                            streams=_streams(connection, None, now), runs=[])
        return document

    return answer(await _blocking(read))


async def _run(request: web.Request) -> web.Response:
    actions = request.app[ACTIONS]
    run_id = request.match_info["run_id"]

    def read() -> dict[str, Any]:
        run, store = actions.find_run(run_id)
        live = store.live_figures(run_id) if run.status == "running" else []
        return views.run_detail(run, store.list_checkpoints(run_id), commit_id_key(run),
                                datetime.now(UTC), live)

    return answer(await _blocking(read))


async def _logs(request: web.Request) -> web.Response:
    actions = request.app[ACTIONS]
    run_id = request.match_info["run_id"]
    after = _int_query(request, "after", 0, 2**62)
    limit = _int_query(request, "limit", LOG_LINES_PAGE, MAX_LOG_LINES_PAGE)

    def read() -> dict[str, Any]:
        _, store = actions.find_run(run_id)
        lines, omitted = store.run_logs(run_id, after=after, limit=limit)
        return views.log_lines(lines, omitted)

    return answer(await _blocking(read))


async def _logs_text(request: web.Request) -> web.Response:
    """The run's log lines as a file to download (text/plain, masked as every answer)."""
    from headwater.engine._run_logs import KEEP_FIRST, KEEP_LAST

    actions = request.app[ACTIONS]
    run_id = request.match_info["run_id"]

    def read() -> str:
        run, store = actions.find_run(run_id)
        lines, omitted = store.run_logs(run_id, limit=KEEP_FIRST + KEEP_LAST)
        return views.log_text(run, lines, omitted, (KEEP_FIRST, KEEP_LAST))

    text = mask(await _blocking(read))
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
    return web.Response(text=text, content_type="text/plain", charset="utf-8", headers={
        "Content-Disposition": f'attachment; filename="headwater-run-{safe}.log"'})


async def _metrics(request: web.Request) -> web.Response:
    """Prometheus text (:mod:`headwater.observability.metrics`) over the folder's store: the
    one every connection names, else the one ``headwater runs`` reads (``--store``, the
    environment's, the home folder's), plus ``serve --ui``'s scheduler health."""
    from headwater.observability.metrics import CONTENT_TYPE, render_metrics

    folder, scheduler = request.app[FOLDER], request.app[SCHEDULER]

    def read() -> bytes:
        connections = folder.connections()
        recent, unread = recent_runs(folder, connections, 1)
        # A missing store is down here (headwater_metadata_store_up 0): nothing judged from it.
        unread.update({c.name: "no store" for c in connections
                       if c.valid and folder.store_for(c).missing})
        health = folder_health(folder, connections, recent, unread, datetime.now(UTC))
        return render_metrics(folder.all_stores(), scheduler, connections=health)

    body = await _blocking(read)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


# ---------------------------------------------------------------- actions


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ActionError(400, "the request's body must be a JSON object") from None
    if not isinstance(body, dict):
        raise ActionError(400, "the request's body must be a JSON object")
    return body


ActionCall = Callable[[Actions, dict[str, str], dict[str, Any]], dict[str, Any]]

#: Every POST route: what it calls on :class:`Actions` and the status of a success.
ACTION_ROUTES: list[tuple[str, ActionCall, int]] = [
    ("/api/connections/{name}/sync", lambda a, p, b: a.sync(p["name"]), 202),
    ("/api/connections/{name}/backfill/plan",
     lambda a, p, b: a.backfill_plan(p["name"], b), 200),
    ("/api/connections/{name}/backfill", lambda a, p, b: a.backfill(p["name"], b), 202),
    ("/api/connections/{name}/streams/{stream}/reset",
     lambda a, p, b: a.reset(p["name"], p["stream"], b), 200),
    ("/api/runs/{run_id}/stop", lambda a, p, b: a.stop(p["run_id"]), 202),
    ("/api/runs/{run_id}/replay", lambda a, p, b: a.replay(p["run_id"], b), 202),
]


def _action(call: ActionCall, status: int) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.Response:
        actions, body, params = request.app[ACTIONS], await _body(request), dict(request.match_info)
        return answer(await _blocking(lambda: call(actions, params, body)), status=status)

    return handle
