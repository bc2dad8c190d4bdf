"""The built-in ``rest`` source: HTTP APIs declared in the connection file."""

from headwater.connectors.rest._source import RestSource

__all__ = ["RestSource"]
