"""Delta tables by name: each stream's table registered in the Spark session's catalog.

A table always lives at its path (``<path>/<stream>``), where both writers
(Spark's and the tasks' delta-rs commits) reach it without any catalog.  With
``database`` in the destination's config the table is *also* registered as
``<database>.<table_prefix><stream>``, an external table over that location::

    CREATE DATABASE IF NOT EXISTS raw;
    CREATE TABLE IF NOT EXISTS raw.hw_users USING delta LOCATION '/lake/users';

so SQL users, BI tools and other Spark jobs find it by name.  The registration
is catalog metadata only: nothing is written to the table, and the schema and
layout stay in the Delta log (a Hive metastore keeps a placeholder schema for a
Delta table; Delta reads the real one from the log).  It is done with Spark SQL
on the driver, so it reaches whichever catalog the session's settings
configure: the in-memory one by default (the name lasts as long as the
session, and every sync registers it again), or a Hive metastore
(``spark.sql.catalogImplementation=hive``), where it outlives the session.

Registering on every sync (not only when the table is created) keeps it
idempotent and repairs a catalog that was reset; a name already taken by a
table at another location is an error, never re-pointed: that table may be
someone else's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.destinations.delta._sql import literal, quote

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What ``database`` may be: a plain identifier, which every catalog (the Hive
#: metastore lowercases and allows only these) accepts without quoting.
IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: What ``table_prefix`` may be: the same characters, possibly none.
PREFIX_PATTERN = r"^[A-Za-z0-9_]*$"

#: Streams prepare their tables side by side, and ``CREATE DATABASE IF NOT EXISTS``
#: run by two threads at once can still fail in the second (the metastore's
#: check and insert are not one step), so registrations take turns.
_REGISTER_LOCK = threading.Lock()


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalog holds under a table's name."""

    location: str
    provider: str


def register(spark: SparkSession, name: str, location: str) -> None:
    """Register the Delta table at ``location`` as ``name`` (``database.table``), idempotently.

    Raises:
        ValueError: ``name`` is taken by a table at another location, or by one
            that is not a Delta table (the message names both locations).
    """
    database, table = name.split(".", 1)
    qualified = f"{quote(database)}.{quote(table)}"
    with _REGISTER_LOCK:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")
        found = entry(spark, database, table)
        if found is None:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {qualified} USING delta "
                      f"LOCATION {literal(location)}")
            # Another process may have registered the name between the look and
            # the create (IF NOT EXISTS then does nothing): look again.
            found = entry(spark, database, table)
            if found is None:
                raise ValueError(f"registering {name} for the table at {location} did not "
                                 "show in the catalog")
    if same_location(found.location, location) and found.provider.lower() == "delta":
        return
    raise ValueError(
        f"the catalog's {name} names a table at {found.location or '(no location)'} "
        f"(provider {found.provider}), not the stream's Delta table at {location}; it is "
        "left as it is: drop it (or choose another database or table_prefix) to register "
        "the stream's table under that name")


def entry(spark: SparkSession, database: str, table: str) -> CatalogEntry | None:
    """The location and provider the catalog records for ``database.table`` (None: no table).

    Read from ``DESCRIBE TABLE EXTENDED`` (its ``Location`` and ``Provider``
    rows), which every catalog answers, Spark Connect included.
    """
    qualified = f"{quote(database)}.{quote(table)}"
    if not spark.catalog.tableExists(qualified):
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {qualified}").collect()
    found: dict[str, str] = {}
    detailed = False  # the columns come first, and a column may be called Location
    for row in rows:
        key = str(row["col_name"] or "").strip()
        if key == "# Detailed Table Information":
            detailed = True
        elif detailed:
            found.setdefault(key, str(row["data_type"] or "").strip())
    return CatalogEntry(location=found.get("Location", ""),
                        provider=found.get("Provider", "") or "unknown")


def same_location(recorded: str, location: str) -> bool:
    """Whether the catalog's ``recorded`` location is ``location``.

    A catalog records a local path as a URI (``file:/lake/users`` or
    ``file:///lake/users``) while the destination names it ``/lake/users``.
    """
    return _normalised(recorded) == _normalised(location)


def _normalised(location: str) -> str:
    if location.startswith("file:"):
        location = "/" + location[len("file:"):].lstrip("/")
    return location.rstrip("/")


__all__ = ["IDENTIFIER_PATTERN", "PREFIX_PATTERN", "CatalogEntry", "entry", "register",
           "same_location"]
