"""PyIceberg's REST catalog client as Headwater runs it: one storage identity per commit.

Why a subclass: a sync's data files are uploaded by the executors with the
connection's S3 access (``spark.hadoop.fs.s3a.*``, :class:`~headwater.destinations.
delta._store.S3Access`), and its manifests by the driver through PyIceberg's
FileIO.  PyIceberg, left to itself, asks every REST server for vended storage
credentials (``X-Iceberg-Access-Delegation: vended-credentials``) and lets the
``config`` and ``storage-credentials`` of a load-table answer (and the
``overrides`` of ``/v1/config``) replace the S3 settings it was given: the
driver would then write a commit's manifests as one identity (short-lived
keys, perhaps another endpoint) and the executors its data files as another,
so a commit could half succeed, and an audit of the bucket would show two
writers.  So this client

* asks for no delegation (the header is not sent): a server that vends only
  when asked (Polaris, Lakekeeper, Unity) hands out nothing;
* keeps the S3 settings it was given for every FileIO it makes: a server's
  ``s3.*``/``client.*`` values (vended keys, endpoint, region, remote signing)
  are dropped, from ``/v1/config`` and from each table's answer alike;
* masks the bearer token its client credential was exchanged for, as a secret.

Vended credentials for the executors too (the server's short-lived keys for
both sides) are not supported: it needs the tasks to receive and refresh them.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.rest.auth import AuthManager
from pyiceberg.io import FileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from headwater.config import register_secrets, register_spark_conf_secrets

#: The header a REST client asks for vended credentials (or remote signing) with.
ACCESS_DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
#: Property prefixes of how PyIceberg's FileIO reaches S3 (keys, endpoint, region,
#: signing): the connection's alone, never a server's.
STORAGE_PREFIXES = ("s3.", "client.")


def _storage(properties: Properties) -> dict[str, str]:
    return {key: value for key, value in properties.items() if key.startswith(STORAGE_PREFIXES)}


def _without_storage(properties: Properties) -> dict[str, str]:
    """``properties`` less the server's storage settings (their secret values masked, in
    case something quotes them)."""
    register_spark_conf_secrets(_storage(properties))
    return {key: value for key, value in properties.items()
            if not key.startswith(STORAGE_PREFIXES)}


def _register_token(manager: AuthManager | None) -> None:
    """Mask the bearer token the OAuth2 server issued for the client credential: it
    grants the catalog's access as the credential does (PyIceberg keeps it in ``_token``)."""
    token = getattr(manager, "_token", None)
    if isinstance(token, str) and token:
        register_secrets([token])


class HeadwaterRestCatalog(RestCatalog):
    """PyIceberg's ``RestCatalog`` that asks for no vended credentials and reaches the
    store only with the S3 settings it was made with (module docstring: why)."""

    def __init__(self, name: str, **properties: str) -> None:
        #: The connection's S3 settings (``_catalog.file_io_properties``), set before
        #: the base class fetches the server's config, which may override them.
        self._connection_storage = _storage(properties)
        super().__init__(name, **properties)

    def _fetch_config(self) -> None:
        super()._fetch_config()
        self.properties = {**_without_storage(self.properties), **self._connection_storage}

    def _config_headers(self, session: Any) -> None:
        super()._config_headers(session)
        session.headers.pop(ACCESS_DELEGATION_HEADER, None)

    def _create_legacy_oauth2_auth_manager(self, session: Any) -> AuthManager:
        manager = super()._create_legacy_oauth2_auth_manager(session)
        _register_token(manager)
        return manager

    def _refresh_token(self) -> None:
        super()._refresh_token()
        _register_token(self._auth_manager)

    def _load_file_io(self, properties: Properties = EMPTY_DICT,
                      location: str | None = None) -> FileIO:
        return super()._load_file_io(_without_storage(properties), location)


__all__ = ["ACCESS_DELEGATION_HEADER", "STORAGE_PREFIXES", "HeadwaterRestCatalog"]
