"""The SQL text Headwater hands Spark's JDBC reader: identifiers, literals, predicates.

Spark's JDBC reader takes a partition as a ``WHERE`` text (``predicates``)
and runs planning queries as text (the ``query`` option), with no bind
parameters: Spark's own ``partitionColumn`` splitting writes its bounds into
the SQL the same way.  So every value Headwater puts there is rendered here,
from a value it parsed itself (an ``int``, a ``datetime``, a key read back from
state): integers as digits, text with its quotes doubled (and backslashes
doubled for MySQL and MariaDB, whose default ``sql_mode`` reads them as
escapes), timestamps as the SQL standard's ``TIMESTAMP '...'`` literal (SQL
Server: ``CAST('...' AS DATETIME2)``).  Identifiers are quoted as Spark's
dialects quote them (backticks for MySQL and MariaDB, double quotes else).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

__all__ = ["Dialect"]


class Dialect:
    """How one database's SQL writes names and values, chosen by the URL's prefix."""

    def __init__(self, url: str) -> None:
        self.backticks = url.startswith(("jdbc:mysql:", "jdbc:mariadb:"))
        self.sqlserver = url.startswith("jdbc:sqlserver:")

    def name(self, identifier: str) -> str:
        if self.backticks:
            return "`" + identifier.replace("`", "``") + "`"
        return '"' + identifier.replace('"', '""') + '"'

    def literal(self, value: Any) -> str:
        if isinstance(value, bool):
            raise TypeError("a boolean is not a cursor, key or partition value")
        if isinstance(value, int):
            return str(int(value))
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            text = value.isoformat(sep=" ", timespec="microseconds")
            return f"CAST('{text}' AS DATETIME2)" if self.sqlserver else f"TIMESTAMP '{text}'"
        if isinstance(value, str):
            text = value.replace("'", "''")
            if self.backticks:
                text = text.replace("\\", "\\\\")
            return f"'{text}'"
        raise TypeError(f"no SQL literal for a {type(value).__name__}")

    def in_list(self, column: str, values: Sequence[Any]) -> str:
        """``column IN (...)``, or a condition no row meets when ``values`` is empty."""
        if not values:
            return "1 = 0"
        return f"{self.name(column)} IN ({', '.join(self.literal(v) for v in values)})"

    def range(self, column: str, low: Any, high: Any) -> str:
        """``low <= column < high``; a None bound is open (the outer key ranges)."""
        name = self.name(column)
        parts = ([f"{name} >= {self.literal(low)}"] if low is not None else []) \
            + ([f"{name} < {self.literal(high)}"] if high is not None else [])
        return " AND ".join(parts) or "1 = 1"

    def relation(self, table: str | None, query: str | None) -> str:
        """What follows ``FROM``: the table as written, or the query as a subquery."""
        if query is not None:
            return f"({query}) hw_query"
        assert table is not None
        return table
