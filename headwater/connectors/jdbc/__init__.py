"""The built-in ``jdbc`` source: any database with a JDBC driver on Maven Central."""

from headwater.connectors.jdbc._source import JdbcSource, JdbcStream

__all__ = ["JdbcSource", "JdbcStream"]
