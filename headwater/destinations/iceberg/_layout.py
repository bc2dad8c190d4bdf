"""A stream's table layout on Iceberg: partition spec and properties, and files that fit the spec.

Why a module of its own: the layout touches three moments of a sync, and each
must agree with the table's spec (not the connection file's, once the table
exists):

* **creation** (driver): ``partition_by`` (columns and transforms,
  :mod:`headwater.partition_terms`) becomes the table's partition spec and
  ``table_properties`` its properties, in the one metadata commit that creates
  the table (a staged create: a table whose location is not a local folder is
  refused before it exists).  An existing table keeps its spec: a different one
  asked for is reported, not applied (changing it is the table owner's call, as
  for Delta); properties it lacks or holds otherwise are set.
* **writing** (tasks): an Iceberg data file belongs to exactly one partition,
  so :class:`PartitionedParquetFiles` splits each batch by the rows' partition
  values (PyIceberg's own transform functions, applied to each distinct value)
  and keeps one open file per partition value.
* **committing** (driver): :func:`partitioned_data_file` (through
  ``_commit.data_files``, whoever commits files) gives each file its partition
  record, from the file's own column statistics: the transform of its source
  column's minimum, checked against its maximum and its null count, so a file
  that holds more than one partition is an error, never a wrong record.

Partition source columns must be top-level and not floating point (the tasks'
files carry no float statistics: ``_table_files/_parquet.py`` says why).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.destinations._table_files._parquet import ParquetFiles, _File
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.iceberg import _catalog, _config, _properties
from headwater.errors import ConfigError, DestinationError
from headwater.partition_terms import EXPECTED_SHAPE, PartitionTerm, parse_term

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

    from headwater.plan import StreamPlan

log = logging.getLogger(__name__)

#: Property names the destination keeps itself (markers, name mapping): not the user's.
_RESERVED_PREFIXES = ("headwater.", _catalog.NAME_MAPPING_PROPERTY)


# ----------------------------------------------------------------- creation (driver)

def partition_spec(terms: Sequence[PartitionTerm], schema: Schema, stream: str) -> PartitionSpec:
    """The spec ``terms`` describe over ``schema`` (with its field ids), or a ConfigError."""
    from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
    from pyiceberg.transforms import parse_transform
    from pyiceberg.types import DoubleType, FloatType

    fields = []
    for offset, term in enumerate(terms):
        where = f"partition_by {term.column if term.is_identity else _spelling(term)!r}"
        source = schema.find_field(term.column, case_sensitive=True) \
            if term.column in {f.name for f in schema.fields} else None
        if source is None:
            raise ConfigError(f"stream {stream!r}: {where}: the table has no top-level column "
                              f"{term.column!r}", stream=stream, field="partition_by")
        transform = parse_transform(_iceberg_name(term))
        if isinstance(source.field_type, FloatType | DoubleType) or not \
                transform.can_transform(source.field_type):
            raise ConfigError(
                f"stream {stream!r}: {where}: column {term.column!r} is {source.field_type}, "
                f"which {_spelling(term)} cannot partition (floating point columns are never "
                f"partition sources here); expected {EXPECTED_SHAPE}",
                stream=stream, field="partition_by")
        fields.append(PartitionField(source_id=source.field_id,
                                     field_id=PARTITION_FIELD_ID_START + offset,
                                     transform=transform, name=term.field_name))
    return PartitionSpec(*fields)


def user_properties(plan: StreamPlan) -> dict[str, str]:
    """The stream's ``table_properties``, refused where they name the destination's own
    or ask the writer for what it does not do (``_properties.py``)."""
    properties = dict(plan.stream.table_layout.properties)
    refused = _properties.refusal(properties)
    if refused is not None:
        raise ConfigError(f"stream {plan.stream.name!r}: {refused}", stream=plan.stream.name,
                          field="table_properties")
    for key in properties:
        if key.startswith(_RESERVED_PREFIXES):
            raise ConfigError(f"stream {plan.stream.name!r}: table_properties: {key!r} is kept "
                              "by the iceberg destination itself (its commit markers and name "
                              "mapping); choose another name", stream=plan.stream.name,
                              field="table_properties")
    return properties


def _is_local(location: str) -> bool:
    return _config.local_path(location) is not None


def create_table(catalog: Catalog, identifier: str, arrow_schema: pa.Schema,
                 plan: StreamPlan, reaches: Callable[[str], bool] = _is_local) -> Table:
    """Create the stream's table, laid out as the stream asks, in one metadata commit.

    Staged: the catalog (a REST server, for one) decides the table's location
    first; one the tasks cannot write (``reaches`` says: by default, one not in
    a local folder) is refused with a ConfigError before the table exists.
    Loads the table another process created meanwhile.
    """
    from pyiceberg.catalog import Catalog as CatalogClass
    from pyiceberg.exceptions import TableAlreadyExistsError
    from pyiceberg.schema import assign_fresh_schema_ids

    stream = plan.stream.name
    terms = [parse_term(entry) for entry in plan.stream.table_layout.partition_by]
    # Field ids as the catalog assigns them (in order), so the spec can name its sources.
    schema = assign_fresh_schema_ids(CatalogClass._convert_schema_if_needed(arrow_schema))
    spec = partition_spec(terms, schema, stream)
    try:
        tx = catalog.create_table_transaction(identifier, schema=schema, partition_spec=spec,
                                              properties=user_properties(plan))
        location = tx.table_metadata.location
        if not reaches(location):
            raise ConfigError(
                f"the catalog puts Iceberg table {identifier} at {location}, where the tasks "
                "do not write: the catalog's warehouse must be the configured one (a local "
                "path or file:// URI, or the S3 bucket of an s3a:// warehouse; the table was "
                "not created)", stream=stream, field="destination.config.catalog")
        tx.set_properties({_catalog.NAME_MAPPING_PROPERTY:
                           tx.table_metadata.schema().name_mapping.model_dump_json()})
        table = tx.commit_transaction()
    except TableAlreadyExistsError:
        table = catalog.load_table(identifier)
        apply_to_existing(table, plan)
    return _catalog.with_name_mapping(table)


def apply_to_existing(table: Table, plan: StreamPlan) -> Table:
    """Report a partitioning other than the stream asks; set the properties that differ."""
    asked = [parse_term(entry) for entry in plan.stream.table_layout.partition_by]
    has = [_term_of(field, table.schema()) for field in table.spec().fields]
    if asked and asked != has:
        log.warning("stream %s: the Iceberg table %s is %s, and the stream asks for "
                    "partition_by [%s]; an existing table's partitioning is not changed by a "
                    "sync (its files would need rewriting: the table owner's call)",
                    plan.stream.name, ".".join(table.name()),
                    f"partitioned by [{', '.join(_spelling(t) for t in has)}]" if has
                    else "not partitioned", ", ".join(_spelling(t) for t in asked))
    wanted = user_properties(plan)
    changed = {k: v for k, v in wanted.items() if table.properties.get(k) != v}
    if changed:
        with table.transaction() as tx:
            tx.set_properties(changed)
        table = table.refresh()
    return table


def _iceberg_name(term: PartitionTerm) -> str:
    return f"{term.transform}[{term.width}]" if term.width is not None else term.transform


def _spelling(term: PartitionTerm) -> str:
    """The term as a connection file spells it (``days(ts)``, ``bucket(16, id)``)."""
    if term.is_identity:
        return term.column
    if term.width is not None:
        return f"{term.transform}({term.width}, {term.column})"
    return f"{term.transform}s({term.column})"


def _term_of(field: Any, schema: Schema) -> PartitionTerm:
    """A table's partition field as a term (its transform's Iceberg name parsed back)."""
    column = schema.find_column_name(field.source_id) or str(field.source_id)
    name = str(field.transform)
    if "[" in name:
        kind, width = name.rstrip("]").split("[")
        return PartitionTerm(column=column, transform=kind, width=int(width))
    return PartitionTerm(column=column, transform=name)


# ----------------------------------------------------------------- writing (tasks)

@dataclass(frozen=True)
class _Key:
    """One partition field, as a task computes it: picklable PyIceberg objects."""

    column: str
    field: Any  # pyiceberg PartitionField
    schema: Any  # pyiceberg Schema (the table's)


def partition_keys(table: Table) -> tuple[_Key, ...]:
    """What the tasks need to split rows by ``table``'s current spec (empty: unpartitioned)."""
    schema = table.schema()
    return tuple(_Key(column=schema.find_column_name(f.source_id) or "", field=f, schema=schema)
                 for f in table.spec().fields)


@dataclass
class PartitionedParquetFiles(ParquetFiles):
    """Writes a task's batches into one Parquet file per partition value under ``folder``.

    The Delta destination's ``ParquetFiles`` (same files, same ``FILE_SCHEMA``
    rows, no Delta statistics: ``stats_columns=()``) for a partitioned Iceberg
    table: a file is started for each partition value the task meets and closed
    at the end (or after ``max_rows_per_file`` rows).  Runs on the executors:
    plain values and PyIceberg's picklable spec objects only.
    """

    keys: tuple[_Key, ...] = ()

    def write(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files: dict[tuple[Any, ...], _File] = {}
        try:
            for batch in batches:
                for value, rows in split(batch, self.keys):
                    current = files.get(value)
                    if current is None:
                        current = files[value] = self.open_file(rows.schema, ())
                    elif rows.schema != current.schema:
                        rows = rows.cast(current.schema)
                    current.write(rows)
                    if self.is_full(current):
                        yield files.pop(value).close()
            while files:
                yield files.popitem()[1].close()
        finally:
            for left in files.values():  # the task failed: no half-written file stays
                left.abandon()


def files_writer(settings: _properties.FileSettings, folder: TableFolder,
                 keys: tuple[Any, ...] = (), *, name_tag: str = "") -> ParquetFiles:
    """The tasks' writer into ``folder``, as the table's properties ask (``settings``): one
    file per partition value when ``keys``; ``name_tag`` in each file's name."""
    # No Delta statistics: Iceberg reads each file's metrics from its footer.
    if keys:
        return PartitionedParquetFiles(
            folder=folder.uri, stats_columns=(), store=folder.store, keys=keys,
            compression=settings.compression, compression_level=settings.compression_level,
            max_bytes_per_file=settings.max_bytes_per_file, name_tag=name_tag)
    return ParquetFiles(folder=folder.uri, stats_columns=(), store=folder.store,
                        compression=settings.compression,
                        compression_level=settings.compression_level,
                        max_bytes_per_file=settings.max_bytes_per_file, name_tag=name_tag)


def split(batch: pa.RecordBatch, keys: Sequence[_Key]) -> Iterator[tuple[tuple[Any, ...],
                                                                          pa.RecordBatch]]:
    """``batch``'s rows grouped by their partition value (a tuple, one item per key)."""
    if batch.num_rows == 0:
        return
    values = [_partition_values(batch.column(key.column), key) for key in keys]
    if all(len(v.unique()) == 1 for v in values):  # the usual case: one partition per batch
        yield tuple(v[0].as_py() for v in values), batch
        return
    names = [f"k{i}" for i in range(len(values))]
    grouped = pa.table([*values, pa.array(range(batch.num_rows), pa.int64())],
                       names=[*names, "row"]).group_by(names, use_threads=False).aggregate(
        [("row", "list")])
    for index in range(grouped.num_rows):
        value = tuple(grouped.column(name)[index].as_py() for name in names)
        yield value, batch.take(grouped.column("row_list")[index].values)


def _partition_values(column: pa.Array, key: _Key) -> pa.Array:
    """Each row's partition value for ``key`` (PyIceberg's transform of each distinct value).

    Timestamps are first floored to the hour: every time transform is a
    function of the hour, and there are far fewer distinct hours than values.
    """
    from pyiceberg.partitioning import partition_record_value
    from pyiceberg.transforms import TimeTransform

    if str(key.field.transform) == "identity":
        return column
    if isinstance(key.field.transform, TimeTransform) and pa.types.is_timestamp(column.type):
        column = pc.floor_temporal(column, unit="hour")
    distinct = pc.unique(column)
    source = key.schema.find_field(key.field.source_id).field_type
    transform = key.field.transform.transform(source)
    mapped = [None if value is None
              else transform(partition_record_value(key.field, value, key.schema))
              for value in distinct.to_pylist()]
    return pa.array(mapped).take(pc.index_in(column, distinct))


# ----------------------------------------------------------------- committing (driver)

def partitioned_data_file(table: Table, path: str) -> DataFile:
    """As PyIceberg's ``parquet_file_to_data_file``, with the partition record proven.

    PyIceberg infers it only for order-preserving transforms (not ``bucket``),
    and from the minimum alone where nulls sit beside values; here every field
    is the transform of a value the file holds, the same for its minimum and
    maximum, and a file mixing nulls and values in a source column is refused.
    """
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        _check_pyarrow_schema_compatible,
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    metadata = table.metadata
    schema = metadata.schema()
    input_file = table.io.new_input(path)
    with input_file.open() as stream:
        parquet_metadata = pq.read_metadata(stream)
    _check_pyarrow_schema_compatible(schema, parquet_metadata.schema.to_arrow_schema(),
                                     format_version=metadata.format_version)
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=parquet_metadata,
        stats_columns=compute_statistics_plan(schema, metadata.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema))
    values = [_partition_value(field, statistics, schema, path)
              for field in metadata.spec().fields]
    return DataFile.from_args(
        content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
        partition=Record(*values), file_size_in_bytes=len(input_file), sort_order_id=None,
        spec_id=metadata.default_spec_id, equality_ids=None, key_metadata=None,
        **statistics.to_serialized_dict())


def _partition_value(field: Any, statistics: Any, schema: Schema, path: str) -> Any:
    from pyiceberg.partitioning import partition_record_value

    source = schema.find_field(field.source_id)
    nulls = statistics.null_value_counts.get(field.source_id, 0)
    if nulls == statistics.record_count:
        return None
    aggregate = statistics.column_aggregates.get(field.source_id)
    if nulls or aggregate is None:
        raise DestinationError(
            f"data file {path} cannot be given one value of partition field {field.name}: its "
            f"column {source.name} " + ("mixes nulls and values" if nulls
                                         else "has no statistics"))
    transform = field.transform.transform(source.field_type)
    low = transform(partition_record_value(field, aggregate.current_min, schema))
    high = transform(partition_record_value(field, aggregate.current_max, schema))
    if low != high:
        raise DestinationError(f"data file {path} holds more than one value of partition "
                               f"field {field.name} ({low!r} and {high!r})")
    return low


__all__ = ["PartitionedParquetFiles", "apply_to_existing", "create_table", "files_writer",
           "partition_keys",
           "partition_spec", "partitioned_data_file", "split", "user_properties"]
