"""PyIceberg's REST catalog client as Headwater runs it: one storage identity per commit.

Why a subclass: a sync's data files are uploaded by the executors with the
connection's S3 access (``spark.hadoop.fs.s3a.*``, :class:`~headwater.destinations.
_table_files._store.S3Access`), and its manifests by the driver through PyIceberg's
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
* masks the bearer token its client credential was exchanged for, as a secret;
* turns a refusal of any call the destination makes (401, 403, 419: a token
  that may read but not commit, one revoked or expired mid-sync, a credential
  the OAuth2 server no longer takes when the token is renewed) into an
  :class:`~headwater.errors.AuthenticationError` naming the catalog's URI and
  the operation, never the credential, so a sync refused after the catalog
  loaded ends as one refused when it loads: exit code 3, not a crash.  A
  refused *commit* is then looked up by its caller before it is called failed
  (``_commit.refused_commit``).

Vended credentials for the executors too (the server's short-lived keys for
both sides) are not supported: it needs the tasks to receive and refresh them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.rest.auth import AuthManager
from pyiceberg.io import FileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from headwater.config import register_secrets, register_spark_conf_secrets
from headwater.destinations.iceberg._catalog import refusal, refusals

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


_Call = TypeVar("_Call", bound=Callable[..., Any])


def _named(target: Any) -> str:
    """A table or namespace as the message names it: ``ns.users``."""
    name = target.name() if callable(getattr(target, "name", None)) else target
    return ".".join(name) if isinstance(name, tuple) else str(name)


def _refusable(operation: str, call: _Call) -> _Call:
    """``call`` (a method of PyIceberg's client), its refusals raised as an
    AuthenticationError naming ``operation`` and the call's first argument.

    PyIceberg's own retry (a renewed token, then the call once more) runs inside
    ``call``: what reaches here was refused again.
    """

    @functools.wraps(call)
    def guarded(self: RestCatalog, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(self, *args, **kwargs)
        except refusals() as exc:
            target = f" {_named(args[0])}" if args else ""
            raise refusal(self.properties, exc, f"{operation}{target}") from exc

    return cast(_Call, guarded)


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

    # Every call that reaches the server, refusals named (``_refusable``).  A commit
    # carries every change to an existing table: snapshots, schema and properties,
    # branches, snapshot expiry.
    commit_table = _refusable("a commit to table", RestCatalog.commit_table)
    load_table = _refusable("loading table", RestCatalog.load_table)
    table_exists = _refusable("looking up table", RestCatalog.table_exists)
    create_table = _refusable("creating table", RestCatalog.create_table)
    create_table_transaction = _refusable("creating table", RestCatalog.create_table_transaction)
    register_table = _refusable("registering table", RestCatalog.register_table)
    rename_table = _refusable("renaming table", RestCatalog.rename_table)
    drop_table = _refusable("dropping table", RestCatalog.drop_table)
    purge_table = _refusable("purging table", RestCatalog.purge_table)
    list_tables = _refusable("listing the tables of namespace", RestCatalog.list_tables)
    plan_scan = _refusable("planning a scan of table", RestCatalog.plan_scan)
    create_namespace = _refusable("creating namespace", RestCatalog.create_namespace)
    drop_namespace = _refusable("dropping namespace", RestCatalog.drop_namespace)
    namespace_exists = _refusable("looking up namespace", RestCatalog.namespace_exists)
    list_namespaces = _refusable("listing namespaces", RestCatalog.list_namespaces)
    load_namespace_properties = _refusable("loading the properties of namespace",
                                           RestCatalog.load_namespace_properties)
    update_namespace_properties = _refusable("updating the properties of namespace",
                                             RestCatalog.update_namespace_properties)


__all__ = ["ACCESS_DELEGATION_HEADER", "STORAGE_PREFIXES", "HeadwaterRestCatalog"]
