"""The ``object_storage`` source: streams of objects, read in key order, exactly once.

Example connection snippet::

    source:
      type: object_storage
      config:
        url: s3://landing/events
        endpoint_url: http://127.0.0.1:9000     # S3-compatible stores
        streams:
          - name: clicks
            globs: ["clicks/**/*.jsonl.gz"]
            format: {type: jsonl}
          - name: orders
            globs: ["orders/*.csv"]
            format: {type: csv, delimiter: ";"}
            schema: {amount: {type: number}}

Consecutive small objects share a partition, a larger one is a partition of its
own, a large one several (byte ranges, row-group ranges);
the cursor (:class:`._cursor.ObjectCursor`) keeps which objects and parts are
committed.  A stream finds new objects by listing, or, with ``discovery: {mode:
notifications, queue_url: ...}``, from its bucket's S3 events on a queue
(:mod:`._notifications`).  Rows carry ``_source_key`` and ``_source_record``; a record that
cannot be read is kept as a row with null data columns and a note, and counted
as rejected.
"""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import fsspec
import pyarrow as pa
from pydantic import ValidationError

from headwater.connectors.object_storage._config import (
    NotificationDiscovery,
    ObjectStorageConfig,
    StreamConfig,
)
from headwater.connectors.object_storage._cursor import ObjectCursor
from headwater.connectors.object_storage._formats import (
    KEY_COLUMN,
    RECORD_COLUMN,
    ReadPosition,
    read_avro,
    read_csv,
    read_jsonl,
    read_parquet,
    reject_batch,
)
from headwater.connectors.object_storage._inference import (
    SAMPLE_OBJECTS,
    infer_json_schema,
    sample_schema,
)
from headwater.connectors.object_storage._io import StorageFile, compression_of, decompress
from headwater.connectors.object_storage._listing import (
    ObjectInfo,
    Page,
    iter_objects,
    iter_pages,
    open_filesystem,
    root_path,
)
from headwater.connectors.object_storage._notifications import Inbox, with_messages
from headwater.connectors.object_storage._splitting import collector_paused, group_members, plan
from headwater.errors import AuthenticationError, ConfigError, ConnectorError, SpecValidationError
from headwater.key_checksum import MODULUS, key_checksum
from headwater.sdk import (
    Cursor,
    FinalStateCursor,
    Partition,
    RecordOrBatch,
    RowWindow,
    Source,
    Stream,
    WindowCount,
)
from headwater.table_schema import arrow_schema_for, json_kinds_differ

__all__ = ["ObjectStorageSource", "ObjectStream"]

log = logging.getLogger(__name__)


class ObjectStream(Stream):
    """The objects of one configured stream.  Holds only config (it is pickled to
    executors); the filesystem is opened where it is used."""

    cursor_field = KEY_COLUMN
    #: New objects are found by key, and append_dedup orders a key's versions by their
    #: object's key unless the connection names a column of the records to order by.
    versions_by_record_column = True

    def __init__(self, settings: ObjectStorageConfig, config: StreamConfig) -> None:
        self._settings = settings
        self._config = config
        self._schema: dict[str, Any] | None = None
        self._inbox: Inbox | None = None  # notification discovery, on the driver

    @property
    def stream_name(self) -> str:
        return self._config.name

    @property
    def primary_key(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self._config.primary_key)

    def _fs(self) -> tuple[fsspec.AbstractFileSystem, str]:
        return open_filesystem(self._settings.url, self._settings.storage_options())

    def objects(self) -> Iterator[ObjectInfo]:
        """The stream's objects now, in key order, as the store lists them."""
        fs, root = self._fs()
        return iter_objects(fs, root, self._config.prefix, self._config.globs)

    def _sample(self, fs: fsspec.AbstractFileSystem, objects: Iterator[ObjectInfo]
                ) -> tuple[dict[str, Any], Iterator[ObjectInfo]]:
        """The schema of the first objects listed, and the listing from its start again
        (only the sampled objects are held, not the listing)."""
        first = list(itertools.islice(objects, SAMPLE_OBJECTS))
        schema = infer_json_schema(sample_schema(fs, first, self._config),
                                   self._config.json_schema)
        return schema, itertools.chain(first, objects)

    def json_schema(self) -> dict[str, Any]:
        """Inferred once per stream object from the first objects, then the overrides."""
        if self._schema is None:
            fs, root = self._fs()
            self._schema, _ = self._sample(
                fs, iter_objects(fs, root, self._config.prefix, self._config.globs))
        return self._schema

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        if not incremental:
            if isinstance(self._config.discovery, NotificationDiscovery):
                raise ConfigError("notification discovery reads only new objects: the stream "
                                  "must be incremental (use discovery mode listing for a "
                                  "full refresh)", stream=self.stream_name)
            return FinalStateCursor()
        return ObjectCursor(state, self._settings.recent_keys, self._config.changed_objects)

    def __getstate__(self) -> dict[str, Any]:
        # Infer on the driver, once, before the stream travels to executors: every
        # task then reads with the same schema and none lists the store again.
        self.json_schema()
        return {**self.__dict__, "_inbox": None}  # the queue's client stays on the driver

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        """Partitions of every object the cursor says to read, in key order.

        The schema is sampled again (objects may have arrived with new columns
        since the last plan, as in ``--watch``).  With notification discovery the
        objects are the queue's new ones instead of the listing's (see
        :mod:`._notifications`), planned by the same rules."""
        cursor = ObjectCursor(state, self._settings.recent_keys, self._config.changed_objects)
        fs, root = self._fs()
        listing = iter_pages(fs, root, self._config.prefix, self._config.globs)
        floor = cursor.skip_below()
        if floor is not None:
            # the sample still comes from the prefix's first objects (a page, a folder);
            # the plan lists from the floor on
            self._schema, _ = self._sample_pages(fs, listing)
            listing = iter_pages(fs, root, self._config.prefix, self._config.globs, floor)
        else:
            self._schema, listing = self._sample_pages(fs, listing)
        inbox = self._notified()
        if inbox is None:
            with collector_paused():
                return list(plan(fs, self.stream_name, root, listing, self._config, cursor))
        # notification discovery: the listing gave only the sample (its first page)
        inbox.release(state)
        objects, handles = inbox.new_objects(fs, root, self._config, cursor.decide)
        return list(with_messages(plan(fs, self.stream_name, root, [Page.of(objects)],
                                       self._config, cursor), handles))

    def _sample_pages(self, fs: fsspec.AbstractFileSystem, pages: Iterator[Page]
                      ) -> tuple[dict[str, Any], Iterator[Page]]:
        """:meth:`_sample` of a listing a page at a time (only the sampled pages are held)."""
        first: list[Page] = []
        while sum(len(page.keys) for page in first) < SAMPLE_OBJECTS:
            page = next(pages, None)
            if page is None:
                break
            first.append(page)
        sample = list(itertools.islice(itertools.chain.from_iterable(
            page.objects() for page in first), SAMPLE_OBJECTS))
        schema, _ = self._sample(fs, iter(sample))
        return schema, itertools.chain(first, pages)

    def _notified(self) -> Inbox | None:
        """The queue of a stream with notification discovery (``None``: listing)."""
        discovery = self._config.discovery
        if self._inbox is None and isinstance(discovery, NotificationDiscovery):
            self._inbox = Inbox(self._settings, discovery)
        return self._inbox

    def on_state_committed(self, state: Mapping[str, Any] | None) -> None:
        """Notification discovery: the messages of the objects this state records as
        read are deleted now that it is saved (see :mod:`._notifications`)."""
        inbox = self._notified()
        if inbox is not None:
            inbox.release(state)

    # ------------------------------------------------------------------ reading

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        params = partition.params
        if params.get("unit") == "objects":
            # Several small objects, in key order, each read (and rejected) on its own:
            # one object's bad bytes cost its records, not its neighbours'.
            fs = None
            for key, path, _, size in group_members(params):
                if size == 0:
                    continue
                fs = fs or self._fs()[0]
                yield from self._read_object(fs, key, path, {"unit": "object"})
            return
        if int(params.get("size") or 0) == 0:
            return  # an empty object holds no records (an empty CSV has not even a header)
        yield from self._read_object(self._fs()[0], str(params["key"]), str(params["path"]),
                                     params)

    def _read_object(self, fs: fsspec.AbstractFileSystem, key: str, path: str,
                     params: Mapping[str, Any]) -> Iterator[RecordOrBatch]:
        position = ReadPosition()
        try:
            with StorageFile(fs, path) as raw:
                yield from self._read(raw, key, params, position)
        except ConnectorError:
            raise  # the store failed, not the object: the sync retries the partition
        except FileNotFoundError:
            yield reject_batch(key, [(position.next_record,
                                      "object not found: deleted after it was listed", None)])
        except Exception as exc:  # the object's bytes: record why, keep what was read
            log.warning("object %s is unreadable after %d records: %s", key,
                        position.next_record, exc)
            yield reject_batch(key, [(position.next_record,
                                      f"object unreadable after {position.next_record} "
                                      f"records: {type(exc).__name__}: {exc}", None)])

    # ------------------------------------------------------------------ verify

    def table_window(self, partition: Partition) -> RowWindow:
        """The rows of the partition's objects (by ``_source_key``): a part of a large
        object stands for its whole object, so the parts of one are one window."""
        return RowWindow(KEY_COLUMN, values=tuple(key for key, _ in _objects_of(partition)))

    def count_window(self, partition: Partition) -> WindowCount:
        """The records the partition's objects hold now, read on the driver (an object
        gone since counts none), and their keys' checksum when the stream has a key."""
        fs = self._fs()[0]
        rows, keys = 0, self.primary_key
        checksum: int | None = 0 if keys else None
        for key, path in _objects_of(partition):
            if not fs.exists(path):
                continue
            for item in self._read_object(fs, key, path, {"unit": "object"}):
                if not isinstance(item, pa.RecordBatch):
                    continue
                rows += item.num_rows
                checksum = _add_keys(checksum, item, keys)
        return WindowCount(rows, checksum)

    def _data_schema(self) -> pa.Schema:
        """The columns a reader parses: the stream's, without the source columns; a column
        the table keeps as JSON text (``json_columns``) or VARIANT is read as the table
        has it (JSON Lines: the line's own text of it, not a struct written back)."""
        own = arrow_schema_for(self.json_schema())
        theirs = {field.name: field for field in json_kinds_differ(own, self.landing)}
        return pa.schema([theirs.get(f.name, f) for f in own
                          if f.name not in (KEY_COLUMN, RECORD_COLUMN)])

    def _read(self, raw: Any, key: str, params: Mapping[str, Any],
              position: ReadPosition) -> Iterator[RecordOrBatch]:
        fmt = self._config.format
        unit = params["unit"]
        stream = decompress(raw, compression_of(key, self._config.compression))
        if fmt.type in ("csv", "jsonl"):
            start, end = (int(params["start"]), int(params["end"])) if unit == "bytes" \
                else (0, None)
            if fmt.type == "csv":
                yield from read_csv(stream, key, self._data_schema(), fmt, position, start, end)
            else:
                yield from read_jsonl(stream, key, self._data_schema(), position, start, end)
        elif fmt.type == "parquet":
            if stream is not raw:  # a compressed Parquet object must be seekable
                stream = io.BytesIO(stream.read())
            groups = range(int(params["start"]), int(params["end"])) if unit == "row_groups" \
                else None
            yield from read_parquet(stream, key, position, groups)
        else:
            yield from read_avro(stream, key, position)


class ObjectStorageSource(Source):
    """Objects in a folder or bucket as streams; see the module docstring."""

    type_name = "object_storage"
    offline_catalog = "streams"  # schemas are sampled from the objects

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        try:
            self._settings = ObjectStorageConfig.model_validate(dict(config))
        except ValidationError as exc:
            problems = [(".".join(["source.config", *(str(p) for p in e["loc"])]), e["msg"])
                        for e in exc.errors(include_input=False)]
            raise SpecValidationError("the object storage source config does not match its "
                                      "spec", problems) from exc
        names = [s.name for s in self._settings.streams]
        if len(set(names)) != len(names):
            raise SpecValidationError("stream names must be unique",
                                      [("source.config.streams", f"names: {names}")])
        if any(isinstance(s.discovery, NotificationDiscovery) for s in self._settings.streams) \
                and not self._settings.url.startswith(("s3://", "s3a://")):
            raise ConfigError("notification discovery reads S3 event notifications: the "
                              f"source url must be s3://, got {self._settings.url!r}",
                              field="source.config.streams.discovery")
        other = self._settings.settings_of_other_stores()
        if other:
            where = {"s3": "on S3", "gs": "on GCS", "az": "on Azure"}.get(
                self._settings.store or "", "not on S3, GCS or Azure")
            raise ConfigError(
                f"{other[0]}: the url {self._settings.url!r} is {where}, whose reads do not "
                "take it, so it would be ignored; remove it, or point url at the store it is "
                "for", field=f"source.config.{other[0]}")
        # One stream object per stream for the source's life, so the schema a plan
        # sampled is the one its tasks read with.
        self._streams = [ObjectStream(self._settings, c) for c in self._settings.streams]

    @classmethod
    def spec(cls) -> dict[str, Any]:
        schema = ObjectStorageConfig.model_json_schema(mode="validation", by_alias=True)
        for prop in schema["properties"].values():
            if "default" in prop and prop["default"] is None:
                # "absent" is the default; a null default would not fit a string-typed
                # secret, and spec validation would fill it in
                del prop["default"]
        return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}

    def check(self) -> None:
        """Lists the url once: wrong credentials and missing buckets show here; and asks
        each notification queue for its attributes."""
        for stream in self._streams:
            inbox = stream._notified()
            if inbox is not None:
                inbox.check()
        fs, root = open_filesystem(self._settings.url, self._settings.storage_options())
        where = fs.unstrip_protocol(root)
        try:
            fs.ls(root_path(root, ""), detail=False)
        except FileNotFoundError as exc:
            raise ConnectorError(f"{where} does not exist", field="source.config.url") from exc
        except PermissionError as exc:
            raise AuthenticationError(f"{where}: access denied: {exc}",
                                      field="source.config") from exc
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if any(w in text for w in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoes",
                                       "Forbidden", "403")):
                raise AuthenticationError(f"{where}: credentials refused: {text}",
                                          field="source.config") from exc
            raise ConnectorError(f"cannot list {where}: {text}",
                                 field="source.config.url") from exc

    def streams(self) -> list[Stream]:
        return list(self._streams)


def _objects_of(partition: Partition) -> list[tuple[str, str]]:
    """(key, path) of each object a partition reads (all of it, or a part)."""
    params = partition.params
    if params.get("unit") == "objects":
        return [(key, path) for key, path, _, _ in group_members(params)]
    return [(str(params["key"]), str(params["path"]))]


def _add_keys(checksum: int | None, batch: pa.RecordBatch, keys: tuple[str, ...]) -> int | None:
    """``checksum`` plus the keys of ``batch`` (None once a key cannot be hashed)."""
    if checksum is None or any(k not in batch.schema.names for k in keys):
        return None
    columns = [batch.column(k).to_pylist() for k in keys]
    try:
        return (checksum + key_checksum(zip(*columns, strict=True))) % MODULUS
    except TypeError:
        return None
