"""A path-based Iceberg catalog in Apache Iceberg's HadoopCatalog layout, on local folders.

Why our own: PyIceberg 0.12 has no Hadoop catalog, and a Hadoop-layout table is
what Spark's and Trino's Hadoop catalogs read straight from the folder ("a folder
is the lakehouse"), with no catalog database beside it.  The layout and rules are
Java's ``HadoopCatalog`` / ``HadoopTableOperations``, kept exactly:

* a namespace is a folder ``<warehouse>/<level>/...``; a table is the folder
  ``<warehouse>/<namespace>/<table>`` whose ``metadata`` folder holds a
  ``*.metadata.json`` file (a folder that is not a table is a namespace);
* version N of a table's metadata is ``metadata/v<N>.metadata.json``
  (``v<N>.gz.metadata.json`` when ``write.metadata.compression-codec`` is gzip);
  a table starts at v1;
* ``metadata/version-hint.text`` holds the N last committed: a hint only (a
  Hadoop checksum of an older hint, ``.version-hint.text.crc``, is removed).  The
  current version is the highest existing version at or after the hint (versions
  are probed upwards from it); without a readable hint, the highest listed;
* a commit is based on the version it read and writes version base + 1 **only if
  it does not exist**: the file is written under a temporary name, flushed to
  disk, then hard-linked to its final name (``link`` fails when the name exists:
  an atomic create-if-absent).  So of two writers based on the same version one
  wins and the other gets PyIceberg's ``CommitFailedException`` (the destination
  retries those, on the table reloaded), and a commit based on a version that is
  no longer current fails the same way, before writing anything.  Then the hint
  is replaced (atomically; a failure there is only logged, as in Java);
* tables cannot be renamed nor moved, nor keep metadata elsewhere
  (``write.metadata.path``); namespaces have no properties; dropping a table
  deletes its folder; views are not supported.  Refused, as Java refuses them.

Local folders only: an object store has no create-if-absent without conditional
writes, so a warehouse that is not a local path (or ``file://`` URI) is refused.
Every operation reads the folder afresh: the catalog holds no state, so any number
of clients (processes, Spark's ``HadoopCatalog``) share a warehouse.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import uuid
from typing import TYPE_CHECKING, cast

from pyiceberg.catalog import MetastoreCatalog, delete_data_files
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, CreateTableTransaction, StagedTable, Table
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import AssertCreate, update_table_metadata
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import PropertiesUpdateSummary
    from pyiceberg.schema import Schema
    from pyiceberg.table import TableRequirement, TableUpdate
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.typedef import TableVersion
    from pyiceberg.view import View

logger = logging.getLogger(__name__)

METADATA_FOLDER = "metadata"
VERSION_HINT = "version-hint.text"
#: Where Hadoop's local file system keeps the hint's checksum (``ChecksumFileSystem``).
HADOOP_HINT_CHECKSUM = f".{VERSION_HINT}.crc"
#: What a commit's new version is called, by codec (Java's ``TableMetadataParser.Codec``).
_EXTENSIONS = {"none": ".metadata.json", "gzip": ".gz.metadata.json"}
_VERSION_FILE = re.compile(r"v(\d+)(?:\.gz)?\.metadata\.json")
_COMPRESSION = "write.metadata.compression-codec"
_METADATA_PATH = "write.metadata.path"
_FILE_SCHEME = "file://"


class HadoopCatalog(MetastoreCatalog):
    """Iceberg tables in folders under ``warehouse`` (a local path or ``file://`` URI).

    Loaded by PyIceberg as ``load_catalog(name, **{"py-catalog-impl":
    "headwater.destinations.iceberg._hadoop.HadoopCatalog", "warehouse": ...})``.
    """

    def __init__(self, name: str, **properties: str):
        super().__init__(name, **properties)
        warehouse = str(properties.get("warehouse") or "")
        if not warehouse:
            raise ValueError("a hadoop catalog needs its warehouse folder")
        self._root = local_folder(warehouse)

    # ------------------------------------------------------------------- tables

    def load_table(self, identifier: str | Identifier) -> Table:
        parts = self._table_parts(identifier)
        location = self._current_metadata(parts)
        if location is None:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(parts)}")
        metadata = self._read_metadata(location)
        return Table(identifier=parts, metadata=metadata, metadata_location=location,
                     io=self._load_file_io(metadata.properties, location), catalog=self)

    def create_table(
        self,
        identifier: str | Identifier,
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = EMPTY_DICT,
    ) -> Table:
        """Create the table (its v1), raising ``TableAlreadyExistsError`` when there is one."""
        self.create_table_transaction(identifier, schema, location, partition_spec,
                                      sort_order, properties).commit_transaction()
        return self.load_table(identifier)

    def create_table_transaction(
        self,
        identifier: str | Identifier,
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = EMPTY_DICT,
    ) -> CreateTableTransaction:
        """A staged create: nothing is written until its ``commit_transaction`` writes v1.

        The table's location is its folder; another ``location`` is refused (a
        path-based table is where its name says).
        """
        parts = self._table_parts(identifier)
        if not self._is_namespace(self._folder(parts[:-1])):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts[:-1])}")
        if self._current_metadata(parts) is not None:
            raise TableAlreadyExistsError(f"Table {'.'.join(parts)} already exists")
        if self._is_table(self._folder(parts)):
            # Another catalog's table (a SQL catalog names its files 00001-<uuid>...):
            # a v1 beside them would start a second table in the same folder.
            raise ValueError(
                f"{self._folder(parts)} holds Iceberg metadata files but no "
                "v<N>.metadata.json: a table of another catalog (a SQL catalog's, as in "
                "catalog.db?), not created again here")
        table_location = self._location(parts)
        if location and _normalized(location) != _normalized(table_location):
            raise ValueError(f"a path-based table cannot be placed elsewhere: "
                             f"{'.'.join(parts)} is at {table_location}, not {location}")
        from pyiceberg.table import TableProperties

        format_version = cast("TableVersion", int(properties.get(
            TableProperties.FORMAT_VERSION, TableProperties.DEFAULT_FORMAT_VERSION)))
        iceberg_schema = self._convert_schema_if_needed(schema, format_version)
        metadata = new_table_metadata(location=table_location, schema=iceberg_schema,
                                      partition_spec=partition_spec, sort_order=sort_order,
                                      properties=properties)
        # Never written: commit_table writes v1; PyIceberg's staged table needs a location.
        staged_location = load_location_provider(
            table_location, properties).new_table_metadata_file_location()
        return CreateTableTransaction(StagedTable(
            identifier=parts, metadata=metadata, metadata_location=staged_location,
            io=self._load_file_io(properties=properties, location=staged_location),
            catalog=self))

    def commit_table(self, table: Table, requirements: tuple[TableRequirement, ...],
                     updates: tuple[TableUpdate, ...]) -> CommitTableResponse:
        """Write the table's next version, only if ``table`` was read at the current one.

        Raises ``CommitFailedException`` when another writer committed since
        ``table`` was read (nothing was written then), or a requirement fails;
        ``TableAlreadyExistsError`` when a create finds the table made meanwhile;
        ``NoSuchTableError`` when the table is gone.
        """
        parts = self._table_parts(table.name())
        name = ".".join(parts)
        creating = any(isinstance(requirement, AssertCreate) for requirement in requirements)
        current_location = self._current_metadata(parts)
        current: TableMetadata | None = None
        if current_location is None:
            if not creating:
                raise NoSuchTableError(f"Table does not exist: {name}")
            version = 0
        else:
            if creating:
                raise TableAlreadyExistsError(f"Table {name} already exists")
            version = _version_of(current_location)
            based_on = _version_of(table.metadata_location)
            if based_on != version:
                raise CommitFailedException(
                    f"Table {name} has been updated by another process: this commit is based "
                    f"on its version {based_on}, the current version is {version}")
            current = self._read_metadata(current_location)
        for requirement in requirements:
            requirement.validate(current)
        updated = update_table_metadata(
            base_metadata=current if current is not None else self._empty_table_metadata(),
            updates=updates, enforce_validation=current is None,
            metadata_location=current_location)
        if current is not None and current_location is not None and updated == current:
            return _response(current, current_location)
        self._refuse_relocation(parts, current, updated)
        location = self._write_version(parts, version + 1, updated, creating=creating)
        return _response(updated, location)

    def drop_table(self, identifier: str | Identifier) -> None:
        """Delete the table's folder (its metadata is the table: Java deletes it too)."""
        parts = self._table_parts(identifier)
        if self._current_metadata(parts) is None:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(parts)}")
        shutil.rmtree(self._folder(parts))

    def purge_table(self, identifier: str | Identifier) -> None:
        """Delete the data files every snapshot references (wherever they are), then the folder."""
        table = self.load_table(identifier)
        manifests = [manifest for snapshot in table.metadata.snapshots
                     for manifest in snapshot.manifests(table.io)]
        delete_data_files(table.io, manifests)
        self.drop_table(identifier)

    def rename_table(self, from_identifier: str | Identifier,
                     to_identifier: str | Identifier) -> Table:
        raise NotImplementedError("Cannot rename Hadoop tables: a path-based table's "
                                  "name is its folder")

    def register_table(self, identifier: str | Identifier, metadata_location: str,
                       overwrite: bool = False) -> Table:
        raise NotImplementedError("Cannot register a table in a hadoop catalog: its tables "
                                  "are the folders under the warehouse")

    # --------------------------------------------------------------- namespaces

    def create_namespace(self, namespace: str | Identifier,
                         properties: Properties = EMPTY_DICT) -> None:
        parts = self._namespace_parts(namespace)
        if properties:
            raise NotImplementedError(f"Cannot create namespace {'.'.join(parts)}: "
                                      "a hadoop catalog's namespaces have no properties")
        folder = self._folder(parts)
        if self._is_table(folder):
            raise ValueError(f"Cannot create namespace {'.'.join(parts)}: it is a table")
        if self._is_namespace(folder):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {'.'.join(parts)}")
        os.makedirs(folder, exist_ok=True)

    def drop_namespace(self, namespace: str | Identifier) -> None:
        parts = self._namespace_parts(namespace)
        folder = self._folder(parts)
        if not self._is_namespace(folder):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        if os.listdir(folder):
            raise NamespaceNotEmptyError(f"Namespace {'.'.join(parts)} is not empty")
        os.rmdir(folder)

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        parts = self._namespace_parts(namespace)
        folder = self._folder(parts)
        if not self._is_namespace(folder):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        return [(*parts, entry) for entry in sorted(os.listdir(folder))
                if self._is_table(os.path.join(folder, entry))]

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        parts = _parts(namespace)
        if parts:
            self._namespace_parts(parts)
        folder = self._folder(parts)
        if not parts and not os.path.isdir(folder):
            return []  # the warehouse folder is made on first use
        if not self._is_namespace(folder):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        return [(*parts, entry) for entry in sorted(os.listdir(folder))
                if self._is_namespace(os.path.join(folder, entry))]

    def load_namespace_properties(self, namespace: str | Identifier) -> Properties:
        parts = self._namespace_parts(namespace)
        folder = self._folder(parts)
        if not self._is_namespace(folder):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        return {"location": _FILE_SCHEME + folder}

    def update_namespace_properties(self, namespace: str | Identifier,
                                    removals: set[str] | None = None,
                                    updates: Properties = EMPTY_DICT) -> PropertiesUpdateSummary:
        raise NotImplementedError("a hadoop catalog's namespaces have no properties")

    # -------------------------------------------------------------------- views

    def list_views(self, namespace: str | Identifier) -> list[Identifier]:
        return []

    def view_exists(self, identifier: str | Identifier) -> bool:
        return False

    def load_view(self, identifier: str | Identifier) -> View:
        raise NoSuchViewError(f"a hadoop catalog has no views: {identifier}")

    def drop_view(self, identifier: str | Identifier) -> None:
        raise NoSuchViewError(f"a hadoop catalog has no views: {identifier}")

    def register_view(self, identifier: str | Identifier, metadata_location: str) -> View:
        raise NotImplementedError("a hadoop catalog has no views")

    # ------------------------------------------------------------------ folders

    def _table_parts(self, identifier: str | Identifier) -> Identifier:
        parts = _parts(identifier)
        if len(parts) < 2:
            raise NoSuchTableError(f"a table is named <namespace>.<table>, not {identifier!r}")
        _check_names(parts)
        return parts

    def _namespace_parts(self, namespace: str | Identifier) -> Identifier:
        parts = _parts(namespace)
        if not parts:
            raise NoSuchNamespaceError("the empty namespace is the warehouse, not a namespace")
        _check_names(parts)
        return parts

    def _folder(self, parts: Identifier) -> str:
        return os.path.join(self._root, *parts)

    def _location(self, parts: Identifier) -> str:
        return _FILE_SCHEME + self._folder(parts)

    def _is_table(self, folder: str) -> bool:
        try:
            return any(entry.endswith(".metadata.json")
                       for entry in os.listdir(os.path.join(folder, METADATA_FOLDER)))
        except (FileNotFoundError, NotADirectoryError):
            return False

    def _is_namespace(self, folder: str) -> bool:
        return os.path.isdir(folder) and not self._is_table(folder)

    # ----------------------------------------------------------------- versions

    def _current_metadata(self, parts: Identifier) -> str | None:
        """The location of the table's current metadata file, or None when there is no table."""
        metadata = os.path.join(self._folder(parts), METADATA_FOLDER)
        version = current_version(metadata)
        if version is None:
            return None
        found = _version_file(metadata, version)
        assert found is not None
        return _FILE_SCHEME + found

    def _read_metadata(self, location: str) -> TableMetadata:
        return FromInputFile.table_metadata(self._load_file_io(location=location)
                                            .new_input(location))

    def _refuse_relocation(self, parts: Identifier, current: TableMetadata | None,
                           updated: TableMetadata) -> None:
        expected = current.location if current is not None else self._location(parts)
        if _normalized(updated.location) != _normalized(expected):
            raise ValueError("Hadoop path-based tables cannot be relocated")
        if _METADATA_PATH in updated.properties:
            raise ValueError(f"Hadoop path-based tables cannot relocate metadata "
                             f"({_METADATA_PATH})")

    def _write_version(self, parts: Identifier, version: int, metadata: TableMetadata,
                       *, creating: bool) -> str:
        """Write ``v<version>`` if absent (temp file, fsync, link), then the hint; its location."""
        codec = metadata.properties.get(_COMPRESSION, "none").lower()
        if codec not in _EXTENSIONS:
            raise ValueError(f"{_COMPRESSION} {codec!r} is not one of {sorted(_EXTENSIONS)}")
        folder = os.path.join(self._folder(parts), METADATA_FOLDER)
        os.makedirs(folder, exist_ok=True)
        final = os.path.join(folder, f"v{version}{_EXTENSIONS[codec]}")
        # Never a name a reader takes for a version or a table's metadata file.
        temp = os.path.join(folder, f".{uuid.uuid4()}-v{version}.tmp")
        _write_new(temp, _serialized(metadata, final))
        try:
            # The other codec's name for the same version would be a second v<N>.
            taken = _version_file(folder, version) is not None
            if not taken:
                try:
                    os.link(temp, final)  # the commit point: fails if the name exists
                except FileExistsError:
                    taken = True
            if taken:
                if creating:
                    raise TableAlreadyExistsError(f"Table {'.'.join(parts)} already exists")
                raise CommitFailedException(
                    f"Table {'.'.join(parts)} has been updated by another process: its "
                    f"version {version} was committed first")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        _fsync(folder)
        _write_hint(folder, version)
        return _FILE_SCHEME + final


def _response(metadata: TableMetadata, location: str) -> CommitTableResponse:
    return CommitTableResponse.model_validate({"metadata": metadata,
                                               "metadata-location": location})


def _parts(identifier: str | Identifier) -> Identifier:
    """``identifier`` as a tuple (a string is split on dots, as PyIceberg does)."""
    return MetastoreCatalog.identifier_to_tuple(identifier)


def local_folder(warehouse: str) -> str:
    """``warehouse`` (a path or ``file://`` URI) as an absolute local path; others refused."""
    if warehouse.startswith(_FILE_SCHEME):
        warehouse = warehouse[len(_FILE_SCHEME):]
    elif warehouse.startswith("file:"):
        warehouse = warehouse[len("file:"):]
    elif "://" in warehouse:
        raise ValueError(
            f"a hadoop catalog's warehouse must be a local folder, not {warehouse!r}: a "
            "commit creates v<N>.metadata.json only if it is absent, which an object store "
            "offers only with conditional writes")
    return os.path.abspath(warehouse).rstrip("/") or "/"


def current_version(metadata: str) -> int | None:
    """The current version of the table whose metadata folder is ``metadata`` (None: no table).

    The highest existing version at or after ``version-hint.text``, found by probing
    upwards from the hint; with no readable hint, the highest version listed.  A
    hint naming a deleted version falls back to the highest listed version above
    it; with none above it the table's current metadata is gone, an error.
    """
    hint = _read_hint(metadata)
    version: int | None
    if hint is not None and _version_file(metadata, hint) is not None:
        version = hint
    else:
        listed = _listed_versions(metadata)
        if hint is not None:
            listed = [found for found in listed if found >= hint]
            if not listed:
                raise FileNotFoundError(
                    f"{os.path.join(metadata, VERSION_HINT)} names version {hint}, and no "
                    f"metadata file of that version or a later one is in {metadata}")
        version = max(listed) if listed else None
    if version is None:
        return None
    while _version_file(metadata, version + 1) is not None:
        version += 1
    return version


def _read_hint(metadata: str) -> int | None:
    try:
        with open(os.path.join(metadata, VERSION_HINT), encoding="utf-8") as hint:
            return int(hint.readline().strip())
    except (OSError, ValueError):
        return None


def _listed_versions(metadata: str) -> list[int]:
    try:
        names = os.listdir(metadata)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [int(match.group(1)) for name in names if (match := _VERSION_FILE.fullmatch(name))]


def _version_file(metadata: str, version: int) -> str | None:
    """The path of version ``version``'s metadata file (any codec), or None."""
    for extension in _EXTENSIONS.values():
        path = os.path.join(metadata, f"v{version}{extension}")
        if os.path.exists(path):
            return path
    return None


def _version_of(location: str) -> int:
    """The version of a metadata file of this layout; a commit based on another is refused."""
    match = _VERSION_FILE.fullmatch(location.rsplit("/", 1)[-1])
    if match is None:
        raise CommitFailedException(f"{location} is not a metadata file of a hadoop catalog "
                                    "table (v<N>.metadata.json)")
    return int(match.group(1))


def _write_hint(metadata: str, version: int) -> None:
    """Replace the hint atomically; a failure only leaves it behind (readers probe past it).

    Hadoop's local file system (Spark's ``HadoopCatalog``) keeps a checksum of each
    file it writes in ``.<name>.crc`` and checks it on reading: the checksum of a
    hint Java wrote is removed first, or Java would find our hint corrupt (it then
    lists the metadata folder instead: slower, and a warning).  Without a
    checksum file Hadoop reads the file unchecked.
    """
    temp = os.path.join(metadata, f".{uuid.uuid4()}-version-hint.temp")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(metadata, HADOOP_HINT_CHECKSUM))
        _write_new(temp, str(version).encode("utf-8"))
        os.replace(temp, os.path.join(metadata, VERSION_HINT))
    except OSError as exc:
        logger.warning("could not update %s to version %d: %s", VERSION_HINT, version, exc)
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _serialized(metadata: TableMetadata, final: str) -> bytes:
    """The bytes PyIceberg's ``ToOutputFile.table_metadata`` writes to ``final``."""
    from pyiceberg.serializers import Compressor
    from pyiceberg.utils.config import Config

    # PyIceberg's own switch: None values kept only to write a missing snapshot as -1.
    exclude_none = not Config().get_bool("legacy-current-snapshot-id")
    data = metadata.model_dump_json(exclude_none=exclude_none).encode("utf-8")
    return Compressor.get_compressor(final).bytes_compressor()(data)


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` holding ``data``, flushed to disk."""
    with open(path, "xb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def _fsync(path: str) -> None:
    """Flush the folder ``path`` to disk: a linked version survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_names(parts: Identifier) -> None:
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            raise ValueError(f"{part!r} cannot name a folder of a hadoop catalog")


def _normalized(location: str) -> str:
    return local_folder(location)


__all__ = ["HADOOP_HINT_CHECKSUM", "VERSION_HINT", "HadoopCatalog", "current_version",
           "local_folder"]
