"""The Delta destination's S3 tests' helpers: tables and buckets on the run's S3 server."""

from __future__ import annotations

import uuid

from headwater.destinations._table_files._store import S3Access, TableFolder
from tests.integration._s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server


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


def hadoop_settings(server: S3Server, bucket: str, endpoint: str | None = None,
                    ) -> dict[str, str]:
    """S3A's per-bucket settings reaching ``bucket`` on the server (or through ``endpoint``)."""
    prefix = f"fs.s3a.bucket.{bucket}."
    return {f"{prefix}endpoint": endpoint or server.endpoint,
            f"{prefix}access.key": ACCESS_KEY, f"{prefix}secret.key": SECRET_KEY,
            f"{prefix}path.style.access": "true", f"{prefix}endpoint.region": REGION,
            f"{prefix}connection.ssl.enabled": "false"}


def read(server: S3Server, bucket: str, key: str) -> bytes | None:
    """The object's bytes, or None when there is none."""
    client = server.client()
    try:
        return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except client.exceptions.NoSuchKey:
        return None
