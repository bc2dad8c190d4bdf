"""A Delta table's layout: created as the stream asks, never changed behind the owner's back.

A stream's ``table_layout`` (partitions, liquid clustering, properties) is applied
when the table is created; an existing table gets the properties it lacks, and a
layout that differs is reported, not changed (:func:`_report_layout`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from headwater.destinations.delta import _sql
from headwater.destinations.delta._stats import STATS_PROPERTY, stats_columns, with_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from headwater.plan import StreamPlan, TableLayout

log = logging.getLogger(__name__)


def _create_table(spark: SparkSession, location: str, schema: StructType,
                  layout: TableLayout, defaults: Mapping[str, str] | None = None) -> None:
    """Create the stream's table through Spark: empty, with ``schema``, laid out as ``layout``.

    Without a layout, an empty append (the table's first commit, as a first
    write makes it); with one, ``CREATE TABLE ... AS SELECT`` (``_sql.create_table``
    says why).  Either way the table lists its statistics columns, as Delta
    requires: a clustered table's list names its clustering columns, a
    partitioned table's leaves its partition columns out (their values are in
    the log, not in the files).  ``defaults`` are Headwater's own properties for
    this kind of table (a history table's deletion vectors); the layout's
    properties win over them, so a stream can turn one off.
    """
    if layout.is_default:
        writer = spark.createDataFrame([], schema).write.format("delta").mode("append").option(
            STATS_PROPERTY, stats_columns(schema))
        for key, value in (defaults or {}).items():  # ``delta.*``: the new table's properties
            writer = writer.option(key, value)
        writer.save(location)
        return
    wanted = {**(defaults or {}), **layout.properties}
    listed = stats_columns([f for f in schema if f.name not in layout.partition_by])
    properties = {STATS_PROPERTY: with_columns(listed, layout.cluster_by), **wanted}
    _sql.create_table(spark, location, spark.createDataFrame([], schema),
                      partition_by=layout.partition_by, cluster_by=layout.cluster_by,
                      properties=properties)


def _properties_to_set(layout: TableLayout, properties: Mapping[str, str]) -> dict[str, str]:
    """The stream's table properties the table lacks or holds with another value."""
    return {k: v for k, v in layout.properties.items() if properties.get(k) != v}


def _report_layout(plan: StreamPlan, location: str, table: _sql.TableDetail) -> None:
    """Warn when an existing table is partitioned or clustered otherwise than the stream asks.

    Not changed by the sync: re-partitioning rewrites every file of the table,
    and even a clustering change (``ALTER TABLE ... CLUSTER BY``) decides how
    every later write lays out its files, so it is the table owner's call.  A
    stream that names neither ``partition_by`` nor ``cluster_by`` asks nothing.
    """
    layout = plan.stream.table_layout
    if not (layout.partition_by or layout.cluster_by):
        return
    if (tuple(table.partition_columns) == tuple(layout.partition_by)
            and tuple(table.clustering_columns) == tuple(layout.cluster_by)):
        return
    log.warning(
        "stream %s: the Delta table at %s is %s, and the stream asks for %s; an existing "
        "table's layout is not changed by a sync (to change it, re-create the table, or "
        "ALTER TABLE ... CLUSTER BY for clustering)", plan.stream.name, location,
        _layout_words(table.partition_columns, table.clustering_columns),
        _layout_words(layout.partition_by, layout.cluster_by, asked=True))


def _layout_words(partition_by: Sequence[str], cluster_by: Sequence[str], *,
                  asked: bool = False) -> str:
    """A layout in words: ``partitioned by (a, b)``, ``clustered by (c)``, or neither."""
    if partition_by:
        return (f"partition_by [{', '.join(partition_by)}]" if asked
                else f"partitioned by ({', '.join(partition_by)})")
    if cluster_by:
        return (f"cluster_by [{', '.join(cluster_by)}]" if asked
                else f"clustered by ({', '.join(cluster_by)})")
    return "neither partitioned nor clustered"
