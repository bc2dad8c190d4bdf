"""Listing objects in key order, with an identity that says when one changed.

Keys are the object paths relative to the source's ``url`` ("2024/01/a.csv"),
compared as Python strings (code point order), which for ASCII keys is the
order S3 lists in.  Listing goes through fsspec, so a local folder, S3, GCS and
Azure look the same; the listing cache is dropped before every listing so a
watching sync sees objects that arrived since the last poll.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import fsspec
from fsspec.utils import glob_translate

from headwater.errors import ConfigError, ConnectorError

__all__ = ["ObjectInfo", "list_objects", "open_filesystem", "root_path"]


@dataclass(frozen=True)
class ObjectInfo:
    """One object: its key (relative to the url), full path, size and identity.

    ``identity`` is the store's ETag (S3, GCS, Azure) or ``"size:mtime"`` where
    there is none (local folders): equal identities mean the same content.
    """

    key: str
    path: str
    size: int
    identity: str


def open_filesystem(url: str, options: dict[str, Any]) -> tuple[fsspec.AbstractFileSystem, str]:
    """The filesystem of ``url`` and the url's root path within it (no trailing slash)."""
    try:
        if _gcs_json_endpoint(url, options):
            fs, root = _json_api_gcs(url, options)
        else:
            fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True, **options)
    except (ImportError, ValueError) as exc:
        raise ConnectorError(f"cannot open {url}: {exc}", field="source.config.url") from exc
    return fs, root.rstrip("/")


def _gcs_json_endpoint(url: str, options: dict[str, Any]) -> bool:
    return url.split("://", 1)[0] in ("gs", "gcs") and bool(options.get("endpoint_url"))


def _json_api_gcs(url: str, options: dict[str, Any]) -> tuple[fsspec.AbstractFileSystem, str]:
    """gcsfs's JSON-API filesystem, for a GCS ``endpoint_url`` (an emulator, a proxy).

    gcsfs registers for gs:// a subclass that first asks the Storage Control gRPC
    API of the endpoint for each bucket's layout.  An endpoint that speaks only
    the JSON API fails that call after a 60 s timeout, and since gcsfs does not
    remember the failure, every listing and read pays it again.  The base class
    reads the same buckets through the JSON API alone.
    """
    try:
        from gcsfs.core import GCSFileSystem
    except ImportError as exc:
        raise ImportError("gs:// needs gcsfs: pip install 'headwater[gcs]'") from exc
    fs = GCSFileSystem(skip_instance_cache=True, **options)
    return fs, str(fs._strip_protocol(url))


def root_path(root: str, prefix: str) -> str:
    return f"{root}/{prefix}".rstrip("/") if prefix else root


@cache
def _pattern(glob: str) -> re.Pattern[str]:
    try:
        return re.compile(glob_translate(glob))
    except (ValueError, re.error) as exc:
        raise ConfigError(f"invalid glob {glob!r}: {exc}", field="source.config.streams.globs"
                          ) from exc


def matches(key: str, globs: Sequence[str]) -> bool:
    return any(_pattern(g).fullmatch(key) for g in globs)


def _identity(info: dict[str, Any]) -> str:
    for name in ("ETag", "etag", "md5Hash", "generation"):
        value = info.get(name)
        if value:
            return str(value).strip('"')
    mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") \
        or info.get("last_modified")
    if isinstance(mtime, datetime):
        mtime = mtime.timestamp()
    return f"{info.get('size', 0)}:{mtime}"


def list_objects(fs: fsspec.AbstractFileSystem, root: str, prefix: str,
                 globs: Iterable[str]) -> list[ObjectInfo]:
    """Every object under ``root/prefix`` whose key matches a glob, sorted by key."""
    patterns = list(globs)
    fs.invalidate_cache()
    where = root_path(root, prefix)
    try:
        found = fs.find(where, detail=True, withdirs=False) if fs.exists(where) else {}
    except FileNotFoundError:
        found = {}
    except Exception as exc:  # the store's own errors: auth, network, bucket missing
        raise ConnectorError(f"cannot list {fs.unstrip_protocol(where)}: "
                             f"{type(exc).__name__}: {exc}") from exc
    objects = []
    start = len(root) + 1 if root else 0
    for path, info in found.items():
        if info.get("type") == "directory":
            continue
        key = path[start:] if path.startswith(root) else path
        if matches(key, patterns):
            objects.append(ObjectInfo(key=key, path=path, size=int(info.get("size") or 0),
                                      identity=_identity(info)))
    objects.sort(key=lambda o: o.key)
    return objects
