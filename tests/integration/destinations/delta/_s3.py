"""The Delta destination's S3 tests' helpers: tables on the run's S3 server, and a proxy.

The proxy forwards every request to the server and records it with its
headers, so a test sees what delta-rs sends (``If-None-Match: *`` on a commit);
it can also act just before a request is forwarded (a rival writing the same
commit first) or drop the answer of one (a commit that landed, its answer lost).
"""

from __future__ import annotations

import http.server
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from headwater.destinations.delta._store import S3Access, TableFolder
from tests.integration._s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server

#: A commit file of the log, as a request path names it: its version.
COMMIT_PATH = re.compile(r"/_delta_log/(\d{20})\.json$")


def new_bucket(server: S3Server) -> str:
    """A bucket of its own for one test."""
    return server.bucket(f"hw-delta-{uuid.uuid4().hex[:12]}")


def access(server: S3Server, endpoint: str | None = None) -> S3Access:
    """The server's access (through ``endpoint``, a proxy, when given)."""
    return S3Access(endpoint=endpoint or server.endpoint, region=REGION,
                    access_key=ACCESS_KEY, secret_key=SECRET_KEY, path_style=True)


def s3_table(server: S3Server, bucket: str, key: str = "lake/t",
          endpoint: str | None = None) -> TableFolder:
    return TableFolder.on_s3(f"s3a://{bucket}/{key}", access(server, endpoint))


def read(server: S3Server, bucket: str, key: str) -> bytes | None:
    """The object's bytes, or None when there is none."""
    client = server.client()
    try:
        return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except client.exceptions.NoSuchKey:
        return None


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Proxy:
    """Forwards to ``upstream``; ``before`` runs before a request is forwarded, ``after``
    after its answer came back (and returns a status to answer instead, or None)."""

    upstream: str
    requests: list[Recorded] = field(default_factory=list)
    before: Callable[[Recorded], None] | None = None
    after: Callable[[Recorded], int | None] | None = None
    endpoint: str = ""

    def puts_of_commits(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "PUT" and COMMIT_PATH.search(r.path)]


def _handler(proxy: Proxy) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            recorded = Recorded(self.command, self.path, dict(self.headers.items()))
            proxy.requests.append(recorded)
            if proxy.before is not None:
                proxy.before(recorded)
            headers = {k: v for k, v in recorded.headers.items()
                       if k.lower() not in ("host", "content-length", "transfer-encoding")}
            answer = httpx.request(self.command, proxy.upstream + self.path, headers=headers,
                                   content=body)
            recorded.status = answer.status_code
            status = proxy.after(recorded) if proxy.after is not None else None
            content = answer.content if status is None else b""
            self.send_response(status or answer.status_code)
            if status is None:
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection",
                                           "content-encoding"):
                        self.send_header(key, value)
            length = (answer.headers.get("content-length", "0")
                      if self.command == "HEAD" and status is None else str(len(content)))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(content)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


def start_proxy(upstream: str) -> tuple[Proxy, Callable[[], None]]:
    """A proxy to ``upstream`` on 127.0.0.1, and how to stop it."""
    proxy = Proxy(upstream)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    proxy.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return proxy, stop
