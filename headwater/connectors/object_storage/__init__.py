"""The object storage source: local folders, S3 (and S3-compatible stores), GCS, Azure."""

from headwater.connectors.object_storage._config import ObjectStorageConfig, StreamConfig
from headwater.connectors.object_storage._cursor import ObjectCursor
from headwater.connectors.object_storage._source import ObjectStorageSource, ObjectStream

__all__ = ["ObjectCursor", "ObjectStorageConfig", "ObjectStorageSource", "ObjectStream",
           "StreamConfig"]
