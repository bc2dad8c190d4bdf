"""A real HTTP API on 127.0.0.1 that behaves like SurveyMonkey and GitHub, for tests and bench.

It is a threaded ``http.server`` (one thread per connection), so Spark executors
and their threads call it exactly as they would call a SaaS API.  It:

* requires ``Authorization: Bearer <token>`` (401 otherwise);
* serves ``/v3/surveys`` (epoch ``date_modified`` window filters, ``links.next``
  pagination), ``/v3/surveys/{id}/responses`` (404 for an unknown survey), and
  ``/repos/acme/widgets/issues`` (ISO ``since``/``until``, ``Link`` header);
* enforces its own rate limit (``limit`` calls per moving ``period_s``) and
  counts every call, so a test can assert a client's budget held;
* injects faults on demand (:class:`Fault`: 429 with ``Retry-After``, 500, a
  response slower than the client's timeout) and can die after N calls.

Windows are half-open ``[start, end)`` on both collections.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

HOST = "127.0.0.1"
TOKEN = "s3cret-token-42"
CLIENT_ID = "headwater"
CLIENT_SECRET = "client-s3cret"
BASE_EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z


def iso(epoch: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=epoch)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> int:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(moment.timestamp())


@dataclass
class Fault:
    """Answer the next ``times`` calls whose path matches ``pattern`` with a fault."""

    pattern: str
    status: int = 500  # 429, 500, ... or 0 for "slow": sleep ``delay_s`` then answer
    times: int = 1
    retry_after: float | None = None
    delay_s: float = 0.0


@dataclass
class ApiData:
    """What the API holds; tests change it between syncs."""

    surveys: dict[int, dict[str, Any]] = field(default_factory=dict)
    responses: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: int = 0  # bench: events[i] has ts = BASE_EPOCH + i

    @classmethod
    def sample(cls, surveys: int = 40, issues: int = 60) -> ApiData:
        data = cls()
        for i in range(1, surveys + 1):
            data.surveys[i] = {"id": i, "title": f"survey {i}",
                               "date_modified": BASE_EPOCH + i * 5 * 3600}
            data.responses[i] = [{"id": i * 1000 + r, "survey_id": i, "answer": f"a{r}"}
                                 for r in range(i % 7)]
        for n in range(1, issues + 1):
            data.issues[n] = {"id": 10_000 + n, "number": n, "title": f"issue {n}",
                              "updated_at": iso(BASE_EPOCH + n * 4 * 3600)}
        return data


class ApiServer:
    """The server, its data, its faults and its call log; see the module docstring."""

    def __init__(self, data: ApiData, *, limit: int = 1000, period_s: float = 1.0,
                 latency_s: float = 0.0, port: int = 0) -> None:
        self.data = data
        self.limit = limit
        self.period_s = period_s
        self.latency_s = latency_s
        self.faults: list[Fault] = []
        self.die_after: int | None = None
        self.calls: list[tuple[float, str, int]] = []  # (time, path, status)
        self.rate_limited = 0
        self.token_requests = 0
        #: Calls being answered now, and the most there ever were at once.
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._recent: list[float] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> ApiServer:
        handler = _handler_for(self)
        server = _Server((HOST, self.port), handler)
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True, name=f"api-{self.port}")
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            server.close_connections()

    def _die(self) -> None:
        threading.Thread(target=self.stop, daemon=True).start()

    # -- what tests read --------------------------------------------------------------

    def max_calls_in_window(self, period_s: float | None = None,
                            path_pattern: str | None = None) -> int:
        """The most calls the server saw in any moving window of ``period_s``."""
        period = self.period_s if period_s is None else period_s
        with self._lock:
            times = sorted(t for t, path, _ in self.calls
                           if path_pattern is None or re.search(path_pattern, path))
        best = 0
        for i, start in enumerate(times):
            best = max(best, bisect_left(times, start + period) - i)
        return best

    @property
    def connections(self) -> int:
        """Connections the server accepted (clients that keep them alive open few)."""
        return self._server.connections if self._server is not None else 0

    def statuses(self) -> list[int]:
        with self._lock:
            return [status for _, _, status in self.calls]

    # -- serving ----------------------------------------------------------------------

    def _admit(self, path: str, now: float) -> tuple[int, dict[str, str], Any] | None:
        """Count the call; return a fault or rate-limit answer, or None to serve it."""
        with self._lock:
            calls_so_far = len(self.calls)
            if self.die_after is not None and calls_so_far >= self.die_after:
                self.die_after = None
                self._die()
                return (-1, {}, None)
            self._recent = [t for t in self._recent if t > now - self.period_s]
            if len(self._recent) >= self.limit:
                self.rate_limited += 1
                self.calls.append((now, path, 429))
                return (429, {"Retry-After": str(self.period_s)}, {"error": "rate limited"})
            self._recent.append(now)
            fault = next((f for f in self.faults if f.times > 0 and re.search(f.pattern, path)),
                         None)
            if fault is not None:
                fault.times -= 1
        if fault is not None and fault.status == 0:
            time.sleep(fault.delay_s)
            fault = None
        if fault is not None:
            with self._lock:
                self.calls.append((now, path, fault.status))
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after else {}
            return (fault.status, headers, {"error": "injected fault"})
        return None

    def answer(self, path: str, query: dict[str, list[str]],
               headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._answer(path, query, headers)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, path: str, query: dict[str, list[str]],
                headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        arrived = time.monotonic()  # calls are logged (and limited) by arrival time
        admitted = self._admit(path, arrived)
        if admitted is not None:
            return admitted
        if self.latency_s:
            time.sleep(self.latency_s)
        status, extra, body = self._route(path, query, headers)
        with self._lock:
            self.calls.append((arrived, path, status))
        return status, extra, body

    def _route(self, path: str, query: dict[str, list[str]],
               headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, {}, {"error": "bad token"}

        def arg(name: str, default: str | None = None) -> str | None:
            return query.get(name, [default])[0]

        if path == "/v3/surveys":
            low = int(arg("start_modified_at") or 0)
            high = int(arg("end_modified_at") or 2**62)
            rows = sorted((s for s in self.data.surveys.values()
                           if low <= s["date_modified"] < high), key=lambda s: s["id"])
            return self._enveloped(path, query, rows)
        match = re.fullmatch(r"/v3/surveys/(\d+)/responses", path)
        if match:
            survey = int(match.group(1))
            if survey not in self.data.surveys:
                return 404, {}, {"error": "no such survey"}
            return self._enveloped(path, query, self.data.responses.get(survey, []))
        if path == "/repos/acme/widgets/issues":
            low = parse_iso(arg("since")) if arg("since") else 0
            high = parse_iso(arg("until")) if arg("until") else 2**62
            rows = sorted((i for i in self.data.issues.values()
                           if low <= parse_iso(i["updated_at"]) < high),
                          key=lambda i: i["number"])
            return self._linked(path, query, rows)
        if path == "/events":
            low = int(arg("from") or 0) - BASE_EPOCH
            high = int(arg("to") or 0) - BASE_EPOCH
            return self._enveloped(path, query, _EventRows(self.data.events, low, high))
        return 404, {}, {"error": f"no route {path}"}

    def _page(self, query: dict[str, list[str]], rows: Any) -> tuple[list[Any], bool, int, int]:
        page = int(query.get("page", ["1"])[0])
        per_page = int(query.get("per_page", ["50"])[0])
        first = (page - 1) * per_page
        chunk = list(rows[first:first + per_page])
        return chunk, first + per_page < len(rows), page, per_page

    def _next_url(self, path: str, query: dict[str, list[str]], page: int) -> str:
        flat = {k: v[0] for k, v in query.items()}
        return f"{self.url}{path}?{urlencode({**flat, 'page': page + 1})}"

    def _enveloped(self, path: str, query: dict[str, list[str]],
                   rows: Any) -> tuple[int, dict[str, str], Any]:
        chunk, more, page, _ = self._page(query, rows)
        links = {"next": self._next_url(path, query, page)} if more else {}
        return 200, {}, {"data": chunk, "links": links}

    def _linked(self, path: str, query: dict[str, list[str]],
                rows: Any) -> tuple[int, dict[str, str], Any]:
        chunk, more, page, _ = self._page(query, rows)
        headers = {"Link": f'<{self._next_url(path, query, page)}>; rel="next"'} if more else {}
        return 200, headers, chunk


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many executor threads connect at once
    allow_reuse_address = True  # a restarted server takes its old port back

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self.connections = 0  # accepted since the start

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
            self.connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Drop every open connection, as a server that dies does: clients keep
        connections alive across requests, and would otherwise still be served."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _EventRows:
    """The bench collection: event ``i`` has ``ts = BASE_EPOCH + i``; sliced lazily."""

    def __init__(self, total: int, low: int, high: int) -> None:
        self.low = max(low, 0)
        self.high = min(max(high, self.low), total)

    def __len__(self) -> int:
        return self.high - self.low

    def __getitem__(self, item: slice) -> list[dict[str, Any]]:
        start, stop, _ = item.indices(len(self))
        return [{"id": i, "ts": BASE_EPOCH + i, "value": i % 97}
                for i in range(self.low + start, self.low + stop)]


def _handler_for(api: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in two writes; with Nagle on, the body waits for the
        # client's delayed ACK of the headers (about 40 ms per call on keep-alive
        # connections), which a real API server does not add.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, body = api.answer(parts.path, parse_qs(parts.query), headers)
            if status == -1:  # the server dies: drop the connection without answering
                self.close_connection = True
                return
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            # The client may have given up already (a timeout we injected).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(payload)

        def do_POST(self) -> None:
            """The OAuth2 token endpoint: client credentials in, the API's token out."""
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            good = (form.get("client_id") == [CLIENT_ID]
                    and form.get("client_secret") == [CLIENT_SECRET])
            api.token_requests += 1
            body = {"access_token": TOKEN, "expires_in": 3600} if good else {"error": "no"}
            payload = json.dumps(body).encode()
            self.send_response(200 if good else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(data: ApiData | None = None, **options: Any) -> Iterator[ApiServer]:
    """Start a server for the ``with`` block and stop it afterwards."""
    server = ApiServer(data or ApiData.sample(), **options).start()
    try:
        yield server
    finally:
        server.stop()
