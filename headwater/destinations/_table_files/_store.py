"""Where a table's files are: a local folder, or a prefix of an S3 (or S3-compatible)
bucket or an Azure container (Azure: ``_azure.py``, S3: here).

One picklable value names the table for the two libraries of the task path:
pyarrow, which writes the Parquet files on the executors, and delta-rs, which
commits them on the driver.  Spark names the same table ``s3a://bucket/path``;
both libraries name it ``s3://bucket/path`` and take the credentials and
endpoint as options, which :meth:`S3Access.from_hadoop` derives from the
``fs.s3a.*`` settings Spark already has (``spark.hadoop.fs.s3a.*`` in the
connection's ``spark.conf``), so the user configures the store in one place.
What is not set is left to the default AWS credential chain (environment
variables, profile, instance role), which Spark's S3A, pyarrow and delta-rs
all honour.

A local folder is handled with ``os`` calls exactly as before S3 existed here
(a staged manifest is fsynced and renamed into place); on S3 an object appears
whole when its upload completes, so a plain put is already atomic.

Why delta-rs may commit to S3 at all: delta-rs 1.x writes the next
``_delta_log/<version>.json`` with ``If-None-Match: *`` (the store's
conditional write), so of two committers of one version one gets
``412 Precondition Failed``, re-reads the log and retries on the next version,
or fails when the commit that won conflicts with its own (the same ``txn``).
A store without conditional writes would let the second put replace the first
commit, so the destination's ``s3_conditional_writes: false`` keeps such a
store on Spark's writer (``delta/_destination.py``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from headwater.destinations._table_files._azure import AzureAccess, AzureLocation

if TYPE_CHECKING:
    import pyarrow.fs as pafs

#: The schemes of an S3 location: Spark's (``s3a``) and the AWS libraries' (``s3``).
S3_SCHEMES = ("s3a://", "s3://")
_FILE_SCHEME = "file://"

#: The Hadoop S3A settings read, by the name each has under ``fs.s3a.``.
_S3A_KEYS = ("endpoint", "endpoint.region", "access.key", "secret.key", "session.token",
             "path.style.access", "connection.ssl.enabled")

#: S3A credential providers whose credentials pyarrow and delta-rs get too: the keys in
#: the settings (read into :class:`S3Access`), or the default AWS chain's sources
#: (environment, profile, container and instance roles), which all three libraries read.
TRANSLATED_PROVIDERS = frozenset({
    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
    "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider",
    "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
    "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
})


@dataclass(frozen=True)
class S3Access:
    """How to reach one S3 bucket: endpoint, region, keys (None: the default chain's).

    The keys stay out of ``repr``; the destination registers the secret ones
    with the process's masker as soon as it reads them.
    """

    scheme: ClassVar[str] = "s3"

    #: With its scheme (``https://...``); None: AWS's own endpoint for the region.
    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    #: True: path-style requests (``endpoint/bucket/key``); False: virtual-hosted
    #: (``bucket.endpoint/key``); None: each library's default.
    path_style: bool | None = None

    @classmethod
    def from_hadoop(cls, get: Callable[[str], str | None], bucket: str) -> S3Access:
        """The access S3A would use for ``bucket``, from Hadoop settings read through ``get``.

        ``get`` takes a full Hadoop key (``fs.s3a.endpoint``).  A per-bucket
        setting (``fs.s3a.bucket.<bucket>.endpoint``) wins over the general one,
        as in S3A.  An endpoint without a scheme gets ``https://`` unless
        ``fs.s3a.connection.ssl.enabled`` is false.
        """
        def setting(key: str) -> str | None:
            value = get(f"fs.s3a.bucket.{bucket}.{key}") or get(f"fs.s3a.{key}")
            return value.strip() if value and value.strip() else None

        values = {key: setting(key) for key in _S3A_KEYS}
        endpoint = values["endpoint"]
        if endpoint is not None and "://" not in endpoint:
            ssl = (values["connection.ssl.enabled"] or "true").lower() != "false"
            endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
        path_style = values["path.style.access"]
        return cls(endpoint=endpoint.rstrip("/") if endpoint else None,
                   region=values["endpoint.region"], access_key=values["access.key"],
                   secret_key=values["secret.key"], session_token=values["session.token"],
                   path_style=None if path_style is None else path_style.lower() == "true")

    @staticmethod
    def untranslated_providers(get: Callable[[str], str | None], bucket: str) -> list[str]:
        """The credential providers S3A is set to use for ``bucket`` that the task path
        cannot follow (an assumed role, anonymous access, a custom class): empty when
        pyarrow and delta-rs reach the bucket with the credentials S3A would use."""
        listed = (get(f"fs.s3a.bucket.{bucket}.aws.credentials.provider")
                  or get("fs.s3a.aws.credentials.provider") or "")
        names = [name.strip() for name in listed.replace("\n", ",").split(",")]
        return [name for name in names if name and name not in TRANSLATED_PROVIDERS]

    @property
    def secrets(self) -> list[str]:
        """The values to mask wherever text leaves the process."""
        return [v for v in (self.secret_key, self.session_token) if v]

    def delta_rs_options(self, bucket: str) -> dict[str, str]:
        """delta-rs's ``storage_options`` (object_store's ``AWS_*`` keys): only what is set."""
        options: dict[str, str] = {}
        endpoint = self.endpoint
        if endpoint is not None:
            if self.path_style is False:
                # object_store takes a virtual-hosted endpoint with the bucket in it.
                scheme, host = endpoint.split("://", 1)
                endpoint = f"{scheme}://{bucket}.{host}"
            options["AWS_ENDPOINT_URL"] = endpoint
            if endpoint.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        if self.path_style is not None:
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if self.path_style else "true"
        pairs = (("AWS_REGION", self.region), ("AWS_ACCESS_KEY_ID", self.access_key),
                 ("AWS_SECRET_ACCESS_KEY", self.secret_key),
                 ("AWS_SESSION_TOKEN", self.session_token))
        options.update({k: v for k, v in pairs if v})
        return options

    def filesystem(self) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem for this access (one per process and access)."""
        return _s3_filesystem(self)


@functools.cache
def _s3_filesystem(access: S3Access) -> pafs.S3FileSystem:
    from pyarrow import fs as pafs

    kwargs: dict[str, object] = {}
    if access.endpoint is not None:
        scheme, host = access.endpoint.split("://", 1)
        kwargs.update(endpoint_override=host, scheme=scheme)
        if access.path_style is False:
            kwargs["force_virtual_addressing"] = True
    if access.region:
        kwargs["region"] = access.region
    elif access.endpoint is not None:
        kwargs["region"] = "us-east-1"  # S3-compatible servers: no region lookup
    if access.access_key and access.secret_key:
        kwargs.update(access_key=access.access_key, secret_key=access.secret_key)
        if access.session_token:
            kwargs["session_token"] = access.session_token
    return pafs.S3FileSystem(**kwargs)


def s3_bucket_and_key(location: str) -> tuple[str, str] | None:
    """``(bucket, key prefix)`` of an ``s3a://`` or ``s3://`` location, else None."""
    for scheme in S3_SCHEMES:
        if location.startswith(scheme):
            bucket, _, key = location[len(scheme):].partition("/")
            return bucket, key.strip("/")
    return None


def local_folder(location: str) -> str | None:
    """The local path of ``location``, or None when it is not on the local filesystem.

    A connection file may name its lakehouse ``file:///...`` as well as by a
    plain path; any other scheme (``s3a://``...) is not local.
    """
    if location.startswith(_FILE_SCHEME):
        return location[len(_FILE_SCHEME):]
    return None if "://" in location else location


#: How the task path reaches an object store: one per kind of store.
StoreAccess = S3Access | AzureAccess


@dataclass(frozen=True)
class TableFolder:
    """A table's folder (Delta or Iceberg): a local path, or ``<scheme>://bucket/key`` with the
    :class:`StoreAccess` of its store (``s3://bucket/key``, ``az://container/key``).

    Picklable (the executors' tasks carry it).  Relative paths below are
    relative to the table's folder, ``/``-separated, as Delta's log names files.
    """

    #: A local path, or ``<scheme>://bucket/key`` (the form delta-rs and pyarrow take).
    uri: str
    store: StoreAccess | None = None

    @classmethod
    def of(cls, value: str | TableFolder) -> TableFolder:
        """``value`` itself, or the local folder a plain path names."""
        return value if isinstance(value, TableFolder) else cls(value)

    @classmethod
    def on_s3(cls, location: str, access: S3Access) -> TableFolder:
        """The table at an ``s3a://`` or ``s3://`` location."""
        parts = s3_bucket_and_key(location)
        if parts is None:
            raise ValueError(f"{location} is not an S3 location")
        bucket, key = parts
        return cls(f"s3://{bucket}/{key}" if key else f"s3://{bucket}", access)

    @classmethod
    def on_azure(cls, location: str, access: AzureAccess) -> TableFolder:
        """The table at an ``abfss://`` or ``wasbs://`` location (delta-rs's ``az://``)."""
        where = AzureLocation.parse(location)
        if where is None:
            raise ValueError(f"{location} is not an Azure location")
        return cls(where.delta_rs_uri, access)

    @property
    def is_local(self) -> bool:
        return self.store is None

    def child(self, relative: str) -> TableFolder:
        """The folder at ``relative`` below this one (a staging folder)."""
        return TableFolder(f"{self.uri.rstrip('/')}/{relative.strip('/')}", self.store)

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs's ``storage_options`` for this folder (None for a local one)."""
        if self.store is None:
            return None
        bucket = self.uri.split("://", 1)[1].split("/", 1)[0]
        return self.store.delta_rs_options(bucket)

    def local_path(self, relative: str = "") -> str:
        """The local path of ``relative`` (a local folder only)."""
        if self.store is not None:
            raise ValueError(f"{self.uri} is not a local folder")
        return os.path.join(self.uri, *relative.split("/")) if relative else self.uri

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """pyarrow's filesystem of this folder, and the folder's path in it."""
        if self.store is None:
            from pyarrow import fs as pafs

            return pafs.LocalFileSystem(), os.path.abspath(self.uri)
        return self.store.filesystem(), self.uri.split("://", 1)[1].rstrip("/")

    def _path(self, relative: str) -> tuple[pafs.FileSystem, str]:
        fs, base = self.filesystem()
        return fs, f"{base}/{relative}"

    def write_target(self, relative: str) -> tuple[str, pafs.FileSystem | None]:
        """Where a writer (``pq.ParquetWriter``) puts ``relative``: a path, and the
        filesystem to open it in (None: the local one)."""
        if self.store is None:
            return self.local_path(relative), None
        fs, path = self._path(relative)
        return path, fs

    def size_and_mtime_ms(self, relative: str) -> tuple[int, int]:
        """The size of the file at ``relative`` and its modification time (ms; 0 unknown)."""
        if self.store is None:
            described = os.stat(self.local_path(relative))
            return described.st_size, int(described.st_mtime * 1000)
        fs, path = self._path(relative)
        info = fs.get_file_info(path)
        mtime = info.mtime
        return int(info.size or 0), int(mtime.timestamp() * 1000) if mtime else 0

    def delete_file(self, relative: str) -> None:
        """Remove the file at ``relative`` (raises ``OSError`` as the filesystem does)."""
        if self.store is None:
            os.remove(self.local_path(relative))
            return
        fs, path = self._path(relative)
        fs.delete_file(path)

    def read_text(self, relative: str) -> str | None:
        """The text of the file at ``relative``, or None when there is none."""
        if self.store is None:
            try:
                with open(self.local_path(relative), encoding="utf-8") as found:
                    return found.read()
            except FileNotFoundError:
                return None
        fs, path = self._path(relative)
        try:
            with fs.open_input_stream(path) as found:
                return bytes(found.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def put_text(self, relative: str, text: str) -> None:
        """Write ``text`` at ``relative`` (an object store: one whole put)."""
        fs, path = self._path(relative)
        with fs.open_output_stream(path) as out:
            out.write(text.encode("utf-8"))

    def list_files(self, relative: str = "") -> list[tuple[str, int, int]]:
        """``(name, size, modified ms)`` of each file directly below ``relative`` (none:
        the folder is missing); sub-folders are left out."""
        from pyarrow import fs as pafs

        fs, path = self._path(relative) if relative else self.filesystem()
        try:
            found = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except FileNotFoundError:
            return []
        return [(info.base_name, int(info.size or 0),
                 int(info.mtime.timestamp() * 1000) if info.mtime else 0)
                for info in found if info.type == pafs.FileType.File]

    def exists(self, relative: str) -> bool:
        """Whether a file is at ``relative``."""
        if self.store is None:
            return os.path.exists(self.local_path(relative))
        from pyarrow import fs as pafs

        fs, path = self._path(relative)
        return bool(fs.get_file_info(path).type == pafs.FileType.File)

    def has_folder(self, relative: str) -> bool:
        """Whether anything is under ``relative`` (on a store: any key with that prefix)."""
        if self.store is None:
            return os.path.isdir(self.local_path(relative))
        from pyarrow import fs as pafs

        fs, path = self._path(relative)
        return bool(fs.get_file_info(path).type == pafs.FileType.Directory)

    def delete_folder(self, relative: str) -> None:
        """Remove everything under ``relative`` (nothing there: nothing done)."""
        fs, path = self._path(relative)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_dir(path)


def store_refusal(location: str, get: Callable[[str], str | None]) -> str | None:
    """Why only Spark's own connector reaches ``location`` with the Hadoop settings
    ``get`` reads (credentials the task path cannot follow), or None."""
    s3 = s3_bucket_and_key(location)
    if s3 is not None:
        untranslated = S3Access.untranslated_providers(get, s3[0])
        return (f"fs.s3a.aws.credentials.provider names {', '.join(untranslated)}, which "
                "only S3A follows") if untranslated else None
    where = AzureLocation.parse(location)
    if where is not None:
        return AzureAccess.untranslated(get, where)
    return None


def store_folder(location: str, get: Callable[[str], str | None]) -> TableFolder | None:
    """The table folder at an S3 or Azure ``location``, reached with the Hadoop
    settings ``get`` reads (:func:`store_refusal` first); None for any other location."""
    s3 = s3_bucket_and_key(location)
    if s3 is not None:
        return TableFolder.on_s3(location, S3Access.from_hadoop(get, s3[0]))
    where = AzureLocation.parse(location)
    if where is not None:
        return TableFolder.on_azure(location, AzureAccess.from_hadoop(get, where))
    return None


def on_object_store(location: str) -> bool:
    """Whether ``location`` is on a store the task path writes (S3, Azure)."""
    return s3_bucket_and_key(location) is not None or AzureLocation.parse(location) is not None


__all__ = ["AzureAccess", "S3Access", "StoreAccess", "TableFolder",
           "local_folder", "on_object_store", "s3_bucket_and_key", "store_folder",
           "store_refusal"]
