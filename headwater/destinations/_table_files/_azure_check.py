"""``headwater check`` of Delta tables on Azure: reach the tables' prefix as a sync will.

As for S3 (``_s3_check``), a check starts no Spark: :class:`AzureAccess` reads
the ``spark.hadoop.fs.azure.*`` settings of the connection's ``spark.conf``.  The
probe is what a commit does: a uniquely named ``.headwater-check-<uuid>`` blob is
put under the tables' prefix with ``If-None-Match: *`` (Azure's conditional
create), put again the same way, which the store must refuse (a store that
accepted it would let a second commit of one table version replace the first),
and deleted.  azure-storage-blob (brought by adlfs, the ``azure`` extra) is used
because it tells the store's answers apart: refused credentials, a missing
container, no answer.  No message carries a credential.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from headwater.destinations._table_files._azure import AzureAccess, AzureLocation
from headwater.errors import AuthenticationError, DestinationError

_BODY = b"headwater check\n"


def _probe_name(prefix: str) -> str:
    return (f"{prefix}/" if prefix else "") + f".headwater-check-{uuid.uuid4().hex}"


def _ignored(store: str, location: str, how: str) -> DestinationError:
    return DestinationError(
        f"the {store} store ignores conditional creates: a second put of one object with "
        f"{how} under {location} succeeded, so a second commit of one table version "
        "would replace the first; set destination.config.writer: spark for this store")


def _probe(put: Callable[[], None], refused: Callable[[Exception], bool],
           delete: Callable[[], None], failure: Callable[[Exception], Exception],
           ignored: DestinationError) -> None:
    """Put, put again (``refused`` must hold for its error), delete; ``failure`` names
    any other error."""
    try:
        put()
    except Exception as exc:
        raise failure(exc) from None
    deleted = False
    try:
        try:
            put()
        except Exception as exc:
            if not refused(exc):
                raise failure(exc) from None
        else:
            raise ignored
        try:
            delete()
        except Exception as exc:
            raise failure(exc) from None
        deleted = True
    finally:
        if not deleted:  # a failure after the put: leave nothing behind if the store lets us
            with contextlib.suppress(Exception):
                delete()


def check_azure(location: str, access: AzureAccess) -> None:
    """The probe under an ``abfss://``/``wasbs://`` ``location``; an error if not."""
    from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

    where = AzureLocation.parse(location)
    if where is None:
        raise ValueError(f"{location} is not an Azure location")
    try:
        blob = azure_client(access).get_blob_client(where.container, _probe_name(where.key))
    except Exception as exc:
        raise _azure_failure(exc, location, access.endpoint, where.container) from None

    def put() -> None:
        # overwrite=False: the SDK sends If-None-Match: * (a conditional create).
        blob.upload_blob(_BODY, overwrite=False)

    _probe(put, lambda exc: isinstance(exc, ResourceExistsError | ResourceModifiedError),
           blob.delete_blob,
           lambda exc: _azure_failure(exc, location, access.endpoint, where.container),
           _ignored("Azure", location, "If-None-Match: *"))


def azure_client(access: AzureAccess) -> Any:
    from azure.storage.blob import BlobServiceClient

    credential: Any = None
    if access.account_key:
        credential = {"account_name": access.account, "account_key": access.account_key}
    elif access.sas_token:
        credential = access.sas_token
    elif access.client_id:
        from azure.identity import ClientSecretCredential

        credential = ClientSecretCredential(access.tenant_id or "", access.client_id,
                                            access.client_secret or "")
    return BlobServiceClient(access.endpoint, credential=credential, retry_total=1,
                             connection_timeout=5, read_timeout=20)


def _azure_failure(exc: Exception, location: str, where: str, container: str) -> Exception:
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ResourceNotFoundError,
        ServiceRequestError,
    )

    code = getattr(exc, "error_code", None)
    code = str(getattr(code, "value", code) or "no error code")  # the SDK's enum, or text
    status = getattr(exc, "status_code", None)
    if isinstance(exc, ClientAuthenticationError) or status in (401, 403):
        return AuthenticationError(
            f"Azure storage at {where} refused the credentials for {location} (auth failure: "
            f"{code}, HTTP {status}); check spark.hadoop.fs.azure.account.key.<account>.dfs."
            "core.windows.net (or the SAS / OAuth settings) in the connection's spark.conf, "
            f"and that they may create and delete blobs in {container}")
    if isinstance(exc, ResourceNotFoundError):
        return DestinationError(
            f"the container {container} of {location} does not exist at {where} ({code}); "
            "create it, or set destination.config.path to a container that exists")
    if isinstance(exc, ServiceRequestError):
        return DestinationError(
            f"Azure storage at {where} is unreachable for {location} ({type(exc).__name__}); "
            "check the account's endpoint and that the store is up")
    if isinstance(exc, HttpResponseError):
        return DestinationError(f"Azure storage at {where} refused a put or delete under "
                                f"{location} ({code}, HTTP {status})")
    return DestinationError(f"reaching {location} at {where} failed ({type(exc).__name__})")


__all__ = ["azure_client", "check_azure"]
