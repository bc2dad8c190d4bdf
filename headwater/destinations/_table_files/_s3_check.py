"""``headwater check`` of tables on S3: reach the tables' prefix as a sync will.

A check starts no Spark, but the connection file's ``spark.conf`` holds the
``spark.hadoop.fs.s3a.*`` settings a sync reaches the bucket with, and
:class:`S3Access` reads them without Spark.  The probe is what a sync does
first on the task path: a put under the tables' prefix (a uniquely named
``.headwater-check-<uuid>`` object) and a delete of it.

The probe goes through botocore (s3fs's client, so already installed) rather
than pyarrow: pyarrow's S3 filesystem cannot send ``If-None-Match`` and folds
S3's error codes into ``OSError`` text, while a person needs to be told which of
"no such bucket", "refused credentials" and "no answer" they have.  With
``s3_conditional_writes`` on (the default), the probe is put twice with
``If-None-Match: *``: a store that honours the header refuses the second put
with ``412 Precondition Failed`` (what delta-rs's commits rely on), and one that
ignores it accepts it, which would let a second commit replace the first.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import TYPE_CHECKING, Any

from headwater.destinations._table_files._store import S3Access, s3_bucket_and_key
from headwater.errors import AuthenticationError, DestinationError

if TYPE_CHECKING:
    from botocore.client import BaseClient

#: S3 error codes of credentials the store refuses (or lacks the right to use).
_AUTH_CODES = frozenset({
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
    "ExpiredToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
    "InvalidSecurity", "InvalidClientTokenId",
})
#: S3 error codes of a store that does not implement a conditional put.
_UNSUPPORTED_CODES = frozenset({"NotImplemented", "InvalidArgument", "InvalidRequest"})

_CONDITIONAL_ADVICE = ("set destination.config.s3_conditional_writes: false (Spark's Delta "
                       "writer and its LogStore then commit to this store)")


def check_s3(location: str, access: S3Access, *, conditional_writes: bool,
             advice: str = _CONDITIONAL_ADVICE) -> None:
    """Put and delete a probe object under ``location``; an error a person can act on if not.

    :class:`AuthenticationError` when the store refuses the credentials (or
    there are none), :class:`DestinationError` for a missing bucket, an
    endpoint that does not answer, or (``conditional_writes``) a store that does
    not refuse a second ``If-None-Match: *`` put (``advice`` says what to do then).  No
    message carries a key.
    """
    parts = s3_bucket_and_key(location)
    if parts is None:
        raise ValueError(f"{location} is not an S3 location")
    bucket, prefix = parts
    key = f"{prefix}/" if prefix else ""
    key += f".headwater-check-{uuid.uuid4().hex}"
    where = access.endpoint or "AWS S3"
    client = s3_client(access)
    conditional = {"IfNoneMatch": "*"} if conditional_writes else {}
    put = False
    try:
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"headwater check\n", **conditional)
        except Exception as exc:
            if conditional_writes and _unsupported(exc):
                raise _no_conditional_writes(exc, location, where, advice) from None
            raise _failure(exc, location, where, bucket) from None
        put = True
        if conditional_writes:
            _refuses_second_put(client, location, where, bucket, key, advice)
        _call(client.delete_object, location, where, bucket, Bucket=bucket, Key=key)
        put = False
    finally:
        if put:  # a failure after the put: leave nothing behind if the store lets us
            with contextlib.suppress(Exception):
                client.delete_object(Bucket=bucket, Key=key)


def _refuses_second_put(client: BaseClient, location: str, where: str, bucket: str,
                        key: str, advice: str) -> None:
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=bucket, Key=key, Body=b"headwater check\n", IfNoneMatch="*")
    except ClientError as exc:
        if _status(exc) == 412 or _code(exc) == "PreconditionFailed":
            return  # refused: the store honours If-None-Match
        if _unsupported(exc):
            raise _no_conditional_writes(exc, location, where, advice) from None
        raise _failure(exc, location, where, bucket) from None
    except Exception as exc:
        raise _failure(exc, location, where, bucket) from None
    raise DestinationError(
        f"the S3 store at {where} ignores If-None-Match: a second put of one object with "
        f"If-None-Match: * under {location} succeeded, so a second commit of one table "
        f"version would replace the first: {advice}")


def _unsupported(exc: Exception) -> bool:
    """Whether ``exc`` is a store's answer that it does not do conditional puts."""
    from botocore.exceptions import ClientError

    return isinstance(exc, ClientError) and (
        _code(exc) in _UNSUPPORTED_CODES or _status(exc) == 501)


def _no_conditional_writes(exc: Exception, location: str, where: str,
                           advice: str) -> DestinationError:
    return DestinationError(
        f"the S3 store at {where} does not support conditional writes (a put with "
        f"If-None-Match: * was answered {_code(exc)}, HTTP {_status(exc)}); commits to "
        f"{location} need them: {advice}")


def _call(operation: Any, location: str, where: str, bucket: str, **kwargs: Any) -> None:
    try:
        operation(**kwargs)
    except Exception as exc:
        raise _failure(exc, location, where, bucket) from None


def _failure(exc: Exception, location: str, where: str, bucket: str) -> Exception:
    """The error to report for ``exc``: its kind and S3's code, never a credential."""
    from botocore.exceptions import (
        ClientError,
        ConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        SSLError,
    )

    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return AuthenticationError(
            f"no S3 credentials for {location} (auth failure: {type(exc).__name__}); set "
            "spark.hadoop.fs.s3a.access.key and spark.hadoop.fs.s3a.secret.key in the "
            "connection's spark.conf, or give this machine AWS credentials")
    if isinstance(exc, SSLError):
        return DestinationError(
            f"the TLS certificate of the S3 endpoint {where} is not trusted for {location} "
            f"({_tls_reason(exc)}); if the store's certificate comes from a private CA, set "
            "SSL_CERT_FILE to a PEM bundle holding that CA (Headwater's check, pyarrow and "
            "delta-rs read it) and give the JVM a trust store holding it "
            "(-Djavax.net.ssl.trustStore in spark.driver.extraJavaOptions)")
    if isinstance(exc, ConnectionError):
        return DestinationError(
            f"the S3 endpoint {where} is unreachable for {location} ({type(exc).__name__}); "
            "check spark.hadoop.fs.s3a.endpoint (and fs.s3a.connection.ssl.enabled) in the "
            "connection's spark.conf, and that the store is up")
    if isinstance(exc, ClientError):
        code, status = _code(exc), _status(exc)
        if code == "NoSuchBucket":
            return DestinationError(
                f"the bucket {bucket} of {location} does not exist at {where}; create it, or "
                "set destination.config.path to a bucket that exists")
        if code in _AUTH_CODES or status == 403:
            return AuthenticationError(
                f"the S3 store at {where} refused the credentials for {location} (auth "
                f"failure: {code}, HTTP {status}); check spark.hadoop.fs.s3a.access.key, "
                "secret.key (and session.token) in the connection's spark.conf, and that "
                f"they may put and delete objects in {bucket}")
        return DestinationError(f"the S3 store at {where} refused a put or delete under "
                                f"{location} ({code}, HTTP {status})")
    return DestinationError(f"reaching {location} at {where} failed ({type(exc).__name__})")


def _tls_reason(exc: Exception) -> str:
    """The verifier's own words (``certificate verify failed: ...``), else the error's type."""
    text = str(exc)
    start = text.find("certificate verify failed")
    return text[start:].split(" (_ssl")[0] if start >= 0 else type(exc).__name__


def _ca_bundle() -> str | None:
    """The PEM bundle to verify the store's certificate with: ``SSL_CERT_FILE``, which
    the sync's own clients (pyarrow's in the tasks, delta-rs's on the driver) read, so
    the check trusts what the sync will; else botocore's ``AWS_CA_BUNDLE``, which those
    clients ignore; None for botocore's default."""
    return os.environ.get("SSL_CERT_FILE") or os.environ.get("AWS_CA_BUNDLE") or None


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) or "no error code"


def _status(exc: Any) -> int | None:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


def s3_client(access: S3Access) -> BaseClient:
    """botocore's S3 client for ``access``: few retries and short timeouts (a check
    should answer soon), the bucket addressed as S3A would."""
    import botocore.session
    from botocore.config import Config

    style = "auto" if access.path_style is None else "path" if access.path_style else "virtual"
    config = Config(connect_timeout=5, read_timeout=20, s3={"addressing_style": style},
                    retries={"total_max_attempts": 2, "mode": "standard"})
    region = access.region or ("us-east-1" if access.endpoint else None)
    return botocore.session.get_session().create_client(
        "s3", endpoint_url=access.endpoint, region_name=region,
        aws_access_key_id=access.access_key, aws_secret_access_key=access.secret_key,
        aws_session_token=access.session_token, config=config, verify=_ca_bundle())


__all__ = ["check_s3", "s3_client"]
