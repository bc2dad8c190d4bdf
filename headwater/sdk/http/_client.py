"""The HTTP client every HTTP stream reads through: auth, budgets, retries, errors.

Failures are sorted in one place (:func:`_classify`):

* 401 / 403 -> :class:`~headwater.errors.AuthenticationError` (never retried);
* 404 -> :class:`NotFoundError` (a stream may declare it ignorable);
* 429, 5xx, timeouts and broken connections -> retried with exponential
  back-off and jitter, or after ``Retry-After`` when the server says so;
* any other status -> :class:`~headwater.errors.ConnectorError` at once.

When retries are exhausted the error names the method, the URL (secrets
masked) and the last status, so a person can act on it.  The client is made
on the executor (it holds sockets); :class:`HttpSettings` is what travels.

Requests are coroutines on the client's own event loop (:mod:`._event_loop`),
sent by httpx's ``AsyncClient`` over aiohttp's transport (``httpx-aiohttp``,
by an httpx maintainer): the API is httpx's (auth flows, responses, errors),
the sockets and HTTP parsing are aiohttp's C-accelerated ones.  At 16 and 32
requests in flight a page cost 1.6-2.0 ms of CPU through httpx's threaded
client, 2.2-7.9 ms through its asyncio one and 1.0 ms this way
(``bench/http_transports.py``, figures in ``bench/RESULTS.md``).
:meth:`HttpClient.get` and :meth:`HttpClient.pages` are the blocking face of
the same calls, for any thread but the loop's.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import msgspec
import orjson
from httpx_aiohttp import HttpxAiohttpClient

from headwater import json_numbers
from headwater.errors import AuthenticationError, ConnectorError, HeadwaterError
from headwater.sdk.http._auth import Authenticator, NoAuth
from headwater.sdk.http._event_loop import EventLoopThread
from headwater.sdk.http._paginators import PaginationLoop, Paginator, select_path
from headwater.sdk.http._rate_limit import CallBudget, CallGate
from headwater.sdk.http._slots import Slots

T = TypeVar("T")

__all__ = ["HttpClient", "HttpSettings", "NotFoundError", "Page", "in_flight_per_task"]

#: The longest ``Retry-After`` honoured; a longer one fails the call (and the partition).
MAX_RETRY_AFTER_S = 600.0


class NotFoundError(ConnectorError):
    """The API answered 404; streams configured with ``ignore_404`` read nothing instead."""


@dataclass(frozen=True)
class HttpSettings:
    """Everything a client needs, as plain picklable values."""

    base_url: str
    auth: Authenticator = field(default_factory=NoAuth)
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 30.0
    max_attempts: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 60.0
    #: Requests in flight across the whole sync (split across concurrent tasks).
    concurrency: int = 10
    budgets: Sequence[CallBudget] = ()
    redis_url: str | None = None


@dataclass(frozen=True)
class Page:
    """One page: its records (after the record selector) and the response."""

    records: list[Any]
    response: httpx.Response
    body: Any


class _Retryable(Exception):
    """A failure worth another attempt; carries what the last attempt saw."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _rate_limit_pause(response: httpx.Response) -> float | None:
    """Seconds until the window resets when the API says none are left."""
    headers = response.headers
    remaining = headers.get("X-RateLimit-Remaining", headers.get("RateLimit-Remaining"))
    reset = headers.get("X-RateLimit-Reset", headers.get("RateLimit-Reset"))
    if remaining is None or reset is None:
        return None
    try:
        if int(float(remaining)) > 0:
            return None
        value = float(reset)
    except ValueError:
        return None
    # Epoch seconds (GitHub) or seconds from now (the IETF draft).
    seconds = value - time.time() if value > 1_000_000_000 else value
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


#: Where a request carries its budget reservations from the request hook to the response.
_RESERVATIONS = "headwater.budget_reservations"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process, shared by every client.

    httpx builds a new one per client by default, loading the CA bundle each
    time (about 35 ms); a partition opens a client, so a sync paid it per
    partition.  It is httpx's own default context, made once.
    """
    return httpx.create_ssl_context()


#: A relative URL :func:`_request_url` joins itself: unreserved characters and ``/``
#: only, no segment starting with a dot (httpx would resolve ``.`` and ``..``), and
#: not ``//host/...`` (a URL of another host).
_PLAIN_PATH = re.compile(r"(?!//)(?!.*(?:^|/)\.)[A-Za-z0-9\-._~/]*")


def _request_url(client: httpx.AsyncClient, url: str,
                 params: Mapping[str, Any] | None) -> httpx.URL | str:
    """``url`` (with ``params``) as httpx's ``build_request`` would send it, unparsed.

    httpx joins a relative URL to the client's ``base_url`` and then its
    ``params`` by parsing and validating the whole URL three times: about a
    fifth of the driver's CPU per call in a substream sync (5,000 child calls,
    each its own URL).  For a plain relative path (:data:`_PLAIN_PATH`: nothing
    in it to encode or resolve) on a base URL without query or fragment, and no
    client-wide params, the result is the base URL (already parsed and
    checked) with the path appended and the params as httpx encodes them
    (:class:`httpx.QueryParams`, whose text needs no further encoding): made
    here without parsing.  Anything else goes to httpx as it is (``url``).
    ``tests/unit/sdk/http/test_http_client.py`` holds the two equal.
    """
    base = client.base_url
    # httpx's parsed form of a URL (a named tuple); its absence sends ``url`` to httpx.
    reference: Any = getattr(base, "_uri_reference", None)
    if (not hasattr(reference, "_replace")
            or not base.is_absolute_url or reference.query is not None
            or reference.fragment is not None or client.params
            or "://" in url or not _PLAIN_PATH.fullmatch(url)):
        return url
    # Given params that encode to nothing, httpx still ends the URL in "?" (query "").
    query = str(httpx.QueryParams(params)) if params else None
    merged = httpx.URL(base)
    # As httpx's own join: the base's path (always ending in "/"), the path without
    # its leading "/".
    merged._uri_reference = reference._replace(
        path=(reference.path or "/") + url.lstrip("/"), query=query)
    return merged


class _ResponseCookies(httpx.Cookies):
    """httpx's cookie store, which looks at a response's cookies only when it sets some.

    httpx hands every response to the store; without a ``Set-Cookie`` (or
    ``Set-Cookie2``) header there is nothing to keep, yet it built a
    ``urllib`` request and response around it first: about 4 % of the
    driver's CPU per call.  A response that sets cookies is stored as before.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _AsyncClient(HttpxAiohttpClient):
    """httpx's ``AsyncClient`` on aiohttp, its cookies in a :class:`_ResponseCookies`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cookies = self.cookies

    @property
    def cookies(self) -> httpx.Cookies:
        return self._cookies

    @cookies.setter
    def cookies(self, cookies: httpx._types.CookieTypes) -> None:
        self._cookies = _ResponseCookies(cookies)


def in_flight_per_task(concurrency: int, tasks: int) -> int:
    """Requests one of ``tasks`` tasks reading at once keeps in flight: an equal share
    of ``concurrency``, at least one (so a stream never plans more tasks than
    ``concurrency``: :attr:`HttpStream.max_concurrent_tasks`)."""
    return max(concurrency // max(tasks, 1), 1)


class HttpClient:
    """A client for one task, usable from any thread: use it as a context manager.

    ``tasks`` is how many tasks run at once in the sync (from the plan): the
    call budget and the concurrency are split across them.  ``concurrency``
    requests of this client are in flight at most; ``name`` names its loop's thread.
    """

    def __init__(self, settings: HttpSettings, *, tasks: int = 1, name: str = "client") -> None:
        self.settings = settings
        per_task = in_flight_per_task(settings.concurrency, tasks)
        self.concurrency = per_task
        self.gate = CallGate(settings.budgets, tasks=tasks, redis_url=settings.redis_url,
                             timeout_s=settings.timeout_s)
        #: Parents' pages first (:mod:`._slots`), so their children queue early.
        self._in_flight = Slots(per_task)
        self._loop = EventLoopThread(f"hw-http-{name}")
        self._http = _AsyncClient(
            base_url=settings.base_url, auth=settings.auth, headers=dict(settings.headers),
            timeout=settings.timeout_s, follow_redirects=True, verify=_tls_context(),
            # Every request the client sends (retries, redirects, an OAuth2 retry after
            # a 401 included) reserves budget right before it leaves, and settles it
            # when its answer (or its failure) comes back; with no budget, nothing to do.
            event_hooks=({"request": [self._reserve], "response": [self._settle]}
                         if self.gate.budgets else {}),
            limits=httpx.Limits(max_connections=per_task + 2,
                                max_keepalive_connections=per_task + 2))

    async def _reserve(self, request: httpx.Request) -> None:
        request.extensions[_RESERVATIONS] = await self.gate.reserve(str(request.url))

    async def _settle(self, response: httpx.Response) -> None:
        await self.gate.settle(response.request.extensions.pop(_RESERVATIONS, ()))

    async def _settle_failed(self, exc: Exception, sent: httpx.Request) -> None:
        request = sent
        if isinstance(exc, httpx.RequestError):
            try:
                request = exc.request  # a redirect's own request, say
            except RuntimeError:  # raised before a request existed: nothing was reserved
                return
        await self.gate.settle(request.extensions.pop(_RESERVATIONS, ()))

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections and stop the loop (safe to call more than once)."""
        if self._loop.loop.is_closed():
            return
        if not self._loop.in_loop():
            self._loop.run(self._http.aclose())
        self._loop.close()
        self.gate.release()  # after the loop: no call of this client is still starting

    def mask(self, text: str) -> str:
        """``text`` with every secret the authenticator carries replaced by ``****``."""
        # Asked each time: an OAuth2 access token appears only once it is fetched.
        for secret in self.settings.auth.secrets():
            if secret:
                text = text.replace(secret, "****")
        return text

    # -- the blocking face, for threads other than the loop's --------------------------

    def get(self, url: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """GET with budgets, retries and error sorting; returns a 2xx response."""
        return self._loop.run(self.aget(url, params))

    def pages(self, url: str, params: Mapping[str, Any], paginator: Paginator,
              record_path: str | None, *, exact_numbers: bool = False) -> Iterator[Page]:
        """Every page of one collection, in order, with the records at ``record_path``."""
        return self._loop.iterate(self.apages(url, params, paginator, record_path,
                                              exact_numbers=exact_numbers))

    def has_free_slot(self) -> bool:
        """Whether a request started now would go out at once (below ``concurrency``)."""
        return not self._in_flight.locked()

    def waiting(self) -> int:
        """Requests not deferred waiting for one of the ``concurrency`` slots (on the
        loop's thread); child calls queued behind them are not counted."""
        return self._in_flight.waiting_first()

    def defer(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Start ``coroutine`` (on the loop's thread) as a task whose requests wait
        behind every request not deferred: a child call behind its parent's pages
        (:meth:`._slots.Slots.defer`)."""
        return self._in_flight.defer(coroutine)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Start ``coroutine`` on this client's loop (for work built on :meth:`aget`)."""
        return self._loop.submit(coroutine)

    def iterate(self, generator: AsyncIterator[T]) -> Iterator[T]:
        """The items of an async generator run on this client's loop."""
        return self._loop.iterate(generator)

    # -- one request ------------------------------------------------------------------

    async def aget(self, url: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """:meth:`get` as a coroutine on this client's loop."""
        # httpx replaces a URL's own query with ``params`` even when they are empty
        # (a next-page URL carries its whole query).
        params = dict(params) if params else None
        # Built once and sent as is by every attempt: httpx would otherwise parse the
        # URL again for each send (a measurable share of a page's CPU).
        target = _request_url(self._http, url, params)
        request = self._http.build_request(
            "GET", target, params=params if isinstance(target, str) else None)
        request_url = str(request.url)
        # A plain loop, not tenacity's: building its retry state cost every call about
        # 7 % of the driver's CPU per call (py-spy), and most calls need no retry.
        attempt = 1
        while True:
            try:
                return await self._attempt(request, request_url)
            except _Retryable as exc:
                if attempt >= self.settings.max_attempts:
                    raise ConnectorError(
                        f"GET {self.mask(request_url)} failed after "
                        f"{self.settings.max_attempts} attempts; last: {exc.what}") from None
                await asyncio.sleep(self._wait_s(exc, attempt))
                attempt += 1

    def _wait_s(self, exc: _Retryable, failed: int) -> float:
        """Seconds before the next attempt, after ``failed`` attempts: what the server
        asked for (``Retry-After``), else a random wait below an exponential cap (the
        "full jitter" of tenacity's ``wait_random_exponential``)."""
        if exc.retry_after is not None:
            return exc.retry_after
        cap = min(self.settings.backoff_s * 2 ** (failed - 1), self.settings.max_backoff_s)
        return random.uniform(0, max(cap, 0.0))

    async def _attempt(self, request: httpx.Request, request_url: str) -> httpx.Response:
        async with self._in_flight:
            await self.gate.wait_pause(request_url)
            try:
                response = await self._http.send(request)
            # aiohttp's own waits (a connection from its pool) raise TimeoutError unmapped.
            except (httpx.RequestError, TimeoutError) as exc:
                await self._settle_failed(exc, request)
                if isinstance(exc, TimeoutError) or (
                        isinstance(exc, httpx.TimeoutException) and _timed_out(exc)):
                    raise _Retryable(f"{type(exc).__name__} after {self.settings.timeout_s:g} "
                                     "s (timeout_seconds)") from None
                if isinstance(exc, httpx.TransportError):
                    raise _Retryable(f"{_transport_failure(exc)}: "
                                     f"{self.mask(str(exc))}") from None
                raise
        pause = _rate_limit_pause(response)
        if pause:
            self.gate.pause_for(request_url, pause)
        return self._classify(response, request_url)

    def _classify(self, response: httpx.Response, request_url: str) -> httpx.Response:
        status = response.status_code
        if status < 400:
            return response
        where = f"GET {self.mask(request_url)}"
        if status in (401, 403):
            raise AuthenticationError(
                f"{where} answered HTTP {status}: the API refused the credentials in "
                "source.config.auth", field="source.config.auth")
        if status == 404:
            raise NotFoundError(f"{where} answered HTTP 404 (not found)")
        if status == 429 or status >= 500:
            retry_after = _retry_after(response)
            if retry_after is not None:
                if retry_after > MAX_RETRY_AFTER_S:
                    raise ConnectorError(f"{where} answered HTTP {status} with Retry-After "
                                         f"{retry_after:g} s, longer than we wait")
                self.gate.pause_for(request_url, retry_after)
            raise _Retryable(f"HTTP {status}", retry_after)
        detail = self.mask(response.text[:200]).strip()
        raise ConnectorError(f"{where} answered HTTP {status}: {detail}")

    # -- pages ------------------------------------------------------------------------

    async def apages(self, url: str, params: Mapping[str, Any], paginator: Paginator,
                     record_path: str | None, *, exact_numbers: bool = False,
                     ) -> AsyncIterator[Page]:
        """:meth:`pages` as an async generator on this client's loop.

        ``exact_numbers``: numbers keep their literal's text (:func:`decode_json`),
        for a stream with a decimal column."""
        loop = PaginationLoop(paginator, url, params)
        next_request: tuple[str, dict[str, Any]] | None = loop.first()
        while next_request is not None:
            page_url, page_params = next_request
            response = await self.aget(page_url, page_params)
            try:
                body = (decode_json(response.content, exact_numbers=exact_numbers)
                        if response.content else None)
            except ValueError as exc:
                raise ConnectorError(
                    f"GET {self.mask(str(response.url))} did not answer JSON "
                    f"(HTTP {response.status_code})") from exc
            records = select_path(body, record_path)
            if records is None:
                records = []
            elif isinstance(records, Mapping):
                records = [records]
            elif not isinstance(records, list):
                raise ConnectorError(
                    f"GET {self.mask(str(response.url))}: the record selector "
                    f"{record_path!r} points at a {type(records).__name__}, not a list")
            yield Page(records=records, response=response, body=body)
            try:
                next_request = loop.advance(response, body, records)
            except HeadwaterError as exc:
                raise ConnectorError(self.mask(exc.message)) from None


def decode_json(content: bytes, *, exact_numbers: bool = False) -> Any:
    """A page's JSON body, with orjson: about three times faster than ``json`` on API
    pages, where decoding took a fifth of the client's CPU per page.  A page with an
    integer orjson would read as a float (past 64 bits) goes to msgspec; ``json``
    takes what either refuses and ``json`` accepts (``NaN``).

    With ``exact_numbers`` a number with a fraction or an exponent keeps its
    literal's text (:mod:`headwater.json_numbers`): orjson and ``json`` make a
    float of ``12345678901234567890.123456789012345678``, which a decimal column
    then held rounded.  Integers are exact either way.
    """
    if exact_numbers:
        return json_numbers.decode(content)
    if _LONG_NUMBER.search(content) is not None:
        # orjson reads an integer outside [-2**63, 2**64) as a float, unsaid
        # (-9223372036854775809 landed as -9223372036854775808): msgspec keeps it.
        try:
            return _EXACT_INTS.decode(content)
        except msgspec.DecodeError:
            return json.loads(content)
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)


#: 19 digits in a row: maybe an integer orjson cannot hold (a search of the bytes,
#: which a page of ordinary numbers passes in microseconds).
_LONG_NUMBER = re.compile(rb"\d{19}")
#: msgspec's decoder: integers of any size exact, floats as orjson reads them.
_EXACT_INTS = msgspec.json.Decoder()


def _timed_out(exc: httpx.TimeoutException) -> bool:
    """Whether a timeout really is one: the transport maps some broken connections
    (a server that closed the socket) to ``ConnectTimeout`` as well."""
    cause = exc.__cause__
    return cause is None or isinstance(cause, TimeoutError)


def _transport_failure(exc: httpx.TransportError) -> str:
    """The name of what failed: aiohttp's own error when the transport mapped one."""
    cause = exc.__cause__
    return type(cause if isinstance(cause, Exception) else exc).__name__
