"""The object storage source's config: one pydantic model gives the spec and the parsing.

Credentials are optional: when absent, each fsspec implementation looks in the
environment as its SDK does (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_PROFILE`` for S3, application default credentials for GCS,
``AZURE_STORAGE_*`` for Azure).  Every credential field is a secret
(``airbyte_secret``), so it is masked in logs, errors, run history and ``--json``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, WithJsonSchema, model_validator

__all__ = [
    "AvroFormat",
    "CsvFormat",
    "JsonlFormat",
    "ListingDiscovery",
    "NotificationDiscovery",
    "ObjectStorageConfig",
    "ParquetFormat",
    "StreamConfig",
]

MIB = 1024 * 1024


#: A credential: never printed (``SecretStr``) and masked everywhere (``airbyte_secret``).
_Secret = Annotated[SecretStr | None, WithJsonSchema({"type": "string", "airbyte_secret": True})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CsvFormat(_Model):
    """CSV: pyarrow's streaming reader with these options."""

    type: Literal["csv"] = "csv"
    delimiter: str = Field(",", min_length=1, max_length=1)
    quote_char: str | None = Field('"', description="null: values are never quoted.")
    header: bool = Field(True, description="The first row holds the column names.")
    column_names: list[str] | None = Field(
        None, description="Column names when there is no header (default f0, f1, ...).")
    encoding: str = Field("utf-8", description="Text encoding of the objects.")
    skip_rows: int = Field(0, ge=0, description="Rows to skip before the header.")
    newlines_in_values: bool = Field(
        False,
        description="Quoted values may hold line breaks. Such objects are never split by "
                    "byte range (a split could start inside a value).")

    @model_validator(mode="after")
    def _names_without_a_header(self) -> CsvFormat:
        # The reader takes column_names only for objects without a header: with one, the
        # header names the columns, and column_names would be accepted and ignored.
        if self.column_names is not None and self.header:
            raise ValueError("column_names names the columns of objects without a header, "
                             "and header is true (the header names them); set header: false, "
                             "or remove column_names")
        return self


class JsonlFormat(_Model):
    """JSON Lines: one JSON object per line."""

    type: Literal["jsonl"] = "jsonl"


class ParquetFormat(_Model):
    type: Literal["parquet"] = "parquet"


class AvroFormat(_Model):
    type: Literal["avro"] = "avro"


Format = Annotated[CsvFormat | JsonlFormat | ParquetFormat | AvroFormat,
                   Field(discriminator="type")]


class ListingDiscovery(_Model):
    """New objects are found by listing the prefix in key order (the default)."""

    mode: Literal["listing"] = "listing"


class NotificationDiscovery(_Model):
    """New objects are found by the S3 event notifications of an SQS(-compatible) queue;
    see :mod:`._notifications`.  Credentials are the source's ``aws_*`` ones."""

    mode: Literal["notifications"]
    queue_url: str = Field(
        ..., min_length=1,
        description="The SQS queue the bucket sends its s3:ObjectCreated:* events to (one "
                    "queue per stream: messages of other buckets, keys or events are deleted).")
    endpoint_url: str | None = Field(
        None, description="The queue service's endpoint (default: the source's endpoint_url).")
    region: str | None = Field(None, description="The queue's region (default: the source's).")
    max_messages: int = Field(
        1_000, ge=1,
        description="Messages received, at most, to plan one run (their receipt handles, "
                    "a few hundred bytes each on SQS, stay in the state until deleted).")
    wait_seconds: int = Field(
        1, ge=0, le=20, description="Long-poll wait of each receive; planning stops at the "
                                    "first receive that returns nothing.")
    visibility_timeout: int | None = Field(
        None, ge=0, le=43_200,
        description="Seconds a received message stays hidden (default: the queue's). A "
                    "message not deleted by then comes back and is skipped if its object "
                    "was read.")


Discovery = Annotated[ListingDiscovery | NotificationDiscovery, Field(discriminator="mode")]


class StreamConfig(_Model):
    """One stream: the objects under ``prefix`` whose key matches one of ``globs``."""

    name: str = Field(..., min_length=1)
    globs: list[str] = Field(
        ["**"], min_length=1,
        description="Glob patterns on the object key relative to url ('**' spans folders).")
    prefix: str = Field("", description="Only list keys that start with this prefix.")
    format: Format = Field(default_factory=JsonlFormat)
    compression: Literal["infer", "none", "gzip", "bzip2", "zstd"] = Field(
        "infer", description="'infer' goes by the key's suffix: .gz, .bz2, .zst.")
    json_schema: dict[str, Any] | None = Field(
        None, alias="schema",
        description="JSON Schema properties that override the inferred ones, by column.")
    primary_key: list[str] = Field(default_factory=list)
    infer_records: int = Field(
        1000, ge=1, description="Records sampled (from the first objects) to infer the schema.")
    split_bytes: int = Field(
        128 * MIB, ge=1,
        description="Uncompressed CSV/JSONL objects and Parquet objects larger than this are "
                    "read as several partitions (byte ranges, row groups).")
    objects_per_partition: int = Field(
        500, ge=1,
        description="Consecutive small objects (in key order) read whole share one partition, "
                    "up to this many objects and split_bytes bytes: a prefix of a million "
                    "tiny objects is planned and read as a few thousand partitions.")
    changed_objects: Literal["reread", "ignore"] = Field(
        "reread",
        description="An object already read that changed since (same key, new etag or "
                    "size/mtime): 'reread' reads it again as a whole and appends its records, "
                    "'ignore' leaves it.")
    discovery: Discovery = Field(
        default_factory=ListingDiscovery,
        description="How new objects are found: by listing (mode: listing) or from an S3 "
                    "event queue (mode: notifications, queue_url: ...).")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ObjectStorageConfig(_Model):
    """Where the objects are and how to reach them."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="Object storage source",
        json_schema_extra={"description": (
            "Objects in S3 (and S3-compatible stores), GCS, Azure or a local folder, read in "
            "key order as CSV, JSON Lines, Parquet or Avro (optionally gzip, bzip2 or zstd).")})

    url: str = Field(
        ..., min_length=1,
        description="Root of the objects: s3://bucket/prefix, gs://..., az://container/..., "
                    "file:///path or a local path.")
    streams: list[StreamConfig] = Field(..., min_length=1)
    recent_keys: int = Field(
        10_000, ge=1,
        description="How many processed keys the state remembers above its floor key; an "
                    "object that arrives with a key below the floor is not seen.")
    endpoint_url: str | None = Field(
        None, description="The store's endpoint when it is not the cloud's own: an "
                          "S3-compatible server (MinIO, ...) for s3://, a GCS emulator or "
                          "private endpoint (JSON API) for gs://.")
    region: str | None = Field(None, description="S3 region.")
    aws_access_key_id: _Secret = Field(
        None, description="S3 access key id (default: from the environment).")
    aws_secret_access_key: _Secret = Field(
        None, description="S3 secret access key (default: from the environment).")
    aws_session_token: _Secret = Field(None, description="S3 session token.")
    gcs_token: _Secret = Field(
        None, description="GCS token: a service-account JSON file path, an OAuth access "
                          "token or 'anon'.")
    azure_account_name: str | None = None
    azure_account_key: _Secret = Field(None, description="Azure storage account key.")
    azure_connection_string: _Secret = Field(
        None, description="Azure storage connection string (it also names the endpoint: "
                          "BlobEndpoint=... for Azurite or a private endpoint).")

    @property
    def store(self) -> str | None:
        """The kind of store the url is in (``s3``, ``gs``, ``az``), None for a local
        folder or another fsspec protocol (whose options nothing here sets)."""
        protocol = self.url.split("://", 1)[0] if "://" in self.url else "file"
        return _STORES.get(protocol)

    def settings_of_other_stores(self) -> list[str]:
        """The store settings given that the url's store does not take, in spec order:
        :meth:`storage_options` would leave them out, silently."""
        taken = _STORE_SETTINGS.get(self.store or "", ())
        return [name for name in type(self).model_fields
                if any(name in names for names in _STORE_SETTINGS.values())
                and name not in taken and _given(getattr(self, name))]

    def storage_options(self) -> dict[str, Any]:
        """fsspec options for the url's protocol (only what was configured)."""
        def plain(value: SecretStr | None) -> str | None:
            return value.get_secret_value() if value is not None else None

        options: dict[str, Any] = {}
        protocol = self.url.split("://", 1)[0] if "://" in self.url else "file"
        if protocol in ("s3", "s3a"):
            pairs = {"key": plain(self.aws_access_key_id),
                     "secret": plain(self.aws_secret_access_key),
                     "token": plain(self.aws_session_token)}
            options.update({k: v for k, v in pairs.items() if v is not None})
            client = {k: v for k, v in (("endpoint_url", self.endpoint_url),
                                         ("region_name", self.region)) if v}
            if client:
                options["client_kwargs"] = client
        elif protocol in ("gs", "gcs"):
            if self.gcs_token is not None:
                options["token"] = plain(self.gcs_token)
            if self.endpoint_url:
                options["endpoint_url"] = self.endpoint_url
        elif protocol in ("az", "abfs", "abfss"):
            pairs = {"account_name": self.azure_account_name,
                     "account_key": plain(self.azure_account_key),
                     "connection_string": plain(self.azure_connection_string)}
            options.update({k: v for k, v in pairs.items() if v is not None})
        return options


#: The store of each url protocol :meth:`ObjectStorageConfig.storage_options` sets options of.
_STORES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "az": "az", "abfs": "az",
           "abfss": "az"}
#: The config fields each store takes (S3's endpoint and region serve its SQS queue too).
_STORE_SETTINGS: dict[str, tuple[str, ...]] = {
    "s3": ("endpoint_url", "region", "aws_access_key_id", "aws_secret_access_key",
           "aws_session_token"),
    "gs": ("endpoint_url", "gcs_token"),
    "az": ("azure_account_name", "azure_account_key", "azure_connection_string"),
}


def _given(value: Any) -> bool:
    """Whether a setting holds something (an empty ``${VAR:-}`` is nothing)."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is not None and value != ""
