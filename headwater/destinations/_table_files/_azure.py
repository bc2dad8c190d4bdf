"""How the task path reaches a table on Azure storage (``abfss://``, ``wasbs://``).

Spark names such a table ``abfss://<container>@<account>.dfs.core.windows.net/<path>``
(ABFS) or ``wasbs://<container>@<account>.blob.core.windows.net/<path>`` (WASB)
and reaches it with hadoop-azure's ``fs.azure.*`` settings
(``spark.hadoop.fs.azure.*`` in the connection's ``spark.conf``);
:meth:`AzureAccess.from_hadoop` reads the same settings for the account, so the
user configures the store in one place:

* shared key (ABFS's default ``fs.azure.account.auth.type``, and WASB's):
  ``fs.azure.account.key.<account>.dfs.core.windows.net`` (or ``.blob.``);
* ``SAS``: ``fs.azure.sas.fixed.token.<account>.dfs.core.windows.net`` (or the
  unqualified ``fs.azure.sas.fixed.token``), WASB's
  ``fs.azure.sas.<container>.<account>.blob.core.windows.net``;
* ``OAuth`` with ABFS's ``ClientCredsTokenProvider``:
  ``fs.azure.account.oauth2.client.id``, ``.client.secret`` and ``.client.endpoint``
  (``https://login.microsoftonline.com/<tenant>/oauth2/token``).

Each is looked up with the account's host first, then unqualified, as ABFS
does.  Any other auth type (a custom token provider, managed identity through
the connector's own class) only hadoop-azure follows: such a table stays on
Spark's writer (:meth:`AzureAccess.untranslated`).  An emulator or private
endpoint of the blob service is ``headwater.azure.blob.endpoint.<account>``
(``spark.hadoop.headwater.azure.blob.endpoint.<account>``; a setting of
Headwater's own, which hadoop-azure ignores: it has none).

The executors write through pyarrow's Azure filesystem; delta-rs commits with
object_store's Azure client, whose put of ``_delta_log/<version>.json`` carries
``If-None-Match: *``: of two committers of one version the store refuses the
second (``409``/``412``).  delta-rs names the table ``az://<container>/<path>``,
with the account in its options.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_LOCATION = re.compile(r"^(abfss?|wasbs?)://([^@/]+)@([^./]+)\.(dfs|blob)\.([^/]+?)(/.*)?$")
_CLIENT_CREDS = "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider"
_TENANT = re.compile(r"^https://[^/]+/([^/]+)/oauth2(/v2\.0)?/token/?$")


@dataclass(frozen=True)
class AzureLocation:
    """An ``abfss://``/``wasbs://`` location's parts."""

    container: str
    account: str
    #: The host's suffix after ``.dfs.``/``.blob.`` (``core.windows.net``).
    suffix: str
    key: str
    #: False: ``abfs://``/``wasb://`` (plain HTTP).
    secure: bool
    wasb: bool

    @classmethod
    def parse(cls, location: str) -> AzureLocation | None:
        found = _LOCATION.match(location)
        if found is None:
            return None
        scheme, container, account, _, suffix, key = found.groups()
        return cls(container=container, account=account, suffix=suffix,
                   key=(key or "").strip("/"), secure=scheme.endswith("s"),
                   wasb=scheme.startswith("wasb"))

    def hosts(self) -> tuple[str, str]:
        """The account's host as the location names it, then the other service's."""
        dfs = f"{self.account}.dfs.{self.suffix}"
        blob = f"{self.account}.blob.{self.suffix}"
        return (blob, dfs) if self.wasb else (dfs, blob)

    @property
    def blob_host(self) -> str:
        return f"{self.account}.blob.{self.suffix}"

    @property
    def delta_rs_uri(self) -> str:
        return f"az://{self.container}/{self.key}" if self.key else f"az://{self.container}"


@dataclass(frozen=True)
class AzureAccess:
    """How to reach one storage account: its blob endpoint and one kind of credential."""

    scheme: ClassVar[str] = "az"

    account: str
    #: The blob service's URL (``https://<account>.blob.core.windows.net``, or an
    #: emulator's ``http://127.0.0.1:10000/<account>``).
    endpoint: str
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    tenant_id: str | None = None

    @classmethod
    def from_hadoop(cls, get: Callable[[str], str | None], where: AzureLocation) -> AzureAccess:
        """The access hadoop-azure would use for ``where``'s account (its settings
        through ``get``); a kind it alone follows gives an access without credentials,
        which :meth:`untranslated` names first."""
        def setting(key: str) -> str | None:
            for host in where.hosts():
                value = get(f"{key}.{host}")
                if value and value.strip():
                    return value.strip()
            value = get(key)
            return value.strip() if value and value.strip() else None

        custom = get(f"headwater.azure.blob.endpoint.{where.account}")
        endpoint = (custom.strip().rstrip("/") if custom and custom.strip() else
                    f"{'https' if where.secure else 'http'}://{where.blob_host}")
        auth = (setting("fs.azure.account.auth.type") or "SharedKey").lower()
        key = setting("fs.azure.account.key")
        container_sas = get(f"fs.azure.sas.{where.container}.{where.hosts()[0]}")
        # WASB takes a container's SAS only when the account has no key set.
        if auth == "sas" or (where.wasb and container_sas and not key):
            sas = container_sas or setting("fs.azure.sas.fixed.token")
            return cls(where.account, endpoint, sas_token=sas.strip().lstrip("?") if sas else None)
        if auth == "oauth":
            tenant = _TENANT.match(setting("fs.azure.account.oauth2.client.endpoint") or "")
            return cls(where.account, endpoint,
                       client_id=setting("fs.azure.account.oauth2.client.id"),
                       client_secret=setting("fs.azure.account.oauth2.client.secret"),
                       tenant_id=tenant.group(1) if tenant else None)
        return cls(where.account, endpoint, account_key=key)

    @staticmethod
    def untranslated(get: Callable[[str], str | None], where: AzureLocation) -> str | None:
        """Why hadoop-azure alone can reach ``where`` with its settings, or None when
        the task path reaches it with the same credentials."""
        access = AzureAccess.from_hadoop(get, where)
        auth = next((v.strip() for host in where.hosts()
                     if (v := get(f"fs.azure.account.auth.type.{host}")) and v.strip()),
                    (get("fs.azure.account.auth.type") or "SharedKey").strip())
        if auth.lower() == "oauth":
            provider = next((v.strip() for host in where.hosts()
                             if (v := get(f"fs.azure.account.oauth.provider.type.{host}"))),
                            (get("fs.azure.account.oauth.provider.type") or "").strip())
            if provider != _CLIENT_CREDS:
                return (f"fs.azure.account.oauth.provider.type {provider or '(unset)'}, which "
                        "only hadoop-azure follows")
            if not (access.client_id and access.client_secret and access.tenant_id):
                return ("OAuth without fs.azure.account.oauth2.client.id, .client.secret and "
                        "a .client.endpoint naming the tenant")
            return None
        if auth.lower() not in ("sharedkey", "sas"):
            return f"fs.azure.account.auth.type {auth}, which only hadoop-azure follows"
        if access.account_key is None and access.sas_token is None:
            return (f"no fs.azure.account.key.{where.hosts()[0]} (nor a SAS token) for the "
                    f"account {where.account}")
        return None

    @property
    def secrets(self) -> list[str]:
        return [v for v in (self.account_key, self.sas_token, self.client_secret) if v]

    def delta_rs_options(self, container: str) -> dict[str, str]:
        """delta-rs's ``storage_options`` (object_store's ``azure_*`` keys)."""
        options = {"azure_storage_account_name": self.account,
                   "azure_storage_endpoint": self.endpoint}
        if self.endpoint.startswith("http://"):
            options["azure_allow_http"] = "true"
        pairs = (("azure_storage_account_key", self.account_key),
                 ("azure_storage_sas_key", self.sas_token),
                 ("azure_client_id", self.client_id),
                 ("azure_client_secret", self.client_secret),
                 ("azure_tenant_id", self.tenant_id))
        options.update({k: v for k, v in pairs if v})
        return options

    def filesystem(self) -> pafs.FileSystem:
        """pyarrow's Azure filesystem for this access (one per process and access)."""
        return _azure_filesystem(self)


@functools.cache
def _azure_filesystem(access: AzureAccess) -> pafs.FileSystem:
    from pyarrow import fs as pafs

    scheme, rest = access.endpoint.split("://", 1)
    authority = rest.split("/", 1)[0]
    kwargs: dict[str, object] = {}
    if authority.startswith(f"{access.account}."):
        # pyarrow puts the account before an authority that starts with a dot
        # (``.blob.core.windows.net``, another cloud's suffix).
        blob = authority[len(access.account):]
        kwargs.update(blob_storage_authority=blob, blob_storage_scheme=scheme,
                      dfs_storage_authority=blob.replace(".blob.", ".dfs.", 1),
                      dfs_storage_scheme=scheme)
    else:  # an emulator (Azurite): the account is the path's first segment
        kwargs.update(blob_storage_authority=authority, blob_storage_scheme=scheme,
                      dfs_storage_authority=authority, dfs_storage_scheme=scheme)
    if access.account_key:
        kwargs["account_key"] = access.account_key
    elif access.sas_token:
        kwargs["sas_token"] = access.sas_token
    elif access.client_id:
        kwargs.update(client_id=access.client_id, client_secret=access.client_secret,
                      tenant_id=access.tenant_id)
    return pafs.AzureFileSystem(access.account, **kwargs)


__all__ = ["AzureAccess", "AzureLocation"]
