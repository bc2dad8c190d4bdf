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
"""

from __future__ import annotations

import email.utils
import functools
import ssl
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import tenacity

from headwater.errors import AuthenticationError, ConnectorError, HeadwaterError
from headwater.sdk.http._auth import Authenticator, NoAuth
from headwater.sdk.http._paginators import PaginationLoop, Paginator, select_path
from headwater.sdk.http._rate_limit import CallBudget, CallGate

__all__ = ["HttpClient", "HttpSettings", "NotFoundError", "Page"]

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


class HttpClient:
    """A thread-safe client for one task: use it as a context manager.

    ``tasks`` is how many tasks run at once in the sync (from the plan): the
    call budget and the concurrency are split across them.
    """

    def __init__(self, settings: HttpSettings, *, tasks: int = 1) -> None:
        self.settings = settings
        per_task = max(settings.concurrency // max(tasks, 1), 1)
        self.concurrency = per_task
        self.gate = CallGate(settings.budgets, tasks=tasks, concurrency=per_task,
                             redis_url=settings.redis_url, timeout_s=settings.timeout_s)
        self._http = httpx.Client(
            base_url=settings.base_url, auth=settings.auth, headers=dict(settings.headers),
            timeout=settings.timeout_s, follow_redirects=True, verify=_tls_context(),
            # Every request the client sends (retries, redirects, an OAuth2 retry after
            # a 401 included) reserves budget right before it leaves, and settles it
            # when its answer (or its failure) comes back.
            event_hooks={"request": [self._reserve], "response": [self._settle]},
            limits=httpx.Limits(max_connections=per_task + 2,
                                max_keepalive_connections=per_task + 2))

    def _reserve(self, request: httpx.Request) -> None:
        request.extensions[_RESERVATIONS] = self.gate.reserve(str(request.url))

    def _settle(self, response: httpx.Response) -> None:
        self.gate.settle(response.request.extensions.pop(_RESERVATIONS, ()))

    def _settle_failed(self, exc: httpx.RequestError) -> None:
        try:
            request = exc.request
        except RuntimeError:  # raised before a request existed: nothing was reserved
            return
        self.gate.settle(request.extensions.pop(_RESERVATIONS, ()))

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def mask(self, text: str) -> str:
        """``text`` with every secret the authenticator carries replaced by ``****``."""
        # Asked each time: an OAuth2 access token appears only once it is fetched.
        for secret in self.settings.auth.secrets():
            if secret:
                text = text.replace(secret, "****")
        return text

    # -- one request ------------------------------------------------------------------

    def get(self, url: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """GET with budgets, retries and error sorting; returns a 2xx response."""
        # httpx replaces a URL's own query with ``params`` even when they are empty
        # (a next-page URL carries its whole query).
        params = dict(params) if params else None
        # Built once and sent as is by every attempt: httpx would otherwise parse the
        # URL again for each send (a measurable share of a page's CPU).
        request = self._http.build_request("GET", url, params=params)
        request_url = str(request.url)
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.settings.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(_Retryable),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(request, request_url)
        except _Retryable as exc:
            raise ConnectorError(
                f"GET {self.mask(request_url)} failed after {self.settings.max_attempts} "
                f"attempts; last: {exc.what}") from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable) and exc.retry_after is not None:
            return exc.retry_after
        backoff = tenacity.wait_random_exponential(multiplier=self.settings.backoff_s,
                                                   max=self.settings.max_backoff_s)
        return float(backoff(state))

    def _attempt(self, request: httpx.Request, request_url: str) -> httpx.Response:
        with self.gate.call(request_url):
            try:
                response = self._http.send(request)
            except httpx.RequestError as exc:
                self._settle_failed(exc)
                if isinstance(exc, httpx.TimeoutException):
                    raise _Retryable(f"{type(exc).__name__} after {self.settings.timeout_s:g} "
                                     "s (timeout_seconds)") from None
                if isinstance(exc, httpx.TransportError):
                    raise _Retryable(f"{type(exc).__name__}: {self.mask(str(exc))}") from None
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

    def pages(self, url: str, params: Mapping[str, Any], paginator: Paginator,
              record_path: str | None) -> Iterator[Page]:
        """Every page of one collection, in order, with the records at ``record_path``."""
        loop = PaginationLoop(paginator, url, params)
        next_request: tuple[str, dict[str, Any]] | None = loop.first()
        while next_request is not None:
            page_url, page_params = next_request
            response = self.get(page_url, page_params)
            try:
                body = response.json() if response.content else None
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
