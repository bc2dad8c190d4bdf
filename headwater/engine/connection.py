"""From a connection file to a ready source and its configured streams.

Shared by ``sync``, ``check`` and ``discover``: validate the source config
against the connector's spec (errors name the field), register its secrets for
masking before anything can print them, and merge each configured stream with
the source's own defaults (cursor field, primary key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from headwater.config import (
    ConnectionConfig,
    StreamConfig,
    register_secrets,
    secret_values,
    validate_config,
)
from headwater.connectors import get_source_class
from headwater.destinations import table_properties_refusal
from headwater.errors import ConfigError
from headwater.expectations import quarantine_refusal, unknown_columns_problem
from headwater.partition_terms import parse_term
from headwater.plan import ConfiguredStream, TableLayout
from headwater.protocol import AirbyteCatalog, AirbyteStream, DestinationSyncMode, SyncMode
from headwater.sdk import INCREMENTAL, Source, Stream
from headwater.table_schema import META_NAMES, json_columns_problem

if TYPE_CHECKING:
    from headwater.engine._spark import SparkSettings


def build_source(connection: ConnectionConfig, spark: SparkSettings | None = None) -> Source:
    """The connection's source, its secrets registered first.  ``spark``: the settings
    of the session to start for a source that asks through Spark
    (:attr:`~headwater.sdk.Source.needs_spark`; a sync's, with its ``--master`` and
    ``--conf``), else the connection file's."""
    source_cls = get_source_class(connection.source.type)
    spec = source_cls.spec()
    # Secrets are registered from the raw config first, so even a validation
    # error that quotes a value cannot show one.
    register_secrets(secret_values(spec, connection.source.config))
    config = validate_config(spec, connection.source.config, where="source.config",
                             source_lines=connection.field_lines)
    register_secrets(secret_values(spec, config))
    if source_cls.needs_spark:
        _session_for(connection, spark)
    return source_cls(config)


def _session_for(connection: ConnectionConfig, settings: SparkSettings | None) -> None:
    """The connection's Spark session running (a sync's, a notebook's, or one started
    as ``headwater sync`` starts it), for a source that asks through Spark
    (:attr:`~headwater.sdk.Source.needs_spark`)."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        SparkSession.active()
        return
    except PySparkRuntimeError:
        pass
    from headwater.engine._spark import get_spark

    if settings is None:
        file_spark = connection.spark
        settings = SparkSettings(master=file_spark.master if file_spark else None,
                                 remote=file_spark.remote if file_spark else None,
                                 conf=dict(file_spark.conf) if file_spark else {},
                                 app_name=f"headwater-{connection.name}")
    get_spark(settings)


def resolve_streams(source: Source, connection: ConnectionConfig, *,
                    schemas: bool = True) -> list[ConfiguredStream]:
    """The streams to sync: those the file lists, or every stream as full refresh.

    Refuses (ConfigError, naming the field) every stream setting the source's
    streams cannot honour; ``sync``, ``plan``, ``check`` and ``validate`` all
    refuse through here.  ``schemas``: check the columns the settings name
    against each stream's schema too (False for ``validate`` where learning a
    schema would reach the source: the source's ``offline_catalog``).
    """
    available = {s.stream_name: s for s in source.streams()}
    if not connection.streams:
        return [ConfiguredStream(name=name, sync_mode=SyncMode.FULL_REFRESH,
                                 destination_sync_mode=DestinationSyncMode.OVERWRITE,
                                 cursor_field=stream.cursor_field,
                                 primary_key=tuple(stream.primary_key))
                for name, stream in available.items()]
    resolved = []
    for position, configured in enumerate(connection.streams):
        where = f"streams[{position}]"
        stream = available.get(configured.name)
        if stream is None:
            known = ", ".join(sorted(available))
            raise ConfigError(f"the source has no stream {configured.name!r}; it has: {known}",
                              field=f"{where}.name")
        cursor_field = _cursor_field(stream, configured, where, schemas)
        primary_key = tuple(configured.primary_key or stream.primary_key)
        if configured.destination_sync_mode in _KEYED and not primary_key:
            raise ConfigError(f"{configured.destination_sync_mode} needs a primary key and "
                              f"stream {configured.name!r} has none",
                              field=f"{where}.primary_key")
        if configured.deletes == "hard" and schemas:
            problem = hard_deletes_problem(stream.json_schema())
            if problem is not None:
                raise ConfigError(f"stream {configured.name!r}: {problem}",
                                  field=f"{where}.deletes")
        # The stream's own refusals of a sync mode come with its cursor, made as the
        # plan makes it (notification discovery reads only new objects, say).
        stream.cursor(None, configured.sync_mode == INCREMENTAL)
        problem = (json_columns_problem(stream.json_schema(), configured.json_columns)
                   if configured.json_columns and schemas else None)
        if problem is not None:
            raise ConfigError(f"stream {configured.name!r}: {problem}",
                              field=f"{where}.json_columns")
        refused = destination_problem(connection.destination.type, configured)
        if refused is not None:
            setting, problem = refused
            raise ConfigError(f"stream {configured.name!r}: {problem}",
                              field=f"{where}.{setting}")
        for setting in ("partition_by", "cluster_by"):
            entries = getattr(configured, setting)
            problem = (layout_columns_problem(stream.json_schema(), setting, entries)
                       if entries and schemas else None)
            if problem is not None:
                raise ConfigError(f"stream {configured.name!r}: {problem}",
                                  field=f"{where}.{setting}")
        if configured.expectations and schemas:
            columns = [*(stream.json_schema().get("properties") or {}), *META_NAMES]
            problem = unknown_columns_problem(configured.name, configured.expectations, columns)
            if problem is not None:
                raise ConfigError(problem, field=f"{where}.expectations")
        resolved.append(ConfiguredStream(
            name=configured.name, sync_mode=configured.sync_mode,
            destination_sync_mode=configured.destination_sync_mode,
            cursor_field=cursor_field, primary_key=primary_key,
            json_columns=tuple(configured.json_columns),
            table_layout=TableLayout(partition_by=tuple(configured.partition_by),
                                     cluster_by=tuple(configured.cluster_by),
                                     properties=dict(configured.table_properties)),
            deletes=configured.deletes or default_deletes(connection.destination.type,
                                                          configured.destination_sync_mode)))
    return resolved


def destination_problem(destination_type: str,
                        configured: StreamConfig) -> tuple[str, str] | None:
    """The first setting of ``configured`` the ``destination_type`` destination cannot
    honour, and why: ``(setting, why)``, or None.

    From the destination's declared capabilities alone (no source, no schema), so
    ``sync``, ``plan``, ``check`` and ``validate`` refuse the same settings, whether or
    not the source's streams can be known offline.  A setting a destination would
    otherwise ignore (``table_properties`` on a PostgreSQL table, ``partition_by`` on a
    topic, ``deletes: soft`` where a delete is a tombstone) is refused here, naming it.
    A destination built in code (a test's) has no class to ask: its ``prepare`` decides.
    """
    from headwater.destinations import get_destination_class

    try:
        get_destination_class(destination_type)
    except ConfigError:
        return None
    problem = history_kind_problem(destination_type, configured.destination_sync_mode)
    if problem is not None:
        return "destination_sync_mode", problem
    for setting in ("partition_by", "cluster_by"):
        problem = layout_kind_problem(destination_type, setting, getattr(configured, setting))
        if problem is not None:
            return setting, problem
    problem = deletes_kind_problem(destination_type, configured.deletes)
    if problem is not None:
        return "deletes", problem
    if any(e.action == "quarantine" for e in configured.expectations):
        problem = quarantine_refusal(destination_type)
        if problem is not None:
            return "expectations", problem
    problem = table_properties_refusal(destination_type, configured.table_properties)
    if problem is not None:
        return "table_properties", problem
    return None


def deletes_kind_problem(destination_type: str, deletes: str | None) -> str | None:
    """Why ``destination_type`` cannot do what a stream's ``deletes`` asks (None: it can,
    or the stream leaves it to the destination's default)."""
    from headwater.destinations import get_destination_class

    if deletes is None:
        return None
    kinds = get_destination_class(destination_type).capabilities.deletes
    if deletes in kinds:
        return None
    return (f"deletes: {deletes}: the {destination_type} destination takes deletes: "
            f"{' or '.join(kinds)} only, and does that when deletes is left out; leave it "
            "out, or use a destination that keeps a deleted row flagged (deletes: soft)")


def default_deletes(destination_type: str, mode: DestinationSyncMode) -> str:
    """What an ``append_dedup`` stream that says nothing of ``deletes`` gets on
    ``destination_type``: its first declared kind (``soft``, but ``hard`` where a delete is
    a tombstone)."""
    from headwater.destinations import get_destination_class

    if mode is not DestinationSyncMode.APPEND_DEDUP:
        return "soft"
    try:
        return get_destination_class(destination_type).capabilities.deletes[0]
    except ConfigError:
        return "soft"


#: The destination sync modes that keep rows by primary key (and so need one).
_KEYED = (DestinationSyncMode.APPEND_DEDUP, DestinationSyncMode.HISTORY)


def hard_deletes_problem(json_schema: Mapping[str, Any]) -> str | None:
    """Why ``deletes: hard`` cannot apply to a stream of ``json_schema`` (None: it can).

    A hard delete is a tombstone row the source flags (``DELETED_COLUMNS``): a
    stream without such a column has no deletes to apply, and the setting would
    silently do nothing.
    """
    from headwater.destinations._deletes import DELETED_COLUMNS

    columns = set(json_schema.get("properties") or {})
    if any(name in columns for name in DELETED_COLUMNS):
        return None
    return ("deletes: hard needs a stream whose rows say they are deletes (a column "
            f"{' or '.join(DELETED_COLUMNS)}, as the postgres source's CDC streams have), "
            "and this stream has none")


def _cursor_field(stream: Stream, configured: StreamConfig, where: str,
                  schemas: bool) -> str | None:
    """The cursor the stream is synced with: the file's ``cursor_field``, else the
    stream's own; refused where the stream cannot read or order by it.

    A stream whose own cursor is not a record value (``versions_by_record_column``:
    an object's key) takes one of its columns for ``append_dedup``, where that
    column orders the versions of a key; its incremental reads keep its own cursor.
    """
    name = configured.name
    if configured.sync_mode == INCREMENTAL and INCREMENTAL not in stream.supported_sync_modes:
        raise ConfigError(f"stream {name!r} does not support incremental sync",
                          field=f"{where}.sync_mode")
    chosen = configured.cursor_field or stream.cursor_field
    if chosen == stream.cursor_field:
        return chosen
    if stream.versions_by_record_column:
        if configured.destination_sync_mode not in _KEYED:
            raise ConfigError(
                f"stream {name!r} reads new data by {stream.cursor_field!r}, not by a column "
                f"of its records: cursor_field {chosen!r} only orders the versions of a key in "
                "append_dedup and history (use destination_sync_mode: append_dedup, or leave "
                "it out)",
                field=f"{where}.cursor_field")
        columns = (stream.json_schema().get("properties") or {}) if schemas else None
        if columns is not None and chosen not in columns:
            raise ConfigError(f"stream {name!r} has no column {chosen!r} to order its "
                              f"versions by (cursor_field); it has: {', '.join(columns)}",
                              field=f"{where}.cursor_field")
        return chosen
    if configured.sync_mode == INCREMENTAL:
        raise ConfigError(
            f"stream {name!r} reads incrementally on its cursor "
            f"{stream.cursor_field!r}; another cursor field is not supported",
            field=f"{where}.cursor_field")
    return chosen


def history_kind_problem(destination_type: str, mode: DestinationSyncMode) -> str | None:
    """Why ``destination_type`` cannot keep a ``history`` stream (None: it can, or ``mode``
    is another).  From the destination's declared modes, before anything runs; the
    destination's own ``prepare`` says why in its own terms too."""
    from headwater.destinations import get_destination_class

    if mode is not DestinationSyncMode.HISTORY:
        return None
    try:
        declared = get_destination_class(destination_type).capabilities.sync_modes
    except ConfigError:  # a destination built in code (a test's): its prepare decides
        return None
    if DestinationSyncMode.HISTORY in declared:
        return None
    return (f"destination_sync_mode: the {destination_type} destination does not keep a row's "
            "versions (closing one changes a row already written); use append (every version "
            "lands as a row), or a destination that declares history (docs/history.md)")


def layout_kind_problem(destination_type: str, setting: str,
                        entries: Sequence[str]) -> str | None:
    """Why ``destination_type`` cannot lay its table out as ``setting: entries`` asks.

    From the destination's capabilities: some take partition transforms
    (``days(ts)``), some cannot cluster (``DestinationCapabilities``).
    """
    from headwater.destinations import get_destination_class

    if not entries:
        return None
    capabilities = get_destination_class(destination_type).capabilities
    if setting == "partition_by" and not capabilities.partitions_tables:
        return (f"partition_by: the {destination_type} destination's tables have no "
                "partitions by column, so the layout would be ignored; remove partition_by "
                "from the stream")
    if setting == "cluster_by" and not capabilities.clusters_tables:
        if not capabilities.partitions_tables:
            return (f"cluster_by: the {destination_type} destination does not cluster "
                    "tables; remove cluster_by from the stream")
        return (f"cluster_by: the {destination_type} destination does not cluster tables; "
                "use partition_by, e.g. [days(updated_at)] or [bucket(16, id)]")
    if setting == "partition_by" and not capabilities.partition_transforms:
        transforms = [e for e in entries if not parse_term(e).is_identity]
        if transforms:
            return (f"partition_by: {transforms[0]!r} is a partition transform; the "
                    f"{destination_type} destination partitions by plain columns")
    return None


def layout_columns_problem(json_schema: Mapping[str, Any], setting: str,
                           names: Sequence[str]) -> str | None:
    """Why the stream's table cannot be partitioned or clustered (``setting``) by ``names``.

    Checked when the sync starts, before any table is touched: a column the
    table will not have would otherwise fail the table's creation midway
    through the run.  The metadata columns (``_hw_extracted_at``...) count as
    columns; which types a column may have is the destination's to say.
    """
    known = set(json_schema.get("properties") or {}) | set(META_NAMES)
    for entry in names:
        # partition_by may name a column through a transform: days(updated_at).
        name = parse_term(entry).column if setting == "partition_by" else entry
        if name not in known:
            return f"{setting}: the stream has no column {name!r}"
    return None


def discover_catalog(source: Source) -> AirbyteCatalog:
    """The source's streams as an Airbyte catalog (what ``discover`` prints)."""
    streams = []
    for stream in source.streams():
        streams.append(AirbyteStream(
            name=stream.stream_name,
            namespace=stream.namespace,
            json_schema=stream.json_schema(),
            supported_sync_modes=[SyncMode(m) for m in stream.supported_sync_modes],
            source_defined_cursor=bool(stream.cursor_field) or None,
            default_cursor_field=[stream.cursor_field] if stream.cursor_field else None,
            source_defined_primary_key=[[k] for k in stream.primary_key] or None,
            is_resumable=True,
        ))
    return AirbyteCatalog(streams=streams)
