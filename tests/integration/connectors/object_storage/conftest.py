"""A real S3-compatible server (moto in server mode) on 127.0.0.1, for the whole session."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

ACCESS_KEY = "hw-test-access-key"
SECRET_KEY = "hw-test-secret-key-do-not-print"


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def source_config(self, bucket: str, **extra: Any) -> dict[str, Any]:
        return {"url": f"s3://{bucket}", "endpoint_url": self.endpoint, "region": "us-east-1",
                "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY, **extra}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server in a thread of the test process; subprocesses reach it over HTTP."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3Server(endpoint=f"http://127.0.0.1:{port}")
    finally:
        server.stop()
