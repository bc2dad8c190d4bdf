"""An S3-compatible server (moto) for the Delta destination's S3 tests, and a proxy in front of it.

The proxy forwards every request to the server and records it with its
headers, so a test sees what delta-rs sends (``If-None-Match: *`` on a commit);
it can also act just before a request is forwarded (a rival writing the same
commit first) or drop the answer of one (a commit that landed, its answer lost).
"""

from __future__ import annotations

import http.server
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from headwater.destinations.delta._store import S3Access, TableFolder

ACCESS_KEY = "hw-delta-test-access-key"
SECRET_KEY = "hw-delta-test-secret-key-do-not-print"
REGION = "us-east-1"

#: A commit file of the log, as a request path names it: its version.
COMMIT_PATH = re.compile(r"/_delta_log/(\d{20})\.json$")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class S3Server:
    """moto's S3 server on 127.0.0.1."""

    endpoint: str

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def new_bucket(self) -> str:
        bucket = f"hw-delta-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def access(self, endpoint: str | None = None) -> S3Access:
        return S3Access(endpoint=endpoint or self.endpoint, region=REGION,
                        access_key=ACCESS_KEY, secret_key=SECRET_KEY, path_style=True)

    def table(self, bucket: str, key: str = "lake/t", endpoint: str | None = None,
              ) -> TableFolder:
        return TableFolder.on_s3(f"s3a://{bucket}/{key}", self.access(endpoint))

    def hadoop_settings(self, bucket: str) -> dict[str, str]:
        """S3A's per-bucket settings for ``bucket`` on this server (no other bucket changes)."""
        prefix = f"fs.s3a.bucket.{bucket}."
        return {f"{prefix}endpoint": self.endpoint, f"{prefix}access.key": ACCESS_KEY,
                f"{prefix}secret.key": SECRET_KEY, f"{prefix}path.style.access": "true",
                f"{prefix}endpoint.region": REGION,
                f"{prefix}connection.ssl.enabled": "false"}

    def read(self, bucket: str, key: str) -> bytes | None:
        try:
            return bytes(self.client().get_object(Bucket=bucket, Key=key)["Body"].read())
        except Exception as exc:
            if "NoSuchKey" in str(exc):
                return None
            raise


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


def moto_server() -> Iterator[S3Server]:
    """moto's S3 server in its own process on 127.0.0.1, stopped when done.

    Not in a thread of the test process: delta-rs 1.6.6's ``DeltaTable.history``
    holds the GIL while it waits for the store, so a server sharing the
    interpreter never answers it (the call times out after 180 s).
    """
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(endpoint + "/moto-api/", timeout=1)
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    raise RuntimeError("moto's server exited at start") from None
                time.sleep(0.1)
        else:
            raise RuntimeError("moto's server did not start within 30 s")
        yield S3Server(endpoint=endpoint)
    finally:
        server.terminate()
        server.wait(timeout=30)
