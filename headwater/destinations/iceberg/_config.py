"""The Iceberg destination's config: its JSON Schema and what PyIceberg is handed.

Why a module of its own: the spec and its resolution (defaults that depend on
other fields, the catalog properties PyIceberg takes) are plain data, tested
without a catalog.  The embedded default is ``type: hadoop``, our own path-based
catalog in Apache Iceberg's Hadoop layout (``_hadoop.py``; PyIceberg has none):
the folder alone is the catalog, as with Delta, readable by Spark's and Trino's
Hadoop catalogs.  A warehouse synced before it existed keeps its SQL catalog in
a SQLite file inside the folder (:func:`default_catalog_type`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.config import read_database_url, register_secrets, uri_passwords
from headwater.destinations._table_files._store import s3_bucket_and_key
from headwater.errors import ConfigError

#: The warehouse folder when the config names none (relative to the working directory).
DEFAULT_WAREHOUSE = "warehouse"
DEFAULT_NAMESPACE = "headwater"
#: The catalog's name: a SQL catalog keys its rows by it, so a Spark or PyIceberg
#: reader of the same database must use the same name to see the tables.
DEFAULT_CATALOG_NAME = "headwater"
#: The SQLite file of the embedded catalog, inside the warehouse folder.
CATALOG_FILE = "catalog.db"
#: How PyIceberg's ``load_catalog`` is told to make our path-based catalog.
HADOOP_CATALOG_IMPL = "headwater.destinations.iceberg._hadoop.HadoopCatalog"
#: PyIceberg's REST client, as Headwater runs it (``_rest.py``).
REST_CATALOG_IMPL = "headwater.destinations.iceberg._rest.HeadwaterRestCatalog"
#: The catalog settings only a REST catalog takes.
REST_ONLY = ("credential", "token", "warehouse", "oauth2_server_uri", "scope")

_FILE_SCHEME = "file://"


def spec() -> dict[str, Any]:
    """JSON Schema of the destination's config (``destination.config``)."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Apache Iceberg destination",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "catalog": {
                "type": "object",
                "description": "Where the tables are registered. sql: a SQLAlchemy URI "
                "(default: a SQLite file catalog.db in the warehouse folder); rest: an "
                "Iceberg REST catalog; hadoop: the warehouse folder itself, in Apache "
                "Iceberg's Hadoop layout (<warehouse>/<namespace>/<table>, "
                "metadata/v<N>.metadata.json and version-hint.text).",
                "additionalProperties": False,
                "properties": {
                    # No "default": the default depends on the warehouse folder
                    # (default_catalog_type says how), so it is not filled in.
                    "type": {"type": "string", "enum": ["sql", "rest", "hadoop"],
                             "description": "Default: hadoop, or sql when a uri is given "
                             "or the warehouse folder already holds catalog.db."},
                    "name": {"type": "string", "minLength": 1,
                             "description": "The catalog's name (default headwater); readers "
                             "of a SQL catalog must use the same one."},
                    "uri": {"type": "string", "minLength": 1,
                            "description": "sql: sqlite:///path or "
                            "postgresql+psycopg2://user:password@host/db; rest: the "
                            "server's URL."},
                    "credential": {"type": "string", "airbyte_secret": True,
                                   "pattern": "^[^:]+:.+$",
                                   "description": "rest: OAuth2 client credential "
                                   "(client_id:client_secret), exchanged for a token at "
                                   "oauth2_server_uri."},
                    "token": {"type": "string", "airbyte_secret": True,
                              "description": "rest: a bearer token."},
                    "warehouse": {"type": "string", "minLength": 1,
                                  "description": "rest: the warehouse the server picks the "
                                  "catalog by, sent as GET /v1/config?warehouse=... (Polaris: "
                                  "the catalog's name; Lakekeeper: the warehouse's; Unity: the "
                                  "catalog's). Not where files go: that is the server's."},
                    "oauth2_server_uri": {"type": "string", "pattern": "^https?://",
                                          "description": "rest: the OAuth2 token endpoint the "
                                          "credential is exchanged at (default: the catalog's "
                                          "own <uri>/v1/oauth/tokens)."},
                    "scope": {"type": "string", "minLength": 1,
                              "description": "rest: the OAuth2 scope asked for with the "
                              "credential (default: catalog; Polaris: PRINCIPAL_ROLE:ALL)."},
                },
                "allOf": [{"if": {"properties": {"type": {"const": "rest"}},
                                  "required": ["type"]},
                           "then": {"required": ["uri"]}}],
            },
            "warehouse": {
                "type": "string", "minLength": 1, "default": DEFAULT_WAREHOUSE,
                "description": "Local folder (or file:// URI) the tables' files go to, "
                "or an S3 location (s3a://bucket/prefix, reached with the connection's "
                "spark.hadoop.fs.s3a.* settings; needs catalog type sql with a uri, or "
                "rest); relative paths resolve against the working directory.",
            },
            "namespace": {"type": "string", "minLength": 1, "default": DEFAULT_NAMESPACE,
                          "pattern": r"^[^.]+$",
                          "description": "The namespace holding one table per stream."},
            "table_prefix": {"type": "string", "default": "", "pattern": r"^[^.]*$",
                             "description": "Put before each stream's name to name its table."},
        },
    }


@dataclass(frozen=True)
class IcebergSettings:
    """The config, resolved: absolute warehouse, catalog properties for PyIceberg."""

    catalog_type: str
    catalog_name: str
    #: Properties for ``pyiceberg.catalog.load_catalog`` (secrets included: never log them).
    catalog_properties: Mapping[str, str]
    #: The warehouse as a local path (the tasks write their files under it), or its
    #: ``s3://bucket/prefix`` when it is on S3 (then :attr:`object_store` too).
    warehouse_folder: str
    namespace: str
    table_prefix: str
    #: ``s3://bucket/prefix`` of a warehouse on S3 (None: a local folder).
    object_store: str | None = None

    @property
    def bucket(self) -> str | None:
        """The S3 bucket of the warehouse (None: a local folder)."""
        return None if self.object_store is None else _bucket(self.object_store)

    def reaches(self, location: str) -> bool:
        """Whether the tasks can write a table at ``location``: a local folder for a local
        warehouse, the warehouse's bucket for one on S3 (its S3A settings are the ones read)."""
        if self.object_store is None:
            return local_path(location) is not None
        parts = s3_bucket_and_key(location)
        return parts is not None and parts[0] == self.bucket

    def identifier(self, stream: str) -> str:
        """The table of ``stream``: ``<namespace>.<prefix><stream>``."""
        return f"{self.namespace}.{self.table_prefix}{stream}"


def default_catalog_type(catalog: Mapping[str, Any], warehouse: str) -> str:
    """The catalog kind when the connection names none.

    ``hadoop``: the folder alone is the catalog, as a Delta folder is the table
    (issue 19's embedded default).  But ``sql`` when a ``uri`` is given (a
    database names itself), and when the warehouse already holds ``catalog.db``:
    tables synced before the hadoop catalog existed are registered there, and a
    hadoop catalog over the same folder would not see them (it would create
    new tables over their folders).
    """
    if catalog.get("uri"):
        return "sql"
    if "://" not in warehouse and (Path(warehouse) / CATALOG_FILE).exists():
        return "sql"
    return "hadoop"


def object_store(warehouse: str, kind: str, catalog: Mapping[str, Any]) -> str | None:
    """``s3://bucket/prefix`` of a warehouse on S3 (``s3a://`` or ``s3://``), else None.

    Refused with a ConfigError naming the field: a ``hadoop`` catalog there (it
    commits by creating ``v<N>.metadata.json`` only if it does not exist, which
    this catalog does with a hard link on the local filesystem; on S3 a plain put
    of the same name replaces a concurrent writer's version, and Java's
    ``HadoopCatalog``, which may write the same table, renames rather than
    putting with ``If-None-Match``), and a ``sql`` catalog with no ``uri`` (its
    default SQLite file lives in a local warehouse folder).
    """
    parts = s3_bucket_and_key(warehouse)
    if parts is None:
        return None
    if kind == "hadoop":
        raise ConfigError(
            f"warehouse {warehouse!r} is on S3, where a hadoop catalog cannot commit safely "
            "(it creates each table version only if absent, which a local folder does "
            "atomically and an object store does not, so two writers could overwrite each "
            "other's version): use catalog "
            "type sql with a uri (PostgreSQL, or a SQLite file on a local disk) or rest, "
            "whose compare-and-swap of the metadata pointer makes commits safe",
            field="destination.config.catalog.type")
    if kind == "sql" and not catalog.get("uri"):
        raise ConfigError(
            f"warehouse {warehouse!r} is on S3, so the SQL catalog's default SQLite file "
            "(catalog.db in a local warehouse) has nowhere to live: give the catalog a uri "
            "(postgresql+psycopg2://..., or sqlite:///a/local/path.db)",
            field="destination.config.catalog.uri")
    bucket, key = parts
    return f"s3://{bucket}/{key}" if key else f"s3://{bucket}"


def _bucket(location: str) -> str | None:
    parts = s3_bucket_and_key(location)
    return None if parts is None else parts[0]


def _warehouse_path(config: Mapping[str, Any]) -> str:
    """The warehouse as written, a ``file://`` URI as its path."""
    warehouse = str(config.get("warehouse") or DEFAULT_WAREHOUSE)
    return warehouse[len(_FILE_SCHEME):] if warehouse.startswith(_FILE_SCHEME) else warehouse


def resolve(config: Mapping[str, Any]) -> IcebergSettings:
    """The settings ``config`` (validated against :func:`spec`) describes."""
    catalog = dict(config.get("catalog") or {})
    kind = str(catalog.get("type") or default_catalog_type(catalog, _warehouse_path(config)))
    for key in ("uri", *REST_ONLY) if kind == "hadoop" else REST_ONLY if kind == "sql" else ():
        if catalog.get(key):
            why = ("the warehouse folder is the catalog" if kind == "hadoop"
                   else "it is a REST catalog's setting")
            raise ConfigError(f"a {kind} catalog takes no {key}: {why}",
                              field=f"destination.config.catalog.{key}")
    warehouse = _warehouse_path(config)
    store = object_store(warehouse, kind, catalog)
    if store is None and "://" in warehouse:
        raise ConfigError(
            f"warehouse {warehouse!r} is neither a local folder nor on S3: the tasks write "
            "the tables' Parquet files themselves, to a local folder (a path, or a file:// "
            "URI) or an S3 (or S3-compatible) bucket (s3a://bucket/prefix)",
            field="destination.config.warehouse")
    folder = store or str(Path(warehouse).resolve())
    where = store or f"file://{folder}"
    name = str(catalog.get("name") or DEFAULT_CATALOG_NAME)
    properties: dict[str, str] = {"type": kind}
    if kind == "hadoop":  # PyIceberg knows no such type: it is told the class to make
        properties = {"py-catalog-impl": HADOOP_CATALOG_IMPL, "warehouse": where}
    elif kind == "sql":
        properties["uri"] = str(catalog.get("uri") or f"sqlite:///{folder}/{CATALOG_FILE}")
        # A database URI may hold a password (postgresql+psycopg2://user:pw@host/db):
        # masked wherever it might show (an error quoting the URI, a log line), found by
        # its place whether or not the URI parses (a misspelt scheme is quoted back).
        register_secrets(uri_passwords(properties["uri"]))
        _, problem = read_database_url(properties["uri"])
        if problem is not None:  # sync would fail on it when it first loads the catalog
            raise ConfigError(f"the sql catalog's uri: {problem}",
                              field="destination.config.catalog.uri")
        properties["warehouse"] = where
    else:
        if not catalog.get("uri"):
            raise ConfigError("a rest catalog needs its uri",
                              field="destination.config.catalog.uri")
        properties = rest_properties(catalog)
    return IcebergSettings(catalog_type=kind, catalog_name=name,
                           catalog_properties=properties, warehouse_folder=folder,
                           object_store=store,
                           namespace=str(config.get("namespace") or DEFAULT_NAMESPACE),
                           table_prefix=str(config.get("table_prefix") or ""))


def rest_properties(catalog: Mapping[str, Any]) -> dict[str, str]:
    """PyIceberg's properties for a REST catalog (``catalog`` validated against the spec).

    Made by Headwater's own client class (``_rest.py``: asks for no vended
    credentials, keeps the connection's S3 access on the driver).  Tokens come from
    ``oauth2_server_uri``, by default the catalog's ``<uri>/v1/oauth/tokens``.  The client
    secret is registered as a secret on its own too: an OAuth2 form body or a
    server's message may quote it without its client id.
    """
    properties = {"py-catalog-impl": REST_CATALOG_IMPL, "uri": str(catalog["uri"])}
    for key in ("credential", "token", "warehouse", "oauth2_server_uri", "scope"):
        if catalog.get(key):
            properties[key.replace("_", "-")] = str(catalog[key])
    if "credential" in properties:
        client_secret = properties["credential"].partition(":")[2]
        register_secrets([properties["credential"], client_secret])
    if ("credential" in properties or "token" in properties) \
            and "oauth2-server-uri" not in properties:
        # PyIceberg's default, made explicit: it warns that it will drop the fallback.
        properties["oauth2-server-uri"] = f"{properties['uri'].rstrip('/')}/v1/oauth/tokens"
    return properties


def local_path(location: str) -> str | None:
    """``location`` (a table's location) as a local path, or None when it is not local."""
    if location.startswith(_FILE_SCHEME):
        return location[len(_FILE_SCHEME):]
    return None if "://" in location else location


__all__ = ["DEFAULT_NAMESPACE", "DEFAULT_WAREHOUSE", "HADOOP_CATALOG_IMPL", "REST_CATALOG_IMPL",
           "REST_ONLY", "IcebergSettings", "default_catalog_type", "local_path", "object_store",
           "resolve", "rest_properties", "spec"]
