"""The files destination's config: its JSON Schema and the settings resolved from it.

Why a module of its own: the spec and what it resolves to (the codec a format
defaults to, the extension a file gets) are plain data, tested without Spark.
Which codecs a format takes is said twice on purpose: once in the spec
(``if``/``then``), so ``headwater validate`` names ``destination.config.compression``
and the codecs allowed, and once here, for a config built without validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.errors import ConfigError

FORMATS = ("parquet", "jsonl", "csv")
#: The codecs each format takes; the first is its default.
CODECS: dict[str, tuple[str, ...]] = {
    "parquet": ("snappy", "zstd", "gzip", "none"),
    "jsonl": ("none", "gzip", "zstd"),
    "csv": ("none", "gzip", "zstd"),
}
#: What a compressed text file's name ends with, by codec.
_TEXT_SUFFIX = {"none": "", "gzip": ".gz", "zstd": ".zst"}


def spec() -> dict[str, Any]:
    """JSON Schema of ``destination.config``."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Files destination (Parquet, JSON Lines, CSV)",
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": {
                "type": "string", "minLength": 1,
                "description": "The folder holding one folder per stream: a local path "
                "(or file:///...), s3://bucket/prefix (s3a:// too) or "
                "abfss://container@account.dfs.core.windows.net/prefix, reached with the "
                "connection's spark.hadoop.fs.s3a.* / fs.azure.* settings.",
            },
            "format": {
                "type": "string", "enum": list(FORMATS), "default": "parquet",
                "description": "parquet (default), jsonl (JSON Lines) or csv.",
            },
            "compression": {
                "type": "string",
                "enum": sorted({codec for codecs in CODECS.values() for codec in codecs}),
                "description": "parquet: snappy (default), zstd, gzip or none; jsonl and "
                "csv: none (default), gzip or zstd (the whole file compressed).",
            },
        },
        "allOf": [
            {"if": {"properties": {"format": {"const": fmt}}},
             "then": {"properties": {"compression": {"enum": list(codecs)}}}}
            for fmt, codecs in CODECS.items()
        ],
    }


@dataclass(frozen=True)
class FilesSettings:
    """What a config resolves to: where, which format, which codec."""

    path: str
    format: str
    compression: str

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> FilesSettings:
        """The settings of ``config`` (defaults filled in), or a ConfigError naming the field."""
        path = config.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError("destination.config.path must name a folder (a local path, "
                              "s3://bucket/prefix or abfss://...)", field="destination.config.path")
        fmt = config.get("format") or "parquet"
        if fmt not in CODECS:
            raise ConfigError(f"destination.config.format must be one of {', '.join(FORMATS)}, "
                              f"not {fmt!r}", field="destination.config.format")
        codec = config.get("compression") or CODECS[fmt][0]
        if codec not in CODECS[fmt]:
            raise ConfigError(f"destination.config.compression of a {fmt} destination must be "
                              f"one of {', '.join(CODECS[fmt])}, not {codec!r}",
                              field="destination.config.compression")
        return cls(path=path.rstrip("/") or path, format=fmt, compression=codec)

    @property
    def extension(self) -> str:
        """What a data file's name ends with after its stem (``.jsonl.gz``, ``.csv``...).

        Parquet files are named by the shared writer (``.snappy.parquet``)."""
        return f".{self.format}{_TEXT_SUFFIX.get(self.compression, '')}"


__all__ = ["CODECS", "FORMATS", "FilesSettings", "spec"]
