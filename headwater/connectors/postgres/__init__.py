"""The built-in ``postgres`` source: discover, parallel key-range reads, cursors, CDC."""

from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._source import PostgresSource, PostgresStream

__all__ = ["PostgresConfig", "PostgresSource", "PostgresStream"]
