"""The ``files`` destination: Parquet, JSON Lines or CSV files, made visible by manifests.

``read_table(path, stream)`` reads a stream's table back with pyarrow alone, as
any reader following the manifests does (``docs/destinations/files.md``).
"""

from headwater.destinations.files._destination import FilesDestination
from headwater.destinations.files._read import read_table

__all__ = ["FilesDestination", "read_table"]
