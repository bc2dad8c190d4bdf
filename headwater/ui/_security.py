"""The page's safety rules, as aiohttp middlewares.

* **Where it listens.** Loopback (127.0.0.1, ::1, localhost) by default; any
  other address needs a token, or the server refuses to start
  (:func:`check_bind`).
* **Token.** With a token, every ``/api`` and ``/metrics`` request carries
  ``Authorization: Bearer TOKEN`` (401 otherwise); compared in constant time.
  The static page itself is served without it (it holds no data: it asks for
  the token and sends it with each API call).
* **DNS rebinding.** Without a token (a loopback server), a request whose
  ``Host`` is not a loopback name is refused (403): a web page at
  ``evil.example`` whose name an attacker re-points at 127.0.0.1 would otherwise
  be same-origin with this server in the browser's eyes, and could read the
  API and press its buttons.  With a token the name does not matter: the
  attacker's page does not have the token.
* **Cross-site requests.** Every POST needs the header ``X-Headwater-Request: 1``
  *and* an ``Origin`` equal to the server's own (or, with no ``Origin``,
  ``Sec-Fetch-Site: same-origin``/``none``; neither header, as from ``curl``,
  is no browser and passes): 403 otherwise.  A cross-site HTML
  form cannot set a custom header, and a cross-site ``fetch`` that sets one
  sends its own ``Origin`` (and a CORS preflight this server never answers).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from headwater.errors import ConfigError
from headwater.ui import TOKEN_ENV

#: The header every POST must carry (a value a form cannot send).
REQUEST_HEADER = "X-Headwater-Request"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(f"listening on {host} (beyond this machine) needs a token: pass "
                          f"--token or set {TOKEN_ENV}", field="--host")


def host_is_loopback(host_header: str) -> bool:
    """Whether a ``Host`` header (``name[:port]``, ``[v6]:port``) names this machine."""
    host = host_header.strip()
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return is_loopback(host.lower().rstrip("."))


def host_middleware(token: str | None) -> Middleware:
    """403 for a request naming another host than this machine, on a server without a token."""

    @web.middleware
    async def check_host(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not token and not host_is_loopback(request.headers.get("Host", "")):
            return error(403, "refused: the Host header does not name this machine "
                              "(open the page at http://127.0.0.1:PORT/ or "
                              "http://localhost:PORT/; a server listening beyond this "
                              "machine needs --token)")
        return await handler(request)

    return check_host


def _protected(path: str) -> bool:
    return path.startswith("/api/") or path == "/api" or path == "/metrics"


def error(status: int, message: str) -> web.Response:
    """The API's error answer: ``{"error": message}``."""
    return web.json_response({"error": message}, status=status)


def token_middleware(token: str | None) -> Middleware:
    """401 for an ``/api`` or ``/metrics`` request without the bearer token (when one is set)."""
    expected = f"Bearer {token}".encode() if token else None

    @web.middleware
    async def check_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        if expected is not None and _protected(request.path):
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return error(401, "this server needs its token: send the header "
                                  "'Authorization: Bearer TOKEN'")
        return await handler(request)

    return check_token


def same_origin(request: web.Request) -> bool:
    """Whether a request comes from a page of this server (see the module docstring)."""
    origin = request.headers.get("Origin")
    if origin is not None:
        own = f"{request.scheme}://{request.host}"
        return origin == own
    site = request.headers.get("Sec-Fetch-Site")
    # Neither header: not a browser (curl, a script); the custom header and the
    # token still apply.  Browsers send at least one of them on every POST.
    return site is None or site in ("same-origin", "none")


@web.middleware
async def csrf_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """403 for a POST without the custom header or from another origin."""
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        if request.headers.get(REQUEST_HEADER) != "1":
            return error(403, f"refused: an action needs the header '{REQUEST_HEADER}: 1' "
                              "(cross-site requests cannot send it)")
        if not same_origin(request):
            return error(403, "refused: a cross-site request (its Origin is not this server)")
    return await handler(request)
