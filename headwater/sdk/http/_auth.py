"""Authenticators: how a request proves who is asking.

Each one is an :class:`httpx.Auth`, so the client applies it to every request
(and to every retry).  Each also lists its :meth:`Authenticator.secrets`, so
the client can mask them in any URL or message it builds: executors do not
share the driver's secret registry, so masking must travel with the object.

Authenticators are pickled to executors with the stream; whatever they cache
(an OAuth2 access token, its lock) is dropped when pickled and rebuilt there.

Example::

    BearerAuth("ghp_...")                      # Authorization: Bearer ghp_...
    ApiKeyAuth("X-Api-Key", "k", where="header")
    OAuth2Auth(token_url="https://api/oauth/token", client_id="id", client_secret="s")
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Generator
from typing import Any, Literal

import httpx

from headwater.errors import AuthenticationError

__all__ = ["ApiKeyAuth", "Authenticator", "BasicAuth", "BearerAuth", "NoAuth", "OAuth2Auth"]


class Authenticator(httpx.Auth):
    """An :class:`httpx.Auth` that also names the secret values it carries."""

    def secrets(self) -> list[str]:
        """Values that must never appear in a log line, an error or a URL."""
        return []


class NoAuth(Authenticator):
    """For public APIs."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        yield request


class BearerAuth(Authenticator):
    """``Authorization: Bearer <token>`` (GitHub, SurveyMonkey, most SaaS APIs)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request

    def secrets(self) -> list[str]:
        return [self.token]


class ApiKeyAuth(Authenticator):
    """An API key in a header (``X-Api-Key: k``) or a query parameter (``?api_key=k``)."""

    def __init__(self, name: str, value: str, where: Literal["header", "query"] = "header",
                 prefix: str = "") -> None:
        self.name = name
        self.value = value
        self.where = where
        self.prefix = prefix

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.where == "query":
            request.url = request.url.copy_merge_params({self.name: self.value})
        else:
            request.headers[self.name] = f"{self.prefix}{self.value}"
        yield request

    def secrets(self) -> list[str]:
        return [self.value]


class BasicAuth(Authenticator):
    """HTTP basic authentication (``Authorization: Basic base64(user:password)``)."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self.password = password

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = httpx.BasicAuth(
            self.username, self.password)._auth_header
        yield request

    def secrets(self) -> list[str]:
        # The encoded header hides the password too: mask both forms.
        encoded = httpx.BasicAuth(self.username, self.password)._auth_header.split(" ", 1)[1]
        return [self.password, encoded]


class OAuth2Auth(Authenticator):
    """OAuth2 with automatic token refresh: client credentials or a refresh token.

    With ``refresh_token`` set, tokens come from the ``refresh_token`` grant,
    otherwise from ``client_credentials``.  A token is fetched before the first
    request, again shortly before it expires (``expires_in``), and once more
    when the API answers 401 to a token that was not fresh (it may have been
    revoked early).  The token endpoint refusing the credentials is an
    :class:`~headwater.errors.AuthenticationError`.
    """

    #: Refresh this many seconds before ``expires_in`` says the token dies.
    EXPIRY_MARGIN_S = 30.0

    def __init__(self, *, token_url: str, client_id: str, client_secret: str,
                 refresh_token: str | None = None, scopes: list[str] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.token_url = token_url
        self.client_id = client_id
        self.client_secret = client_secret
        self.refresh_token = refresh_token
        self.scopes = list(scopes or [])
        self.timeout_s = timeout_s
        self._init_cache()

    def _init_cache(self) -> None:
        # Threads of one task share the token; the lock makes one of them fetch it.
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at = 0.0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for cached in ("_lock", "_token", "_expires_at"):
            state.pop(cached, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_cache()

    def secrets(self) -> list[str]:
        values = [self.client_secret, self.refresh_token, self._token]
        return [v for v in values if v]

    def access_token(self, *, force: bool = False) -> str:
        """A valid access token, fetched or refreshed when needed."""
        with self._lock:
            if force or self._token is None or time.monotonic() >= self._expires_at:
                self._fetch()
            assert self._token is not None
            return self._token

    def _fetch(self) -> None:
        data = {"client_id": self.client_id, "client_secret": self.client_secret}
        if self.refresh_token:
            data.update(grant_type="refresh_token", refresh_token=self.refresh_token)
        else:
            data["grant_type"] = "client_credentials"
        if self.scopes:
            data["scope"] = " ".join(self.scopes)
        try:
            response = httpx.post(self.token_url, data=data, timeout=self.timeout_s)
        except httpx.HTTPError as exc:
            raise AuthenticationError(
                f"could not reach the OAuth2 token endpoint {self.token_url}: "
                f"{type(exc).__name__}") from exc
        if response.status_code >= 400:
            raise AuthenticationError(
                f"the OAuth2 token endpoint {self.token_url} refused the client credentials "
                f"(HTTP {response.status_code})", field="auth")
        body = response.json()
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthenticationError(
                f"the OAuth2 token endpoint {self.token_url} answered without an access_token",
                field="auth")
        self._token = token
        if isinstance(body.get("refresh_token"), str):
            self.refresh_token = body["refresh_token"]  # rotating refresh tokens
        lifetime = float(body.get("expires_in") or 3600)
        self._expires_at = time.monotonic() + max(lifetime - self.EXPIRY_MARGIN_S, 1.0)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        fresh = self._token is None
        request.headers["Authorization"] = f"Bearer {self.access_token()}"
        response = yield request
        if response.status_code == 401 and not fresh:
            request.headers["Authorization"] = f"Bearer {self.access_token(force=True)}"
            yield request

    async def async_auth_flow(
            self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """:meth:`auth_flow` on an event loop: a token fetch (a blocking POST) runs on a
        worker thread, so the loop's other requests go on meanwhile."""
        fresh = self._token is None
        token = self._valid_token() or await asyncio.to_thread(self.access_token)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401 and not fresh:
            token = await asyncio.to_thread(self.access_token, force=True)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    def _valid_token(self) -> str | None:
        """The cached token while it is not due for a refresh (no lock: a read)."""
        token = self._token
        return token if token is not None and time.monotonic() < self._expires_at else None
