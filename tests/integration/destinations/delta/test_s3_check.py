"""``headwater check`` of Delta tables on S3: a probe put and deleted under the tables' path
with the connection's ``spark.hadoop.fs.s3a.*`` settings, against moto's server over HTTP.

Failures are told apart (missing bucket, refused credentials, no answer, a store whose
conditional put is refused or ignored), and no message carries a secret.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.destinations import build_destination
from headwater.destinations._base import Destination
from headwater.engine._s3a import s3a_conf
from headwater.errors import AuthenticationError, DestinationError, ExitCode
from tests.integration._cli_logs import invoke_logged
from tests.integration._s3 import REGION, S3Server, free_port, moto_server
from tests.integration.destinations.delta._s3 import new_bucket
from tests.integration.destinations.delta._s3_proxy import Proxy, proxy_process

WRONG_SECRET = "hw-wrong-secret-key-do-not-print"
_READ_WRITE_S3 = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})


def _destination(server: S3Server, path: str, endpoint: str | None = None,
                 **config: object) -> Destination:
    destination = build_destination("delta", {"path": path, **config})
    conf = server.spark_conf()
    if endpoint is not None:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
    destination.use_spark_conf(conf)
    return destination


def _keys(server: S3Server, bucket: str) -> list[str]:
    listed = server.client().list_objects_v2(Bucket=bucket)
    return [item["Key"] for item in listed.get("Contents", [])]


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[Proxy]:
    with proxy_process(s3_server.endpoint, free_port()) as running:
        yield running


def test_a_reachable_prefix_passes_leaving_nothing_and_the_store_refused_a_second_put(
        s3_server: S3Server, proxy: Proxy) -> None:
    bucket = new_bucket(s3_server)
    destination = _destination(s3_server, f"s3a://{bucket}/lake/raw", proxy.endpoint)
    assert destination.check_skipped() is None
    destination.check()
    assert _keys(s3_server, bucket) == []
    probes = [r for r in proxy.requests() if ".headwater-check-" in r["path"]]
    assert [(r["method"], r["status"]) for r in probes] == [
        ("PUT", 200), ("PUT", 412), ("DELETE", 204)]
    assert probes[0]["path"].startswith(f"/{bucket}/lake/raw/.headwater-check-")
    assert all(r["headers"].get("If-None-Match") == "*" for r in probes[:2])


def test_a_missing_bucket_is_named(s3_server: S3Server) -> None:
    missing = f"hw-missing-{uuid.uuid4().hex[:12]}"
    destination = _destination(s3_server, f"s3a://{missing}/lake")
    with pytest.raises(DestinationError, match=f"the bucket {missing} of s3a://{missing}/lake "
                       f"does not exist at {s3_server.endpoint}"):
        destination.check()


def test_an_endpoint_that_does_not_answer_is_called_unreachable(s3_server: S3Server) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    destination = _destination(s3_server, "s3a://hw-any-bucket/lake", nowhere)
    with pytest.raises(DestinationError, match=f"the S3 endpoint {nowhere} is unreachable"):
        destination.check()


@pytest.mark.parametrize(("mode", "told"), [
    ("ignore", r"ignores If-None-Match: a second put .* succeeded"),
    ("refuse", r"does not support conditional writes \(a put with If-None-Match: \* was "
               r"answered NotImplemented, HTTP 501\)"),
])
def test_a_store_without_conditional_puts_is_told_to_set_conditional_writes_false(
        s3_server: S3Server, proxy: Proxy, mode: str, told: str) -> None:
    bucket = new_bucket(s3_server)
    proxy.conditional_puts(mode)
    destination = _destination(s3_server, f"s3a://{bucket}/lake", proxy.endpoint)
    with pytest.raises(DestinationError, match=f"{told}.*s3_conditional_writes: false"):
        destination.check()
    assert _keys(s3_server, bucket) == []  # the probe is deleted all the same
    # With conditional writes off, Spark's writer commits: reaching the prefix is enough.
    _destination(s3_server, f"s3a://{bucket}/lake", proxy.endpoint,
                 s3_conditional_writes=False).check()
    assert _keys(s3_server, bucket) == []


def test_a_provider_only_s3a_follows_is_not_checked(s3_server: S3Server) -> None:
    destination = build_destination("delta", {"path": "s3a://hw-any-bucket/lake"})
    destination.use_spark_conf({"spark.hadoop.fs.s3a.aws.credentials.provider":
                                "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"})
    reason = destination.check_skipped()
    assert reason is not None and "AssumedRoleCredentialProvider" in reason
    destination.check()  # nothing reached, nothing raised


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, str, str]]:
    """A moto server of its own that checks signatures (the shared one takes any key):
    its first three requests create a user with a key that may use S3, then every
    request must be signed with a key it knows."""
    log = tmp_path_factory.mktemp("moto-auth") / "moto.log"
    with moto_server(log, env={"INITIAL_NO_AUTH_ACTION_COUNT": "3"}) as server:
        import boto3

        iam = boto3.client("iam", endpoint_url=server.endpoint, region_name=REGION,
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="hw")
        iam.put_user_policy(UserName="hw", PolicyName="s3", PolicyDocument=_READ_WRITE_S3)
        key = iam.create_access_key(UserName="hw")["AccessKey"]
        yield server, key["AccessKeyId"], key["SecretAccessKey"]


def _connection_file(tmp_path: Path, endpoint: str, path: str, access_key: str,
                     secret_key: str) -> Path:
    conf = s3a_conf(endpoint, access_key=access_key, secret_key=secret_key, path_style=True,
                    region=REGION)
    document = {"name": "s3check", "source": {"type": "sample", "config": {"users": 10}},
                "destination": {"type": "delta", "config": {"path": path}},
                "spark": {"conf": conf}}
    file = tmp_path / "s3check.yaml"
    file.write_text(json.dumps(document))  # JSON is YAML
    return file


def test_headwater_check_reports_a_wrong_secret_as_an_auth_failure_without_the_secret(
        tmp_path: Path, auth_server: tuple[S3Server, str, str]) -> None:
    server, access_key, secret_key = auth_server
    import boto3

    bucket = f"hw-auth-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name=REGION,
                 aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                 ).create_bucket(Bucket=bucket)
    good = _connection_file(tmp_path, server.endpoint, f"s3a://{bucket}/lake", access_key,
                            secret_key)
    passed = CliRunner().invoke(app, ["check", str(good), "--json"])
    assert passed.exit_code == 0, passed.output
    assert json.loads(passed.stdout)["destination"] == {"type": "delta",
                                                        "status": "succeeded"}

    wrong = _connection_file(tmp_path, server.endpoint, f"s3a://{bucket}/lake", access_key,
                             WRONG_SECRET)
    result = invoke_logged(["check", str(wrong), "--json"])
    assert result.exit_code == ExitCode.AUTHENTICATION, result.output
    error = json.loads(result.stdout)["destination"]["error"]
    assert error["type"] == AuthenticationError.__name__
    assert "refused the credentials" in error["message"]
    assert "auth failure: SignatureDoesNotMatch, HTTP 403" in error["message"]
    for shown in (result.output,):
        assert WRONG_SECRET not in shown and secret_key not in shown
    printed = CliRunner().invoke(app, ["check", str(wrong)])
    assert printed.exit_code == ExitCode.AUTHENTICATION
    assert "auth failure" in printed.output and WRONG_SECRET not in printed.output
