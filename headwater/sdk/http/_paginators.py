"""Paginators: from one page's response to the request for the next page.

A paginator is a tiny class with one method to write, :meth:`Paginator.next_token`,
which reads the next page's token (a page number, an offset, a cursor, a URL)
from a response, or ``None`` when this was the last page.  The base class
turns tokens into requests and refuses a token that repeats, which would
otherwise page forever (an API that ignores the page parameter does that).

Paginators hold configuration only and are pickled to executors.

Example::

    paginator = CursorPaginator(cursor_path="meta.next_cursor", cursor_param="cursor")
    paginator.next_token(response, body, records)     # 'c2' -> ?cursor=c2
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from headwater.errors import ConnectorError

__all__ = [
    "CursorPaginator",
    "LinkHeaderPaginator",
    "NextUrlPaginator",
    "NoPagination",
    "OffsetPaginator",
    "PageNumberPaginator",
    "PaginationLoop",
    "Paginator",
    "select_path",
]


def select_path(body: Any, path: str | None) -> Any:
    """The value at a dotted ``path`` in a JSON body (``None`` when any step is missing).

    ``select_path({"links": {"next": "u"}}, "links.next") == "u"``; an empty path
    is the body itself.
    """
    value = body
    for step in (path or "").split("."):
        if not step:
            continue
        if isinstance(value, Mapping):
            value = value.get(step)
        elif isinstance(value, list) and step.lstrip("-").isdigit():
            index = int(step)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            return None
    return value


class Paginator(ABC):
    """Reads the next page token from a response; the base turns it into a request."""

    def first_params(self) -> dict[str, Any]:
        """Query parameters of the first page (a page size, ``page=1``...)."""
        return {}

    @abstractmethod
    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        """The token of the next page, or ``None`` after the last page.

        ``token`` is the token that fetched this page (``None`` for the first).
        """

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        """The URL and query parameters that fetch the page ``token`` names."""
        return url, dict(params)


@dataclass(frozen=True)
class NoPagination(Paginator):
    """One request returns everything."""

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        return None


@dataclass(frozen=True)
class PageNumberPaginator(Paginator):
    """``?page=1&per_page=100``; a page shorter than ``page_size`` is the last."""

    page_param: str = "page"
    size_param: str | None = "per_page"
    page_size: int = 100
    start_page: int = 1

    def first_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {self.page_param: self.start_page}
        if self.size_param:
            params[self.size_param] = self.page_size
        return params

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        if len(records) < self.page_size:
            return None
        return (self.start_page if token is None else int(token)) + 1

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        return url, {**params, self.page_param: token}


@dataclass(frozen=True)
class OffsetPaginator(Paginator):
    """``?offset=0&limit=100``; a page shorter than ``page_size`` is the last."""

    offset_param: str = "offset"
    limit_param: str = "limit"
    page_size: int = 100

    def first_params(self) -> dict[str, Any]:
        return {self.offset_param: 0, self.limit_param: self.page_size}

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        if len(records) < self.page_size:
            return None
        return (0 if token is None else int(token)) + len(records)

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        return url, {**params, self.offset_param: token}


@dataclass(frozen=True)
class CursorPaginator(Paginator):
    """A next-page token in the body (``meta.next_cursor``) sent back as ``?cursor=``."""

    cursor_path: str = "next_cursor"
    cursor_param: str = "cursor"
    size_param: str | None = None
    page_size: int = 100

    def first_params(self) -> dict[str, Any]:
        return {self.size_param: self.page_size} if self.size_param else {}

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        value = select_path(body, self.cursor_path)
        return value if value not in (None, "") else None

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        return url, {**params, self.cursor_param: token}


@dataclass(frozen=True)
class NextUrlPaginator(Paginator):
    """The next page's full URL in the body (``links.next``); it carries its own query."""

    next_url_path: str = "next"

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        value = select_path(body, self.next_url_path)
        return str(response.url.join(value)) if value else None

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        return str(token), {}


@dataclass(frozen=True)
class LinkHeaderPaginator(Paginator):
    """RFC 8288 ``Link: <https://...&page=2>; rel="next"`` (GitHub)."""

    rel: str = "next"

    def next_token(self, response: httpx.Response, body: Any,
                   records: list[Any], token: Any) -> Any | None:
        link = response.links.get(self.rel)
        url = link.get("url") if link else None
        return str(response.url.join(url)) if url else None

    def next_request(self, token: Any, url: str, params: Mapping[str, Any]
                     ) -> tuple[str, dict[str, Any]]:
        return str(token), {}


class PaginationLoop:
    """Walks one collection's pages with a paginator; refuses repeating tokens."""

    #: A collection with more pages than this is assumed to page forever.
    MAX_PAGES = 1_000_000

    def __init__(self, paginator: Paginator, url: str, params: Mapping[str, Any]) -> None:
        self.paginator = paginator
        self.base_url = url
        self.base_params = {**params, **paginator.first_params()}
        self.token: Any = None
        self._seen: set[str] = set()
        self.pages = 0

    def first(self) -> tuple[str, dict[str, Any]]:
        return self.base_url, dict(self.base_params)

    def advance(self, response: httpx.Response, body: Any,
                records: list[Any]) -> tuple[str, dict[str, Any]] | None:
        """The next request, or ``None`` when the collection is complete."""
        self.pages += 1
        token = self.paginator.next_token(response, body, records, self.token)
        if token is None:
            return None
        key = repr(token)
        if key in self._seen or self.pages >= self.MAX_PAGES:
            raise ConnectorError(
                f"pagination did not advance: {type(self.paginator).__name__} returned the "
                f"token {token!r} again after {self.pages} pages; the API ignores the "
                "paginator's parameter or the paginator is misconfigured")
        self._seen.add(key)
        self.token = token
        return self.paginator.next_request(token, self.base_url, self.base_params)
