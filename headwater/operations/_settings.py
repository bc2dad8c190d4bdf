"""Where a command or the web page finds the metadata store, the embedded home, and
the Spark settings of a connection: one answer for ``headwater sync``, ``serve``
and ``ui``, so the page reads the store the CLI writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.config import (
    ConnectionConfig,
    register_secrets,
    register_spark_conf_secrets,
    uri_passwords,
)
from headwater.errors import ConfigError

if TYPE_CHECKING:
    from headwater.engine import SparkSettings
    from headwater.errors import StoreMissingError
    from headwater.metadata_store import MetadataStore

STORE_ENV = "HEADWATER_METADATA_STORE"
HOME_ENV = "HEADWATER_HOME"


def home() -> Path:
    """Where the embedded defaults live: metadata store, logs (``./.headwater``)."""
    return Path(os.environ.get(HOME_ENV) or ".headwater")


def store_url(connection: ConnectionConfig | None = None, explicit: str | None = None, *,
              create: bool = True) -> str:
    """The store of ``connection``: ``explicit``, else its file's ``metadata_store``, else
    ``$HEADWATER_METADATA_STORE``, else the embedded SQLite file under :func:`home` (whose
    folder is made unless ``create`` is false: a reader makes nothing)."""
    named = explicit or _named_store(connection)
    if named:
        return named
    path = home() / "headwater.db"
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _named_store(connection: ConnectionConfig | None) -> str | None:
    """The store the connection file or the environment names (None: the embedded one)."""
    if connection is not None and connection.metadata_store:
        return connection.metadata_store
    return os.environ.get(STORE_ENV) or None


def check_store_url(connection: ConnectionConfig) -> None:
    """Refuse (MetadataStoreError) the store ``connection`` would sync into when no
    installed driver reads its URL, opening nothing and creating no folder (``check`` and
    ``validate``; the embedded default always passes)."""
    from headwater.metadata_store import MetadataStore

    named = _named_store(connection)
    if named:
        MetadataStore.check_url(named)


def open_store(url: str, *, create: bool = True) -> MetadataStore:
    """The metadata store at ``url``; its password is masked from here on (a driver's
    error may quote it without the URL around it).  ``create=False``: to be read only
    (the page, ``/metrics``): a missing SQLite file is not created, so a wrong path
    reads as an error, never as an empty, healthy store."""
    from headwater.metadata_store import MetadataStore

    register_secrets(uri_passwords(url))
    return MetadataStore(url, create=create)


def open_store_to_read(url: str) -> MetadataStore:
    """The store at ``url`` for a command that only reads it (``runs``, ``state show``,
    ``airbyte state export``): nothing is created or migrated, as the page and ``/metrics``
    open it.  A SQLite file that does not exist is refused (StoreMissingError, exit 2,
    naming the path) rather than made empty: an empty store would answer "no runs" for a
    mistyped path or the wrong working directory."""
    store = open_store(url, create=False)
    if store.missing:
        raise _missing(store, "no sync has written it yet, or the path is wrong")
    return store


def open_store_to_change(url: str, command: str) -> MetadataStore:
    """The store at ``url`` for ``command``, which writes to a store a sync has made but
    does not start one (``state reset``, ``state import``, ``replay``, ``backfill``...).

    A SQLite file that does not exist is refused (StoreMissingError, exit 2, naming the
    path), and neither it nor its folder is made: a reset or an import into a new empty
    store at a mistyped path would report success while the real store stays as it was,
    and a backfill there would number its commits from 0 again.  An existing store is
    opened as a sync opens it (migrated to this release's layout if older).  Only
    ``headwater sync`` (and what runs one: ``serve``, the page) starts a store.
    """
    probe = open_store(url, create=False)
    missing = probe.missing
    probe.close()
    if missing:
        raise _missing(probe, f"{command} changes a store a sync has made and starts none: "
                              "the path is wrong, or no sync has run yet")
    return open_store(url)


def _missing(store: MetadataStore, why: str) -> StoreMissingError:
    from headwater.errors import StoreMissingError

    return StoreMissingError(
        f"no metadata store at {store.url}: {why} (it comes from --store, the connection "
        f"file's metadata_store, ${STORE_ENV}, else ${HOME_ENV}/headwater.db, ./.headwater "
        f"by default)")


def spark_conf(pairs: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` pairs (``--conf``) as a dict."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--conf expects KEY=VALUE, got {pair!r}", field="--conf")
        conf[key.strip()] = value
    register_spark_conf_secrets(conf)
    return conf


def spark_settings(config: ConnectionConfig, master: str | None = None,
                   remote: str | None = None, conf: list[str] | None = None) -> SparkSettings:
    """The Spark settings of a command: its options over the connection file's ``spark``."""
    from headwater.engine import SparkSettings

    file_spark = config.spark
    return SparkSettings(
        master=master or (file_spark.master if file_spark else None),
        remote=remote or (file_spark.remote if file_spark else None),
        conf={**(file_spark.conf if file_spark else {}), **spark_conf(conf)},
        app_name=f"headwater-{config.name}",
        jvm_log_path=home() / "logs" / "spark.log",
    )


def shared_session_settings(config: ConnectionConfig) -> SparkSettings:
    """The Spark settings of a sync run in a process whose one session serves every
    connection (``serve``, the web page): the connection file's, and a session that does
    not hold them refuses the sync rather than run it with another connection's."""
    from dataclasses import replace

    return replace(spark_settings(config), refuse_unapplied=True)
