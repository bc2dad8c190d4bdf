"""Per-stream settings of a database source's config (``cursor_fields``,
``partition_columns``), keyed by stream name: a key that names no stream is refused.

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


__all__ = ["refuse_unknown_streams"]
