"""A recording proxy in front of the S3 server, in a process of its own.

It forwards every request to the server and records it with its headers, so a
test sees what delta-rs sends (``If-None-Match: *`` on a commit), and it can be
told (through ``/__proxy__/...`` requests) to bend one request:

* ``rival``: just before it forwards the first put of a key ending in
  ``suffix``, put ``body`` there itself (another writer's commit landing first);
* ``lose``: answer ``500`` to the first put of a log commit the server accepted
  (the commit is durable, the committer hears of an error);
* ``conditional``: from now on ``ignore`` (drop ``If-None-Match`` before
  forwarding: a store that ignores the header) or ``refuse`` (answer ``501
  NotImplemented`` to a put that carries it: a store without conditional writes).

A process, not a thread of the test process: delta-rs 1.6.6's
``DeltaTable.history`` holds the GIL while it waits for the store, so a proxy
thread in the same interpreter would never answer it.

Run: ``python -m tests.integration.destinations.delta._s3_proxy UPSTREAM PORT``.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

#: A commit file of the log, as a request path names it: its version.
COMMIT_PATH = re.compile(r"/_delta_log/(\d{20})\.json$")
CONTROL = "/__proxy__/"
_SKIPPED_HEADERS = ("host", "content-length", "transfer-encoding", "connection",
                    "content-encoding")


class _State:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.rival: dict[str, str] | None = None
        self.lose = False
        self.conditional: str | None = None


def _handler(state: _State) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self, status: int, content: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() not in _SKIPPED_HEADERS:
                    self.send_header(key, value)
            length = (headers.get("content-length", "0") if self.command == "HEAD"
                      else str(len(content)))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(content)

        def _control(self, body: bytes) -> None:
            order = self.path[len(CONTROL):]
            with state.lock:
                if order == "requests":
                    content = json.dumps(state.requests).encode()
                elif order == "rival":
                    state.rival = json.loads(body)
                    content = b"{}"
                elif order == "conditional":
                    state.conditional = json.loads(body)["mode"]
                    content = b"{}"
                elif order == "lose":
                    state.lose = True
                    content = b"{}"
                else:
                    self._answer(404, b"", {})
                    return
            self._answer(200, content, {"content-type": "application/json"})

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path.startswith(CONTROL):
                self._control(body)
                return
            recorded: dict[str, Any] = {"method": self.command, "path": self.path,
                                        "headers": dict(self.headers.items()), "status": 0,
                                        "answered": 0}
            with state.lock:
                state.requests.append(recorded)
                rival = state.rival
                if (rival is not None and self.command == "PUT"
                        and self.path.split("?")[0].endswith(rival["suffix"])):
                    state.rival = None
                else:
                    rival = None
            if rival is not None:
                httpx.put(state.upstream + self.path.split("?")[0],
                          content=rival["body"].encode())
            headers = {k: v for k, v in recorded["headers"].items()
                       if k.lower() not in _SKIPPED_HEADERS}
            conditional = "if-none-match" in {k.lower() for k in headers}
            if conditional and state.conditional == "refuse" and self.command == "PUT":
                recorded["answered"] = 501
                self._answer(501, b"<Error><Code>NotImplemented</Code><Message>A header you "
                             b"provided implies functionality that is not implemented</Message>"
                             b"</Error>", {"content-type": "application/xml"})
                return
            if conditional and state.conditional == "ignore":
                headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
            answer = httpx.request(self.command, state.upstream + self.path, headers=headers,
                                   content=body)
            recorded["status"] = recorded["answered"] = answer.status_code
            with state.lock:
                lose = (state.lose and self.command == "PUT" and answer.is_success
                        and COMMIT_PATH.search(self.path.split("?")[0]) is not None)
                if lose:
                    state.lose = False
            if lose:
                recorded["answered"] = 500
                self._answer(500, b"", {})
                return
            self._answer(answer.status_code, answer.content, dict(answer.headers.items()))

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


def serve(upstream: str, port: int) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(_State(upstream)))
    server.serve_forever()


@dataclass(frozen=True)
class Proxy:
    """The test's handle on the proxy process."""

    endpoint: str

    def rival(self, suffix: str, body: str) -> None:
        httpx.post(f"{self.endpoint}{CONTROL}rival", json={"suffix": suffix, "body": body})

    def conditional_puts(self, mode: str) -> None:
        """``ignore`` or ``refuse`` ``If-None-Match`` from now on (see the module)."""
        httpx.post(f"{self.endpoint}{CONTROL}conditional", json={"mode": mode})

    def lose_next_commit_answer(self) -> None:
        httpx.post(f"{self.endpoint}{CONTROL}lose")

    def requests(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.endpoint}{CONTROL}requests").json())

    def puts_of_commits(self) -> list[dict[str, Any]]:
        return [r for r in self.requests()
                if r["method"] == "PUT" and COMMIT_PATH.search(r["path"].split("?")[0])]


@contextlib.contextmanager
def proxy_process(upstream: str, port: int) -> Iterator[Proxy]:
    """Run the proxy to ``upstream`` on ``port`` for the ``with`` block."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.destinations.delta._s3_proxy", upstream,
         str(port)], stdin=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            if process.poll() is not None:
                raise RuntimeError(f"the S3 proxy exited with {process.returncode}")
            try:
                httpx.get(f"{endpoint}{CONTROL}requests", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the S3 proxy did not answer in 20 s")
        yield Proxy(endpoint)
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
