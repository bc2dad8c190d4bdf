"""One S3-compatible server on 127.0.0.1 for a whole test run: moto's ``moto_server``.

It runs in a process of its own, not as a thread of the test process.  Spark's
executors (other JVMs) and Python workers reach it over HTTP while the test
process's own Python is busy as the driver, and a server thread would wait for
that process's GIL: 150 PUTs and GETs of 1 MiB from another process took 3.2 s
from ``moto_server`` and 48 s from ``ThreadedMotoServer`` while the test
process's main thread ran Python (4.5 s against 2.9 s when it idled).

moto (5.2.5 here) honours ``If-None-Match: *`` on PutObject (PreconditionFailed
on the second put), which is what a commit on S3 relies on; its SQS serves the
notification-discovery tests from the same process.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.engine._s3a import s3a_conf

HOST = "127.0.0.1"
REGION = "us-east-1"
ACCESS_KEY = "hw-test-access-key"
SECRET_KEY = "hw-test-secret-key-do-not-print"
MOTO_SERVER = str(Path(sys.executable).with_name("moto_server"))
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ServerTls:
    """The PEM files of a server speaking HTTPS: its certificate and key, and the CA
    that signed the certificate (what a client must trust)."""

    certificate: Path
    key: Path
    authority: Path


@dataclass(frozen=True)
class S3Server:
    """Where the server listens, and the same keys for every client of it; over HTTPS,
    the CA its certificate is signed by (``authority``)."""

    endpoint: str
    authority: Path | None = None

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                            verify=str(self.authority) if self.authority else None)

    def source_config(self, bucket: str, **extra: Any) -> dict[str, Any]:
        """An object-storage source's settings for ``s3://bucket``."""
        return {"url": f"s3://{bucket}", "endpoint_url": self.endpoint, "region": REGION,
                "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY, **extra}

    def spark_conf(self) -> dict[str, str]:
        """The ``spark.hadoop.fs.s3a.*`` settings that point Spark's ``s3a://`` here."""
        return s3a_conf(self.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                        path_style=True, region=REGION)

    def bucket(self, name: str) -> str:
        """Create ``name`` (once; moto answers a second create as S3 does, so it is
        tolerated) and return it."""
        client = self.client()
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=name)
        return name


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _wait_until_up(endpoint: str, process: subprocess.Popen[bytes],
                   context: ssl.SSLContext | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2, context=context):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"moto_server did not answer on {endpoint} in {START_TIMEOUT_S:.0f} s")


@contextlib.contextmanager
def moto_server(log_path: Path | None = None, env: dict[str, str] | None = None,
                tls: ServerTls | None = None) -> Iterator[S3Server]:
    """Run ``moto_server`` on a free loopback port for the ``with`` block (with ``env``
    added to its environment: moto's settings, e.g. ``INITIAL_NO_AUTH_ACTION_COUNT``),
    over HTTPS with ``tls``'s certificate when given."""
    port = free_port()
    endpoint = f"{'https' if tls else 'http'}://{HOST}:{port}"
    command = [MOTO_SERVER, "-H", HOST, "-p", str(port)]
    context = None
    if tls is not None:
        command += ["-c", str(tls.certificate), "-k", str(tls.key)]
        context = ssl.create_default_context(cafile=str(tls.authority))
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(log_path.open("wb")) if log_path else subprocess.DEVNULL
        process = subprocess.Popen(command, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, **(env or {})})
        try:
            _wait_until_up(endpoint, process, context)
            yield S3Server(endpoint=endpoint, authority=tls.authority if tls else None)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
