"""Create a small file only if none is there: the commit point of a log of files.

A destination whose commit is "a file of this name appears" (the ``files``
destination's manifests, a log in the manner of Delta's ``_delta_log``) must
never let a second writer replace the first one's file: of two committers of
one name, exactly one wins and the other is told so.  What each store offers:

* a local folder: the text is written to a temporary file beside the target,
  flushed and fsynced, then ``os.link``ed to the target name, which fails when
  the name exists (a rename would replace it); the temporary name is then
  removed, and the folder fsynced so the new name survives a power cut;
* S3: ``PutObject`` with ``If-None-Match: *``, refused with ``412 Precondition
  Failed`` when the key exists (AWS S3 since 2024, MinIO, moto).  pyarrow's S3
  filesystem cannot send that header, so the put goes through botocore (s3fs's
  client, installed already), with the same endpoint and keys as the tasks;
* Azure: ``upload_blob(overwrite=False)``, which the SDK sends with
  ``If-None-Match: *`` (``409``/``412`` when the blob exists).

A store that ignores the header would let a second put replace the first:
``headwater check`` puts a probe twice (``_s3_check``, ``_azure_check``) and
refuses such a store before any sync relies on it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import TYPE_CHECKING

from headwater.destinations._table_files._azure import AzureAccess

if TYPE_CHECKING:
    from headwater.destinations._table_files._store import S3Access, TableFolder


def create_text(folder: TableFolder, relative: str, text: str) -> bool:
    """Write ``text`` at ``relative`` below ``folder`` unless a file is there already:
    True when this call created it, False when the name was taken (nothing changed)."""
    if folder.store is None:
        return _create_local(folder.local_path(relative), text.encode("utf-8"))
    bucket, _, prefix = folder.uri.split("://", 1)[1].partition("/")
    key = f"{prefix.rstrip('/')}/{relative}" if prefix else relative
    if isinstance(folder.store, AzureAccess):
        return _create_azure(folder.store, bucket, key, text.encode("utf-8"))
    return _create_s3(folder.store, bucket, key, text.encode("utf-8"))


def _create_local(path: str, body: bytes) -> bool:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with open(temporary, "wb") as out:
        out.write(body)
        out.flush()
        os.fsync(out.fileno())
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        os.remove(temporary)
    _fsync_folder(directory)
    return True


def _fsync_folder(directory: str) -> None:
    """Make a new name in ``directory`` durable (where the platform lets a folder be opened)."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def _create_s3(access: S3Access, bucket: str, key: str, body: bytes) -> bool:
    from botocore.exceptions import ClientError

    from headwater.destinations._table_files._s3_check import s3_client

    try:
        s3_client(access).put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
    except ClientError as exc:
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        # 412: the key exists.  409: a concurrent conditional put of the same key is
        # in flight (AWS's ConditionalRequestConflict): the other writer wins or fails,
        # and this one reads what is there before deciding anything.
        if status in (409, 412) or error.get("Code") in ("PreconditionFailed",
                                                         "ConditionalRequestConflict"):
            return False
        raise
    return True


def _create_azure(access: AzureAccess, container: str, key: str, body: bytes) -> bool:
    from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

    from headwater.destinations._table_files._azure_check import azure_client

    blob = azure_client(access).get_blob_client(container, key)
    try:
        blob.upload_blob(body, overwrite=False)  # sent with If-None-Match: *
    except (ResourceExistsError, ResourceModifiedError):
        return False
    return True


__all__ = ["create_text"]
