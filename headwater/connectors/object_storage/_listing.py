"""Listing objects in key order, with an identity that says when one changed.

Keys are the object paths relative to the source's ``url`` ("2024/01/a.csv"),
compared as Python strings (code point order), which is the order S3 lists in
(UTF-8 bytes sort as code points).  Listing streams: objects come one by one,
in key order, filtered by the globs as they come, so a prefix of a million
objects is never held whole by the listing (the planner keeps only what it
plans).  How each store is walked:

* a local folder: ``os.scandir``, one folder at a time, entries sorted so that
  the walk yields keys in code point order (a folder ``a`` sorts as ``a/``);
* S3: s3fs's own paged ``ListObjectsV2`` (each page retried like any s3fs
  request), one page of up to 1,000 keys at a time, which S3 returns in order;
* GCS, Azure and any other fsspec store: ``fs.find`` (their fsspec
  implementations have no paged listing to reuse), one dict of the prefix,
  walked in key order.

The listing cache is dropped before every listing so a watching sync sees
objects that arrived since the last poll.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import fsspec
from fsspec.asyn import sync
from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import glob_translate

from headwater.errors import ConfigError, ConnectorError

__all__ = ["ObjectInfo", "iter_objects", "open_filesystem", "root_path"]


class ObjectInfo(NamedTuple):
    """One object: its key (relative to the url), full path, size and identity.

    ``identity`` is the store's ETag (S3, GCS, Azure) or ``"size:mtime"`` where
    there is none (local folders): equal identities mean the same content.
    A tuple, not a dataclass: a listing makes one per object, a million at times.
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


@cache
def _any_pattern(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all of ``globs``: a listing tests every key once, not once per glob."""
    return re.compile("|".join(f"(?:{_pattern(g).pattern})" for g in globs))


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


def iter_objects(fs: fsspec.AbstractFileSystem, root: str, prefix: str,
                 globs: Iterable[str], after: str | None = None) -> Iterator[ObjectInfo]:
    """Every object under ``root/prefix`` whose key matches a glob, in key order, one by one.

    Keys at or below ``after`` are skipped as the store lists: S3 starts after
    it (``StartAfter``: the keys below are not even sent), a local walk does not
    open a folder whose keys all sort below it, other stores drop them as they
    come.  The cursor's floor key goes here (:meth:`._cursor.ObjectCursor.skip_below`).
    """
    wanted = _any_pattern(tuple(globs)).fullmatch  # a bad glob fails before the store is asked
    fs.invalidate_cache()
    where = root_path(root, prefix)
    start = len(root) + 1 if root else 0
    after_path = (f"{root}/{after}" if root else after) if after is not None else None
    if isinstance(fs, LocalFileSystem):
        listed = _local_files(where, after_path)
    elif _is_paged_s3(fs):
        listed = _s3_files(fs, where, after_path)
    else:
        listed = _found_files(fs, where, after_path)
    try:
        for path, size, identity in listed:
            key = path[start:] if path.startswith(root) else path
            if wanted(key):
                yield ObjectInfo(key=key, path=path, size=size, identity=identity)
    except FileNotFoundError:
        return  # the prefix (or bucket) does not exist: no objects, as an empty folder
    except Exception as exc:  # the store's own errors: auth, network
        raise ConnectorError(f"cannot list {fs.unstrip_protocol(where)}: "
                             f"{type(exc).__name__}: {exc}") from exc


Listed = Iterator[tuple[str, int, str]]  # (path, size, identity)


def _local_files(where: str, after: str | None = None) -> Listed:
    """A local folder walked in key order, as fsspec's local ``find`` sees it (a link to a
    folder is not followed, a link to a file is an object of the file's size)."""
    if not os.path.isdir(where):
        if os.path.lexists(where) and (after is None or where > after):
            stat = os.stat(where)
            yield where, stat.st_size, _identity({"size": stat.st_size, "mtime": stat.st_mtime})
        return
    with os.scandir(where) as found:
        entries = sorted(((e.name + "/" if e.is_dir(follow_symlinks=False) else e.name), e)
                         for e in found)
    for name, entry in entries:
        if name.endswith("/"):
            folder = entry.path + "/"
            # every key in the folder starts with folder/: all at or below ``after`` when
            # ``after`` sorts above folder/ without starting with it
            if after is None or not (after > folder and not after.startswith(folder)):
                yield from _local_files(entry.path, after)
            continue
        if after is not None and entry.path <= after:
            continue
        try:
            stat = entry.stat(follow_symlinks=False)
            size = entry.stat().st_size if entry.is_symlink() else stat.st_size
        except FileNotFoundError:
            continue  # deleted since the folder was read
        # _identity's "size:mtime", without a dict per object
        yield entry.path, size, f"{size}:{stat.st_mtime or None}"


def _is_paged_s3(fs: fsspec.AbstractFileSystem) -> bool:
    """s3fs with its paged listing (2025.x on); a versioned bucket lists versions: find."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return bool({"s3", "s3a"} & set(protocols)) and hasattr(fs, "_list_pages") \
        and not getattr(fs, "version_aware", False)


def _s3_files(fs: Any, where: str, after: str | None = None) -> Listed:
    """Pages of ``ListObjectsV2`` through s3fs's retried calls; S3 returns keys in order."""
    bucket, _, path = where.partition("/")
    start_after = {"StartAfter": after.partition("/")[2]} if after else {}
    pages = fs._list_pages("list_objects_v2", Bucket=bucket,
                           Prefix=f"{path}/" if path else "", **start_after, **fs.req_kw)
    while True:
        try:
            page = sync(fs.loop, pages.__anext__)
        except StopAsyncIteration:
            return
        for item in page.get("Contents", ()):
            key = item["Key"]
            if not key.endswith("/"):  # a folder marker, not an object
                yield f"{bucket}/{key}", int(item.get("Size") or 0), _identity(item)


def _found_files(fs: fsspec.AbstractFileSystem, where: str, after: str | None = None) -> Listed:
    found = fs.find(where, detail=True, withdirs=False) if fs.exists(where) else {}
    for path in sorted(found):
        info = found[path]
        if info.get("type") != "directory" and (after is None or path > after):
            yield path, int(info.get("size") or 0), _identity(info)
