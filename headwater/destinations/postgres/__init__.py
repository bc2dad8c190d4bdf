"""The ``postgres`` destination: one table per stream, exactly once (see ``_destination.py``)."""

from headwater.destinations.postgres._destination import WRITER, PostgresDestination

__all__ = ["WRITER", "PostgresDestination"]
