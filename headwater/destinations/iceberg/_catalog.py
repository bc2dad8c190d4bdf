"""The Iceberg catalog, through PyIceberg: tables loaded, created, evolved; a writability check.

Why PyIceberg and not Spark: no ``iceberg-spark-runtime`` is published for Spark
4.2 (every released runtime fails to load on it, measured: docs/destinations/
iceberg.md), while PyIceberg commits from the driver with no JVM at all.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._table_files._store import S3Access, TableFolder, s3_bucket_and_key
from headwater.destinations.iceberg._config import IcebergSettings, local_path
from headwater.errors import AuthenticationError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

#: Where PyIceberg keeps the name mapping that reads files without field ids by name.
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def load(settings: IcebergSettings, s3: S3Access | None = None) -> Catalog:
    """The catalog the settings name (a SQL catalog creates its tables on first use).

    A local warehouse folder of a SQL or hadoop catalog is created first: the
    embedded catalog's SQLite file is in it; a hadoop catalog's namespaces are
    folders in it.  A REST catalog's server decides where tables live.  ``s3``:
    how to reach a warehouse on S3, handed to PyIceberg's FileIO
    (:func:`file_io_properties`), so the store is configured once, in the
    connection's ``spark.hadoop.fs.s3a.*``.
    """
    from pyiceberg.catalog import load_catalog

    if settings.catalog_type in ("sql", "hadoop") and settings.object_store is None:
        os.makedirs(settings.warehouse_folder, exist_ok=True)
    properties = dict(settings.catalog_properties)
    if s3 is not None:
        properties.update(file_io_properties(s3))
    with refused_as_authentication(settings):
        return load_catalog(settings.catalog_name, **properties)


@contextlib.contextmanager
def refused_as_authentication(settings: IcebergSettings) -> Iterator[None]:
    """Turn a REST catalog's (or its OAuth2 server's) refusal into an AuthenticationError.

    Why: a 401/403 from the token endpoint or the catalog is a credential problem
    the user fixes in one field, and ``headwater check`` / ``sync`` exit with the
    authentication code for it (``ExitCode.AUTHENTICATION``) instead of a generic
    failure.  The message names the field and the server's own words (masked:
    secrets never show), never a credential.  Loading the catalog is guarded
    here; every call of a loaded REST catalog is guarded by its client
    (``_rest.HeadwaterRestCatalog``), which names the operation refused.
    """
    try:
        yield
    except refusals() as exc:
        raise refusal(settings.catalog_properties, exc) from exc


def refusals() -> tuple[type[Exception], ...]:
    """PyIceberg's errors for a refusal: the OAuth2 server's (``OAuthError``), the
    catalog's 401 (``UnauthorizedError``), 419 (``AuthorizationExpiredError``) and
    403 (``ForbiddenError``).  Imported when asked: PyIceberg loads only for Iceberg."""
    from pyiceberg.exceptions import (
        AuthorizationExpiredError,
        ForbiddenError,
        OAuthError,
        UnauthorizedError,
    )

    return (OAuthError, UnauthorizedError, AuthorizationExpiredError, ForbiddenError)


def refusal(properties: Mapping[str, str], exc: BaseException,
            operation: str | None = None) -> AuthenticationError:
    """The AuthenticationError for ``exc``, one of :func:`refusals`, from the catalog
    that ``properties`` configure (its URI shown, never its token or credential).

    ``operation``: what the catalog refused (``commit to table ns.users``), when
    it was a call of a loaded catalog rather than loading it.
    """
    from pyiceberg.exceptions import ForbiddenError, OAuthError

    if isinstance(exc, OAuthError):  # only the token endpoint answers in OAuth2's words
        field = "credential"
        what = ("the OAuth2 server at "
                f"{properties.get('oauth2-server-uri') or properties.get('uri')} refused "
                "the client credential")
    else:
        field = "token" if "token" in properties else "credential"
        given = field if field in properties else "no credential or token"
        request = "the request" if operation is None else operation
        what = (f"the Iceberg REST catalog at {properties.get('uri')} refused {request} "
                f"({'forbidden' if isinstance(exc, ForbiddenError) else 'unauthorized'}; "
                f"{given} given)")
    if operation is not None and isinstance(exc, OAuthError):
        what = f"{what} (renewing its token for {operation})"
    return AuthenticationError(f"{what}: {type(exc).__name__}: {exc}",
                               field=f"destination.config.catalog.{field}")


def file_io_properties(s3: S3Access) -> dict[str, str]:
    """PyIceberg's S3 FileIO properties for ``s3`` (only what is set: the rest is the
    default AWS credential chain's, as for pyarrow on the executors)."""
    from pyiceberg.io import (
        S3_ACCESS_KEY_ID,
        S3_ENDPOINT,
        S3_FORCE_VIRTUAL_ADDRESSING,
        S3_REGION,
        S3_SECRET_ACCESS_KEY,
        S3_SESSION_TOKEN,
    )

    # An S3-compatible server is not asked for its bucket's region (as for pyarrow
    # on the executors: _table_files/_store.py).
    region = s3.region or ("us-east-1" if s3.endpoint else None)
    pairs = ((S3_ENDPOINT, s3.endpoint), (S3_REGION, region),
             (S3_ACCESS_KEY_ID, s3.access_key), (S3_SECRET_ACCESS_KEY, s3.secret_key),
             (S3_SESSION_TOKEN, s3.session_token))
    properties = {key: value for key, value in pairs if value}
    if s3.path_style is not None:
        properties[S3_FORCE_VIRTUAL_ADDRESSING] = "false" if s3.path_style else "true"
    return properties


def ensure_namespace(catalog: Catalog, namespace: str) -> None:
    """Create ``namespace`` unless it exists (another process may create it meanwhile).

    Looked up first, not created and let fail: a REST catalog may grant a token
    the namespace's tables but not the creation of namespaces (Polaris, Unity),
    and refuses the attempt (403) even when the namespace exists.
    """
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    if catalog.namespace_exists(namespace):
        return
    with contextlib.suppress(NamespaceAlreadyExistsError):
        catalog.create_namespace(namespace)


def load_table(catalog: Catalog, identifier: str) -> Table | None:
    """The table ``identifier``, or None when there is none."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        return catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def with_name_mapping(table: Table) -> Table:
    """``table``, with a name mapping: the tasks' files carry no Iceberg field ids.

    Schema changes through PyIceberg keep the mapping up to date afterwards.
    """
    if table.metadata.name_mapping() is None:
        with table.transaction() as tx:
            tx.set_properties(
                {NAME_MAPPING_PROPERTY: table.schema().name_mapping.model_dump_json()})
        table = table.refresh()
    return table


def add_columns(table: Table, columns: pa.Schema) -> Table:
    """``table`` with ``columns`` (none of which it has) added, in one commit."""
    if len(columns) == 0:
        return table
    with table.update_schema() as update:
        update.union_by_name(columns)
    return table.refresh()


def check(settings: IcebergSettings, s3: S3Access | None = None) -> None:
    """Prove the catalog reachable and writable: create, then drop, a scratch table.

    In the configured namespace (created if missing), so a catalog that lets this
    user write only there still passes.  The scratch table's metadata file is
    removed too (dropping leaves it behind), on S3 through the table's FileIO.
    """
    catalog = load(settings, s3)
    scratch = f"{settings.namespace}._headwater_check_{uuid.uuid4().hex[:12]}"
    with refused_as_authentication(settings):  # a token may read but not write
        ensure_namespace(catalog, settings.namespace)
        table = catalog.create_table(scratch, schema=pa.schema([pa.field("ok", pa.bool_())]))
        catalog.drop_table(scratch)
    folder = local_path(table.location())
    if folder is not None:  # dropping leaves its metadata file behind
        shutil.rmtree(folder, ignore_errors=True)
    elif s3 is not None and s3_bucket_and_key(table.location()) is not None:
        # Its metadata file, and the folder markers pyarrow's S3 filesystem puts.
        fs, prefix = TableFolder.on_s3(table.location(), s3).filesystem()
        with contextlib.suppress(OSError):
            fs.delete_dir(prefix)


__all__ = ["NAME_MAPPING_PROPERTY", "add_columns", "check", "ensure_namespace",
           "file_io_properties", "load", "load_table", "refusal", "refusals",
           "refused_as_authentication",
           "with_name_mapping"]
