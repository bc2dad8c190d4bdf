"""How the task path reaches a Delta table on Google Cloud Storage (``gs://``).

Spark reaches ``gs://`` through Google's Hadoop connector, configured with
``fs.gs.*`` settings (``spark.hadoop.fs.gs.*`` in the connection's
``spark.conf``); :meth:`GcsAccess.from_hadoop` reads the same settings, so the
user configures the store in one place:

* ``fs.gs.auth.type``: ``SERVICE_ACCOUNT_JSON_KEYFILE`` with
  ``fs.gs.auth.service.account.json.keyfile`` (a key file's path),
  ``UNAUTHENTICATED``, or ``APPLICATION_DEFAULT``/``COMPUTE_ENGINE``/unset: Google's
  default credentials (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's, the metadata
  server), which the connector, gcsfs and delta-rs all look up.  A key file set
  without a type is used, as the 2.x connector's
  ``google.cloud.auth.service.account.json.keyfile`` is.  Any other type (an
  access-token provider class, user credentials...) only the connector follows:
  such a table stays on Spark's writer (:meth:`GcsAccess.untranslated`).
* ``fs.gs.storage.root.url``: the JSON API's root, for an emulator or a private
  endpoint (default Google's).
* ``fs.gs.project.id``.

The executors write through gcsfs (the object-storage source's GCS filesystem),
wrapped for pyarrow; delta-rs commits with object_store's GCS client, whose put
of ``_delta_log/<version>.json`` carries ``ifGenerationMatch=0`` (GCS's
conditional create): of two committers of one version the store refuses the
second with ``412``.  object_store takes a custom endpoint only inside a
service-account key (``gcs_base_url``), so with one the key file is read here
and handed over as ``google_service_account_key`` (its private key masked).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import pyarrow.fs as pafs

GCS_SCHEME = "gs://"
_DEFAULT_ROOT = "https://storage.googleapis.com"

#: ``fs.gs.auth.type`` values whose credentials gcsfs and delta-rs find themselves.
_DEFAULT_TYPES = frozenset({"APPLICATION_DEFAULT", "COMPUTE_ENGINE"})
_KEYFILE_TYPE = "SERVICE_ACCOUNT_JSON_KEYFILE"
_NONE_TYPE = "UNAUTHENTICATED"


@dataclass(frozen=True)
class GcsAccess:
    """How to reach GCS: an endpoint, a key file (None: Google's default credentials)."""

    scheme: ClassVar[str] = "gs"

    #: The JSON API's root (``http://127.0.0.1:4443``); None: Google's.
    endpoint: str | None = None
    project: str | None = None
    #: A service account's JSON key file, as the connector reads it (a local path).
    keyfile: str | None = None
    #: No credentials at all (``fs.gs.auth.type`` ``UNAUTHENTICATED``).
    anonymous: bool = False
    #: The key's private key, once read for delta-rs (masked; not in ``repr``).
    _key_text: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_hadoop(cls, get: Callable[[str], str | None]) -> GcsAccess:
        """The access the GCS connector would use, from settings read through ``get``."""
        auth = (_setting(get, "fs.gs.auth.type") or "").upper()
        keyfile = (_setting(get, "fs.gs.auth.service.account.json.keyfile")
                   or _setting(get, "google.cloud.auth.service.account.json.keyfile"))
        root = _setting(get, "fs.gs.storage.root.url")
        endpoint = root.rstrip("/") if root and root.rstrip("/") != _DEFAULT_ROOT else None
        return cls(endpoint=endpoint, project=_setting(get, "fs.gs.project.id"),
                   keyfile=keyfile if auth in ("", _KEYFILE_TYPE) else None,
                   anonymous=auth == _NONE_TYPE)

    @staticmethod
    def untranslated(get: Callable[[str], str | None]) -> str | None:
        """The ``fs.gs.auth.type`` only the connector follows, or None when the task
        path reaches the bucket with the credentials the connector would use."""
        auth = (_setting(get, "fs.gs.auth.type") or "").upper()
        if auth in ("", _KEYFILE_TYPE, _NONE_TYPE) or auth in _DEFAULT_TYPES:
            if auth == _KEYFILE_TYPE and not _setting(
                    get, "fs.gs.auth.service.account.json.keyfile"):
                return f"{_KEYFILE_TYPE} without fs.gs.auth.service.account.json.keyfile"
            return None
        return auth

    def with_key(self) -> GcsAccess:
        """This access with its key file read (when delta-rs needs its text: a custom
        endpoint); raises ``OSError``/``ValueError`` for a key file it cannot read."""
        if self.keyfile is None or self.endpoint is None or self._key_text is not None:
            return self
        with open(self.keyfile, encoding="utf-8") as found:
            text = found.read()
        json.loads(text)  # a key that is not JSON fails here, not in delta-rs
        return GcsAccess(self.endpoint, self.project, self.keyfile, self.anonymous, text)

    @property
    def secrets(self) -> list[str]:
        if self._key_text is None:
            return []
        key = json.loads(self._key_text).get("private_key")
        return [key] if isinstance(key, str) and key else []

    def delta_rs_options(self, bucket: str) -> dict[str, str]:
        """delta-rs's ``storage_options`` (object_store's ``google_*`` keys)."""
        if self.endpoint is not None:
            key = json.loads(self._key_text) if self._key_text else {
                "client_email": "", "private_key": "", "private_key_id": "",
                "disable_oauth": True}
            if self.anonymous:
                key["disable_oauth"] = True
            key["gcs_base_url"] = self.endpoint
            return {"google_service_account_key": json.dumps(key)}
        if self.anonymous:
            return {"google_skip_signature": "true"}
        if self.keyfile is not None:
            return {"google_service_account": self.keyfile}
        return {}

    def filesystem(self) -> pafs.FileSystem:
        """gcsfs for this access, as a pyarrow filesystem (one per process and access)."""
        return _gcs_filesystem(self.endpoint, self.project, self.keyfile, self.anonymous)


def _setting(get: Callable[[str], str | None], key: str) -> str | None:
    value = get(key)
    return value.strip() if value and value.strip() else None


@functools.cache
def _gcs_filesystem(endpoint: str | None, project: str | None, keyfile: str | None,
                    anonymous: bool) -> pafs.FileSystem:
    from gcsfs import GCSFileSystem
    from pyarrow import fs as pafs

    kwargs: dict[str, object] = {"token": "anon" if anonymous else keyfile or "google_default"}
    if endpoint is not None:
        kwargs["endpoint_url"] = endpoint
    if project is not None:
        kwargs["project"] = project
    return pafs.PyFileSystem(pafs.FSSpecHandler(GCSFileSystem(**kwargs)))


def gcs_bucket_and_key(location: str) -> tuple[str, str] | None:
    """``(bucket, key prefix)`` of a ``gs://`` location, else None."""
    if not location.startswith(GCS_SCHEME):
        return None
    bucket, _, key = location[len(GCS_SCHEME):].partition("/")
    return bucket, key.strip("/")


__all__ = ["GcsAccess", "gcs_bucket_and_key"]
