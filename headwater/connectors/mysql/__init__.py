"""The built-in ``mysql`` source (MySQL 8, MariaDB 10.6+): discover, quantile ranges, cursors."""

from headwater.connectors.mysql._config import MySQLConfig
from headwater.connectors.mysql._source import MySQLSource, MySQLStream

__all__ = ["MySQLConfig", "MySQLSource", "MySQLStream"]
