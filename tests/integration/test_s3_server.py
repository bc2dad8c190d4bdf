"""The shared S3-compatible server does what commits on S3 rely on."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tests.integration._s3 import S3Server


def test_a_second_put_if_none_match_is_refused(s3_server: S3Server) -> None:
    """Delta's and Headwater's commits on S3 write a log entry only if no one did."""
    client = s3_server.client()
    bucket = s3_server.bucket("conditional-puts")
    client.put_object(Bucket=bucket, Key="_delta_log/0.json", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key="_delta_log/0.json", Body=b"second",
                          IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    body = client.get_object(Bucket=bucket, Key="_delta_log/0.json")["Body"].read()
    assert body == b"first"
