"""Per-stream settings of a database source's config (``cursor_fields``,
``partition_columns``), keyed by stream name: a key that names no stream is refused, and
so is a setting the stream's reads would not use.

Why: such a key is a typo or a table the role cannot see (``users`` for
``public.users`` once two schemas are read), and ignored it silently turns an
incremental read into "no cursor" or a split read into one partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from headwater.errors import ConfigError


def refuse_unknown_streams(settings: Mapping[str, Mapping[str, str]],
                           streams: Iterable[str]) -> None:
    """Raise a ConfigError naming the first key of ``settings`` (setting name -> stream ->
    column) that is not one of ``streams``, and the streams there are."""
    known = set(streams)
    for setting, per_stream in settings.items():
        for name in per_stream:
            if name not in known:
                raise ConfigError(
                    f"{setting}.{name}: the source has no stream {name!r} (a table the role "
                    "may not read is not one; with more than one schema a stream is named "
                    f"schema.table); it has: {', '.join(sorted(known)) or 'none'}",
                    field=f"source.config.{setting}.{name}")


def refuse_unused_stream_settings(cursor_fields: Mapping[str, str],
                                  partition_columns: Mapping[str, str], name: str, *,
                                  cdc: bool) -> None:
    """Refuse a per-stream setting the stream's reads would not use, naming it: a cursor
    column under change data capture (whose cursor is the log position), a split column
    beside a cursor column (the stream is read in windows of its cursor)."""
    if cdc and name in cursor_fields:
        raise ConfigError(
            f"cursor_fields.{name}: the stream is read by change data capture "
            "(replication_method: cdc, and its table has a primary key), whose cursor is the "
            "log position, so the column would be ignored; remove it",
            field=f"source.config.cursor_fields.{name}")
    if not cdc and name in cursor_fields and name in partition_columns:
        raise ConfigError(
            f"partition_columns.{name}: the stream is read in windows of its cursor "
            f"(cursor_fields.{name}), so the column would split nothing; remove one of them",
            field=f"source.config.partition_columns.{name}")


__all__ = ["refuse_unknown_streams", "refuse_unused_stream_settings"]
