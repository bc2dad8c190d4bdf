"""HttpStream: a REST collection as a Headwater stream, mostly declared.

The author (or a YAML file, through the ``rest`` source) declares the path,
query parameters, record selector, paginator, keys and cursor; the stream
plans partitions and reads them.  Three shapes of partition:

* **date windows** (``cursor_field`` set): the concurrent cursor's gaps cut
  into partitions of ``windows_per_partition`` API windows of
  ``window_size_s`` (by default enough to keep the reading task's requests in
  flight: :func:`default_windows_per_partition`); the API windows of one
  partition are fetched side by side on the client's event loop (I/O
  concurrency), the partitions by parallel Spark tasks, each task reading a run
  of them with one client;
* **parent windows** (``parent`` set, a substream): one partition of the
  child per API window of its parent (planned as the parent plans a full read:
  no API call at plan time).  Reading it reads that parent partition's pages
  and starts each parent record's child calls as soon as its page arrives, on
  the same event loop and within the same calls in flight as the parent's
  pages (:meth:`HttpStream._read_children`): parent and child reads overlap,
  and the requests in flight stay at the task's share of ``concurrency`` from
  the first parent page to the last child page;
* **one partition** for a plain full-refresh collection.

A parent synced in the same run as its substream is read once: the
substream's windows of the parent are cut where the parent's own partitions
cut them this run (from the parent's state), and each of those calls is read
by whichever task asks first and shared with the other through the run's
shared folder (:mod:`._shared_pages`; on one machine only: on a cluster both
streams read it).  Windows before the parent's state, which only the
substream reads, are not shared.  On a local master, ``headwater sync`` has
every shared call made from the driver's side (a process forked for them),
from before Spark starts (:mod:`._early_reads`); the tasks then take the
pages and make no call.

Path and parameter templates are ``str.format`` strings over ``{start}`` and
``{end}`` (the window, in the cursor's stored form) and ``{parent.<field>}``.

Plans of earlier versions held the parent records themselves (``parents``:
their key fields, read at plan time); such partitions stay readable, so a run
planned then still resumes and re-executes exactly its recorded plan.

Every partition carries ``tasks``: how many tasks the plan said run at once,
so the client splits the call budget and the concurrency the same way on
every executor (and again when a resumed run re-executes the plan).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, Literal

import pyarrow as pa

from headwater.errors import ConfigError, ConnectorError, StateError
from headwater.sdk._cursor import ConcurrentCursor
from headwater.sdk._partition import Partition
from headwater.sdk._plan_context import PlanContext
from headwater.sdk._state_converters import (
    EpochSecondsStateConverter,
    IsoDateTimeStateConverter,
    StateConverter,
)
from headwater.sdk._stream import Stream
from headwater.sdk.http._client import (
    HttpClient,
    HttpSettings,
    NotFoundError,
    in_flight_per_task,
)
from headwater.sdk.http._paginators import NoPagination, Paginator
from headwater.sdk.http._rate_limit import split_share
from headwater.sdk.http._records import records_batch
from headwater.sdk.http._session import SessionCache
from headwater.sdk.http._shared_pages import SharedPages
from headwater.table_schema import arrow_schema_for, has_decimal

__all__ = ["HttpStream", "HttpStreamSpec", "ParentLink"]

CursorFormat = Literal["iso", "epoch"]

#: The least time a claim on a shared call may go without a page before it is broken.
STALE_CLAIM_MIN_S = 60.0

#: Records gathered into one Arrow batch: the engine's cost per batch is fixed, so a
#: batch spans many pages, yet small enough that batches leave while pages arrive.
BATCH_ROWS = 2_000


@dataclass(frozen=True)
class ParentLink:
    """How a substream hangs off its parent.

    ``fields`` are the parent record fields the child needs (its path uses
    ``{parent.id}``); ``copy_to`` copies some of them into every child record
    (``{"survey_id": "id"}``) so the child's rows say whose they are.

    ``parents_per_partition`` cut the plans of earlier versions, whose
    partitions held parent records; a child partition is now one parent
    partition (see the module docstring), and the setting is accepted and unused.
    """

    stream: str
    fields: tuple[str, ...] = ("id",)
    copy_to: Mapping[str, str] = field(default_factory=dict)
    parents_per_partition: int = 10


@dataclass(frozen=True)
class HttpStreamSpec:
    """The declaration of one HTTP stream (what a YAML ``streams`` entry holds)."""

    name: str
    path: str
    json_schema: Mapping[str, Any]
    params: Mapping[str, Any] = field(default_factory=dict)
    record_path: str | None = None
    primary_key: tuple[str, ...] = ()
    paginator: Paginator = field(default_factory=NoPagination)
    cursor_field: str | None = None
    cursor_format: CursorFormat = "iso"
    start_date: str | None = None
    end_date: str | None = None
    window_size_s: int = 86_400
    #: None: :func:`default_windows_per_partition` for the sync's concurrency.
    windows_per_partition: int | None = None
    parent: ParentLink | None = None
    ignore_404: bool = False


#: Windows in a partition, per request its task keeps in flight, when the stream
#: does not say (see :func:`default_windows_per_partition`).
WINDOWS_PER_REQUEST_IN_FLIGHT = 4


def default_windows_per_partition(concurrency: int, tasks: int) -> int:
    """API windows per partition when a stream does not set them: four per request
    the reading task keeps in flight, and at least 10.

    A task fetches a partition's windows side by side, so a partition of fewer
    windows than its task's share of ``concurrency`` cannot fill it, and many short
    partitions make many short checkpoints, each paying Spark's job and task
    start-up and a commit (``bench/http_source_pages.py``: about 0.5 of the ideal
    rate at 32 in flight with 10 windows a partition, 0.82-0.86 with 64).  Four rounds
    of requests a partition leave its last windows, which finish unevenly, a small
    part of it, and the next partition is fetched meanwhile (``reads_next``).
    """
    return max(10, WINDOWS_PER_REQUEST_IN_FLIGHT * in_flight_per_task(concurrency, tasks))


def _converter(fmt: CursorFormat) -> StateConverter:
    return EpochSecondsStateConverter() if fmt == "epoch" else IsoDateTimeStateConverter()


def _render(template: Any, values: Mapping[str, Any], what: str) -> Any:
    if not isinstance(template, str):
        return template
    try:
        return template.format_map(values)
    except (KeyError, AttributeError, IndexError) as exc:
        raise ConfigError(f"{what} template {template!r} uses {exc}, which is not available "
                          "here ({start}, {end} and {parent.<field>} are)", field=what) from exc


class HttpStream(Stream):
    """A stream read from an HTTP API; see the module docstring.

    Subclass it for unusual APIs and override :meth:`request_params` or
    :meth:`transform`; the loops (pages, windows, parents, retries) stay here.
    Pickled to executors: it holds only its spec, the client settings and its
    parent stream.
    """

    #: A task keeps one client (connections, event loop) for every partition it reads.
    one_task_per_partition = False

    @property
    def max_concurrent_tasks(self) -> int:
        return self.settings.concurrency

    def __init__(self, spec: HttpStreamSpec, settings: HttpSettings,
                 parent: HttpStream | None = None, *,
                 substreams: tuple[str, ...] = ()) -> None:
        """``substreams``: the streams whose parent this one is; where one of them is
        synced in the same run, the calls both read are shared (module docstring)."""
        if spec.parent is not None and parent is None:
            raise ConfigError(f"stream {spec.name!r} needs its parent stream "
                              f"{spec.parent.stream!r}", stream=spec.name)
        if spec.parent is not None and spec.cursor_field:
            raise ConfigError(f"substream {spec.name!r} cannot be incremental itself; its "
                              "parent may be", stream=spec.name)
        if spec.cursor_field and not spec.start_date:
            raise ConfigError(f"incremental stream {spec.name!r} needs a start_date",
                              stream=spec.name, field="start_date")
        self.spec = spec
        self.settings = settings
        self.parent = parent
        self.substreams = tuple(substreams)
        self.name = spec.name  # type: ignore[misc]
        self.primary_key = tuple(spec.primary_key)  # type: ignore[misc]
        self.cursor_field = spec.cursor_field  # type: ignore[misc]
        self.state_converter = (  # type: ignore[misc]
            _converter(spec.cursor_format) if spec.cursor_field else None)

    # -- declaration ------------------------------------------------------------------

    def json_schema(self) -> dict[str, Any]:
        return dict(self.spec.json_schema)

    def cursor_start(self) -> Any:
        return self._stored(self.spec.start_date, "start_date")

    def cursor_end(self, planned_at: datetime | None = None) -> Any:
        """Where this run's windows end: ``end_date``, else ``planned_at`` (the run's
        planning moment, see :class:`PlanContext`) or now, in whole seconds."""
        if self.spec.end_date:
            return self._stored(self.spec.end_date, "end_date")
        now = (planned_at or datetime.now(UTC)).replace(microsecond=0)
        assert self.state_converter is not None
        return self.state_converter.serialize(now)

    def _stored(self, iso: str | None, what: str) -> Any:
        assert self.state_converter is not None
        try:
            value = IsoDateTimeStateConverter().parse(iso)
        except StateError as exc:
            raise ConfigError(f"stream {self.name!r}: {what} {iso!r} is not an ISO 8601 "
                              "date-time", stream=self.name, field=what) from exc
        return self.state_converter.serialize(value)

    # -- planning ---------------------------------------------------------------------

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return self.plan(state, PlanContext())

    def plan(self, state: Mapping[str, Any] | None, context: PlanContext) -> list[Partition]:
        # No more tasks than the engine runs at once for this stream.
        tasks = max(min(context.parallel_tasks, self.max_concurrent_tasks), 1)
        if not self.settings.redis_url:
            for budget in self.settings.budgets:
                split_share(budget, tasks)  # a budget too small to split fails here, not later
        if self.parent is not None and self.spec.parent is not None:
            return self._parent_partitions(self.parent, context, tasks)
        if self.cursor_field:
            cursor = self.cursor(state, incremental=True)
            assert isinstance(cursor, ConcurrentCursor)
            per_partition = (self.spec.windows_per_partition
                             or default_windows_per_partition(self.settings.concurrency, tasks))
            size = self.spec.window_size_s * per_partition
            shared = self._shared_dir(context)
            return [Partition(self.name, f"{self.name}:{low}/{high}",
                              {"start": low, "end": high, "tasks": tasks, **shared})
                    for low, high in cursor.windows(self.cursor_end(context.planned_at), size)]
        return [Partition(self.name, f"{self.name}:all",
                          {"tasks": tasks, **self._shared_dir(context)})]

    def _shared_dir(self, context: PlanContext) -> dict[str, str]:
        """How this stream's partitions read through the run's shared folder, if the
        tasks can share one and the run syncs this stream: ``shared_pages`` when a
        substream synced alongside reads the same calls (each is kept for the
        other), else ``early_pages`` when the driver reads early (a task uses what
        the driver read, and keeps nothing itself); otherwise nothing."""
        synced = context.synced_states
        if not context.shared_dir or self.parent is not None or self.name not in synced:
            return {}
        if any(child in synced for child in self.substreams):
            return {"shared_pages": context.shared_dir}
        if context.reads_early:
            return {"early_pages": context.shared_dir}
        return {}

    def _parent_partitions(self, parent: HttpStream, context: PlanContext,
                           tasks: int) -> list[Partition]:
        """One partition per API window of a full read of the parent (or per parent
        partition, for a parent without windows); nothing is read.

        A window, not the parent's own partition of many windows: each parent
        record makes calls of its own, so a parent window is already many calls,
        and small partitions spread them evenly over the tasks (a task short of
        work leaves its share of the calls in flight unused).  The parent
        partition travels whole in the child's (``parent_partition``), so the
        recorded plan says exactly which parent pages a resumed run reads.  No
        more tasks than partitions share the calls in flight: a parent read in
        one partition (a plain collection) gets the whole ``concurrency``.
        """
        pieces = _windows(parent, parent.plan(None, context))
        if "shared_pages" in parent._shared_dir(context):
            # The parent's own stream reads these windows this run: cut there, and shared.
            theirs = _windows(parent, parent.plan(context.synced_states[parent.name], context))
            pieces = _in_order(parent, _outside(parent, pieces, theirs) + theirs)
        else:
            pieces = [_unshared(p) for p in pieces]
        tasks = max(min(tasks, len(pieces)), 1)
        # Read early by the driver: each partition's calls, its child calls included.
        early = ({"early_pages": context.shared_dir}
                 if context.reads_early and context.shared_dir
                 and self.name in context.synced_states else {})
        return [Partition(self.name, f"{self.name}:of:{p.id}",
                          {"parent_partition": _unshared(p).to_dict(), "tasks": tasks,
                           **{k: v for k, v in p.params.items() if k == "shared_pages"},
                           **early})
                for p in pieces]

    # -- reading ----------------------------------------------------------------------

    def request_params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Query parameters of one API window or parent (templates rendered)."""
        return {key: _render(value, values, f"streams.{self.name}.params.{key}")
                for key, value in self.spec.params.items()}

    def transform(self, record: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """Hook for unusual APIs: change a record before it is yielded."""
        return record

    def read(self, partition: Partition) -> Iterator[pa.RecordBatch | dict[str, Any]]:
        """The partition's records as typed Arrow batches of about :data:`BATCH_ROWS` rows.

        Batches are built here, in bulk (:func:`._records.records_batch`), while
        the client's loop keeps fetching; records outside the common case are
        yielded as dicts for the engine's general path.  :meth:`records` yields
        every record as a dict.
        """
        # The table's columns when the engine said them (``json_columns`` stay text):
        # the batches are then what the engine would make of the dicts.
        schema = self.landing or arrow_schema_for(self.json_schema())
        pending: list[dict[str, Any]] = []
        for page in self._pages(partition):
            pending.extend(page)
            if len(pending) >= BATCH_ROWS:
                yield from self._typed(pending, schema)
                pending = []
        if pending:
            yield from self._typed(pending, schema)

    @staticmethod
    def _typed(records: list[dict[str, Any]], schema: pa.Schema
               ) -> Iterator[pa.RecordBatch | dict[str, Any]]:
        batch = records_batch(records, schema)
        if batch is None:
            yield from records
        else:
            yield batch

    def _exact_numbers(self) -> bool:
        """Whether pages are decoded keeping numbers' literals: a column with a decimal
        leaf is typed from them (decoding so costs more, so only then)."""
        found = self.__dict__.get("_decimals")
        if found is None:  # the stream's own columns: a JSON-text one decodes alike
            found = self.__dict__["_decimals"] = any(
                has_decimal(field.type) for field in arrow_schema_for(self.json_schema()))
        return bool(found)

    def records(self, partition: Partition) -> Iterator[dict[str, Any]]:
        """The partition's records as dicts, in API order (after :meth:`transform`)."""
        for page in self._pages(partition):
            yield from page

    def _pages(self, partition: Partition) -> Iterator[list[dict[str, Any]]]:
        """The records of each page, in API order; lists, so nothing is passed one
        record at a time between the loop's thread and the task's."""
        tasks = int(partition.params.get("tasks", 1))
        session = self._session_cache().get(self.settings, tasks=tasks, name=self.name)
        client = session.client
        upcoming: Partition | None = self.__dict__.pop("_reads_next", None)

        async def whole(unit: dict[str, Any]) -> list[list[dict[str, Any]]]:
            return [page async for page in self._read_unit(client, unit)]

        futures = session.take(partition.id)  # started early, when read next
        if futures is None:
            units = self._units(partition)
            if len(units) == 1 and upcoming is None:
                # One collection alone (say a whole full-refresh collection): its
                # pages are handed over as they come, not gathered first.
                yield from client.iterate(self._read_unit(client, units[0]))
                return
            futures = session.start(whole, units)
        if upcoming is not None and upcoming.id != partition.id:
            session.read_ahead(upcoming.id, whole, self._units(upcoming))
        for pages in session.results(futures):
            yield from pages

    def reads_next(self, partition: Partition) -> None:
        """Noted here; its calls start once those of the partition read now have."""
        self.__dict__["_reads_next"] = partition

    def task_done(self) -> None:
        """Close this task's client: its connections, loop and share of the budget."""
        cache = self.__dict__.pop("_sessions", None)
        if cache is not None:
            cache.close()

    def _session_cache(self) -> SessionCache:
        """This object's sessions (:mod:`._session`), made on first use after unpickling."""
        cache = self.__dict__.get("_sessions")
        if cache is None:
            cache = self.__dict__["_sessions"] = SessionCache(self)
        return cache

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_sessions", None)  # sockets and loops stay in the process that made them
        state.pop("_reads_next", None)
        return state

    def _units(self, partition: Partition) -> list[dict[str, Any]]:
        """The API calls (each a paginated collection) one partition is made of.

        A partition read through the shared folder gives its units the folder
        (``_shared``) and whether the task keeps what it reads there for another
        (``_keep``: a parent's calls a synced substream reads too); a substream's
        partition read early (``early_pages``) is shared whole (``_whole``).
        """
        params = partition.params
        units = self._calls(partition)
        family, early = params.get("shared_pages"), params.get("early_pages")
        if not (family or early):
            return units
        extra: dict[str, Any] = {"_shared": family or early, "_keep": bool(family)}
        if early and "parent_partition" in params:
            extra["_whole"] = True
        return [{**unit, **extra} for unit in units]

    def _calls(self, partition: Partition) -> list[dict[str, Any]]:
        params = partition.params
        if "parent_partition" in params and self.parent is not None:
            parent_partition = Partition.from_dict(params["parent_partition"])
            return [{"parent_unit": unit} for unit in self.parent._units(parent_partition)]
        if "parents" in params:  # planned by an earlier version: the parents themselves
            return [{"parent": dict(p)} for p in params["parents"]]
        if "start" in params and self.state_converter is not None:
            conv = self.state_converter
            low, high = conv.parse(params["start"]), conv.parse(params["end"])
            step = conv.step(self.spec.window_size_s)
            units = []
            while low < high:
                end = min(low + step, high)
                units.append({"start": conv.serialize(low), "end": conv.serialize(end),
                              "_range": _Window.of(low, end)})
                low = end
            return units
        if "start" in params or "parents" in params or "parent_partition" in params:
            raise ConnectorError("partition does not fit this stream", stream=self.name,
                                 partition=partition.id)
        return [{}]

    async def _read_unit(self, client: HttpClient, unit: Mapping[str, Any]
                         ) -> AsyncIterator[list[dict[str, Any]]]:
        """The records of each page of one API call (a window or a parent).

        Runs on the client's event loop, as do :meth:`request_params` and
        :meth:`transform`: an override must not block for long (nor call the
        client's blocking methods).  A ``parent_unit`` is one call of the
        parent, whose records' child calls make this unit
        (:meth:`_read_children`).
        """
        folder = unit.get("_shared")
        # The driver's early reads keep everything they read; a task keeps only what
        # another reader is sure to ask for (_keep).
        early = bool(unit.get("_early"))
        if "parent_unit" in unit:
            parent_unit = unit["parent_unit"]
            if folder:
                parent_unit = {**parent_unit, "_shared": folder, "_early": early,
                               "_keep": bool(unit.get("_keep"))}
            if folder and unit.get("_whole"):
                pages = self._shared(folder).read(
                    SharedPages.key(self.name, parent_unit.get("start"), parent_unit.get("end")),
                    lambda: self._read_children(client, parent_unit), keep=early, driver=early)
            else:
                pages = self._read_children(client, parent_unit)
        elif folder:
            pages = self._shared(folder).read(
                SharedPages.key(self.name, unit.get("start"), unit.get("end")),
                lambda: self._fetch_unit(client, unit), keep=early or bool(unit.get("_keep")),
                driver=early)
        else:
            pages = self._fetch_unit(client, unit)
        async for page in pages:
            yield page

    def _shared(self, folder: str) -> SharedPages:
        # A claim silent for longer than one call with its retries may take, and for at
        # least a minute (a busy machine can hold a live reader back for seconds), is
        # abandoned: breaking a live one costs a second call.
        return SharedPages(folder, stale_after_s=max(
            STALE_CLAIM_MIN_S, 2 * (self.settings.timeout_s + self.settings.max_backoff_s)))

    async def _fetch_unit(self, client: HttpClient, unit: Mapping[str, Any]
                          ) -> AsyncIterator[list[dict[str, Any]]]:
        """:meth:`_read_unit`'s pages from the API itself."""
        parent = unit.get("parent") or {}
        values = {"start": unit.get("start"), "end": unit.get("end"),
                  "parent": SimpleNamespace(**parent)}
        path = _render(self.spec.path, values, f"streams.{self.name}.path")
        window = unit.get("_range")
        try:
            async for page in client.apages(path, self.request_params(values),
                                            self.spec.paginator, self.spec.record_path,
                                            exact_numbers=self._exact_numbers()):
                records = []
                for record in page.records:
                    if not isinstance(record, dict):
                        raise ConnectorError(f"{path}: a record is a {type(record).__name__}, "
                                             "not an object; check record_selector",
                                             stream=self.name)
                    if window is not None and not self._in_window(record, window):
                        continue
                    if self.spec.parent is not None:
                        for target, source in self.spec.parent.copy_to.items():
                            record.setdefault(target, parent.get(source))
                    records.append(self.transform(record, values))
                yield records
        except NotFoundError:
            if not self.spec.ignore_404:
                raise
            return

    async def _read_children(self, client: HttpClient, parent_unit: Mapping[str, Any]
                             ) -> AsyncIterator[list[dict[str, Any]]]:
        """The child pages of every parent record of one parent call, in parent order.

        Each parent page's records start their child calls at once (as tasks on
        this loop), while the parent's next page is fetched: the client's
        concurrency is the one budget both share, and the parent's pages take
        a free slot before any child call waiting (:mod:`._slots`), so every
        parent record's calls are queued early and the queue does not run dry.
        Pages leave in a fixed order (parent page, parent record, child page)
        whatever order the calls end in, so a partition read again gives its
        rows in the same order.  A
        parent record seen again within the call (its key fields equal, say on
        a page boundary that moved) is read once.  Leaving early (an error, a
        cancelled read-ahead) cancels the child calls still under way.
        """
        assert self.parent is not None and self.spec.parent is not None
        fields = self.spec.parent.fields

        async def whole(unit: dict[str, Any]) -> list[list[dict[str, Any]]]:
            return [page async for page in self._read_unit(client, unit)]

        started: deque[asyncio.Future[list[list[dict[str, Any]]]]] = deque()
        seen: set[str] = set()
        try:
            async for page in self.parent._read_unit(client, parent_unit):
                for record in page:
                    values = {name: record.get(name) for name in fields}
                    key = repr(tuple(values.values()))  # hashable, whatever the values
                    if key not in seen:
                        seen.add(key)
                        started.append(client.defer(whole({"parent": values})))
                while started and started[0].done():
                    for child_page in started.popleft().result():
                        yield child_page
            while started:
                for child_page in await started[0]:
                    yield child_page
                started.popleft()
        finally:
            for future in started:
                future.cancel()

    def _in_window(self, record: Mapping[str, Any], window: _Window) -> bool:
        """Drop records outside ``[start, end)``: APIs whose filters include both ends
        would otherwise give a boundary record to two windows."""
        value = record.get(self.cursor_field or "")
        if value is None or self.state_converter is None:
            return True
        if type(value) is int and window.epoch_us is not None \
                and _MIN_EPOCH_S <= value <= _MAX_EPOCH_S:
            # Epoch seconds, the common cursor of epoch APIs: the same comparison as
            # below in whole microseconds, without building a datetime per record.
            low_us, high_us = window.epoch_us
            return low_us <= value * 1_000_000 < high_us
        try:
            parsed = self.state_converter.parse_record_value(value)
        except StateError:
            return True
        return bool(window.low <= parsed < window.high)


def _windows(parent: HttpStream, partitions: list[Partition]) -> list[Partition]:
    """``partitions`` of ``parent`` cut into one partition per API call (window)."""
    pieces = []
    for whole in partitions:
        if "start" not in whole.params:
            pieces.append(whole)
            continue
        for unit in parent._calls(whole):
            start, end = unit["start"], unit["end"]
            pieces.append(Partition(parent.name, f"{parent.name}:{start}/{end}",
                                    {**whole.params, "start": start, "end": end}))
    return pieces


def _in_order(parent: HttpStream, pieces: list[Partition]) -> list[Partition]:
    """Window partitions by where they start (others keep their order)."""
    conv = parent.state_converter
    if conv is None or any("start" not in p.params for p in pieces):
        return pieces
    return sorted(pieces, key=lambda p: conv.parse(p.params["start"]))


#: Partition parameters that say how a partition reads through the run's shared folder.
_SHARING = ("shared_pages", "early_pages")


def _unshared(piece: Partition) -> Partition:
    params = {k: v for k, v in piece.params.items() if k not in _SHARING}
    return Partition(piece.stream, piece.id, params)


def _outside(parent: HttpStream, pieces: list[Partition],
             taken: list[Partition]) -> list[Partition]:
    """The parts of window ``pieces`` that no window of ``taken`` covers, unshared.

    ``taken`` are the windows the parent's own stream reads this run (after its
    state); the substream reads the rest of the parent's history itself.
    """
    conv = parent.state_converter
    if conv is None or any("start" not in p.params for p in [*pieces, *taken]):
        return [] if taken else [_unshared(p) for p in pieces]
    covered = sorted((conv.parse(p.params["start"]), conv.parse(p.params["end"]))
                     for p in taken)
    left = []
    for piece in pieces:
        low, high = conv.parse(piece.params["start"]), conv.parse(piece.params["end"])
        for taken_low, taken_high in covered:
            if taken_high <= low or taken_low >= high:
                continue
            if taken_low > low:
                left.append((low, taken_low, piece))
            low = max(low, taken_high)
            if low >= high:
                break
        if low < high:
            left.append((low, high, piece))
    out = []
    for low, high, piece in left:
        start, end = conv.serialize(low), conv.serialize(high)
        out.append(Partition(parent.name, f"{parent.name}:{start}/{end}",
                             {**_unshared(piece).params, "start": start, "end": end}))
    return out


#: Epoch seconds a datetime can hold (0001-01-01 .. 9999-12-31T23:59:59 UTC); the
#: converter refuses others (and the window then keeps the record).
_MIN_EPOCH_S = -62_135_596_800
_MAX_EPOCH_S = 253_402_300_799
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Window:
    """One API window ``[low, high)`` in the converter's internal form, and in epoch
    microseconds when those are aware date-times (what an epoch cursor value compares
    to); made once per API window, consulted once per record."""

    low: Any
    high: Any
    epoch_us: tuple[int, int] | None

    @classmethod
    def of(cls, low: Any, high: Any) -> _Window:
        aware = all(isinstance(v, datetime) and v.tzinfo is not None for v in (low, high))
        unit = timedelta(microseconds=1)
        return cls(low, high, ((low - _EPOCH) // unit, (high - _EPOCH) // unit)
                   if aware else None)
