"""Apache Iceberg destination (tasks write Parquet, PyIceberg commits one snapshot each)."""

from headwater.destinations.iceberg._destination import IcebergDestination

__all__ = ["IcebergDestination"]
