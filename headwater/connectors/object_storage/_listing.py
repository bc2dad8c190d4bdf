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

import asyncio
import collections
import os
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import fsspec
from fsspec.asyn import sync
from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import glob_translate

from headwater.errors import ConfigError, ConnectorError

__all__ = ["ObjectInfo", "identity_of", "iter_objects", "open_filesystem", "root_path",
           "wanted_keys"]


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


def wanted_keys(globs: tuple[str, ...]) -> Callable[[str], Any]:
    """A test of a key against ``globs`` (true when one of them matches it whole)."""
    return _any_pattern(globs).fullmatch


def identity_of(info: dict[str, Any]) -> str:
    """An object's identity from its listing or HEAD entry (see :class:`ObjectInfo`)."""
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
    wanted = wanted_keys(tuple(globs))  # a bad glob fails before the store is asked
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
                yield ObjectInfo(key, path, size, identity)
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
            yield where, stat.st_size, identity_of({"size": stat.st_size, "mtime": stat.st_mtime})
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
        # identity_of's "size:mtime", without a dict per object
        yield entry.path, size, f"{size}:{stat.st_mtime or None}"


def _is_paged_s3(fs: fsspec.AbstractFileSystem) -> bool:
    """s3fs with its paged listing (2025.x on); a versioned bucket lists versions: find."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return bool({"s3", "s3a"} & set(protocols)) and hasattr(fs, "_list_pages") \
        and not getattr(fs, "version_aware", False)


#: Folders of the prefix's first level listed at once on S3, each up to PAGES_AHEAD pages
#: ahead of the reader: 8 cut a listing of 20 folders on moto from 40 s to 15 s
#: (bench/RESULTS.md); at most 8 x 2 pages of 1,000 keys wait in memory.
FOLDERS_AT_ONCE = 8
PAGES_AHEAD = 2
#: Objects of the first level held, at most, while they wait behind folders being listed.
WAITING_OBJECTS = 10_000


def _s3_files(fs: Any, where: str, after: str | None = None) -> Listed:
    """The prefix in key order: its first level (``Delimiter="/"``) lists its objects and
    folders, and up to ``FOLDERS_AT_ONCE`` folders are listed side by side.

    Every listing goes a page of ``ListObjectsV2`` at a time through s3fs's
    retried calls, and S3 returns keys in order, so each folder's keys, and the
    first level's objects and folders sorted together (a folder ``a/`` as the
    string ``a/``), are the prefix's keys in order.  Keys at or below ``after``
    are not listed: a folder all of whose keys sort below it is skipped, the
    folder holding it starts after it (``StartAfter``).
    """
    bucket, _, path = where.partition("/")
    base = f"{path}/" if path else ""
    after_key = after.partition("/")[2] if after else None
    waiting: collections.deque[tuple[str, Any]] = collections.deque()
    folders = 0
    try:
        for key, item in _s3_first_level(fs, bucket, base):
            if item is None:  # a folder
                if after_key is not None and after_key > key \
                        and not after_key.startswith(key):
                    continue
                start_after = after_key if after_key and after_key.startswith(key) else None
                waiting.append((key, _S3Folder(fs, bucket, key, start_after)))
                folders += 1
            elif after_key is None or key > after_key:
                waiting.append((key, item))
            while waiting and (not isinstance(waiting[0][1], _S3Folder)
                               or folders > FOLDERS_AT_ONCE or len(waiting) > WAITING_OBJECTS):
                folders -= isinstance(waiting[0][1], _S3Folder)
                yield from _s3_entry(bucket, waiting.popleft()[1])
        while waiting:
            yield from _s3_entry(bucket, waiting.popleft()[1])
    finally:
        for _, entry in waiting:  # a reader that stops early leaves no listing running
            if isinstance(entry, _S3Folder):
                entry.cancel()


def _s3_entry(bucket: str, entry: Any) -> Listed:
    items = entry.items() if isinstance(entry, _S3Folder) else (entry,)
    for item in items:
        key = item["Key"]
        if not key.endswith("/"):  # a folder marker, not an object
            yield f"{bucket}/{key}", int(item.get("Size") or 0), identity_of(item)


def _s3_first_level(fs: Any, bucket: str, base: str) -> Iterator[tuple[str, Any]]:
    """(key, object) and (folder key ending in "/", None) of the first level, in key order."""
    pages = fs._list_pages("list_objects_v2", Bucket=bucket, Prefix=base, Delimiter="/",
                           **fs.req_kw)
    while True:
        try:
            page = sync(fs.loop, pages.__anext__)
        except StopAsyncIteration:
            return
        entries = [(c["Prefix"], None) for c in page.get("CommonPrefixes", ())]
        entries += [(c["Key"], c) for c in page.get("Contents", ())]
        yield from sorted(entries, key=lambda entry: entry[0])


class _S3Folder:
    """One folder listed in s3fs's event loop, its pages queued (a few ahead) for the reader."""

    def __init__(self, fs: Any, bucket: str, prefix: str, start_after: str | None) -> None:
        self._fs = fs
        self._queue: asyncio.Queue[Any] | None = None
        extra = {"StartAfter": start_after} if start_after else {}
        self._task = asyncio.run_coroutine_threadsafe(
            self._fill(bucket, prefix, extra), fs.loop)

    async def _queued(self) -> asyncio.Queue[Any]:
        if self._queue is None:
            self._queue = asyncio.Queue(PAGES_AHEAD)
        return self._queue

    async def _fill(self, bucket: str, prefix: str, extra: dict[str, str]) -> None:
        queue = await self._queued()
        try:
            async for page in self._fs._list_pages("list_objects_v2", Bucket=bucket,
                                                   Prefix=prefix, **extra, **self._fs.req_kw):
                await queue.put(page.get("Contents", ()))
            await queue.put(None)
        except Exception as exc:  # handed to the reader, raised there
            await queue.put(exc)

    async def _next(self) -> Any:
        return await (await self._queued()).get()

    def items(self) -> Iterator[dict[str, Any]]:
        try:
            while True:
                page = sync(self._fs.loop, self._next)
                if page is None:
                    return
                if isinstance(page, Exception):
                    raise page
                yield from page
        finally:  # a reader that stops inside this folder stops its listing too
            self.cancel()

    def cancel(self) -> None:
        self._task.cancel()


def _found_files(fs: fsspec.AbstractFileSystem, where: str, after: str | None = None) -> Listed:
    found = fs.find(where, detail=True, withdirs=False) if fs.exists(where) else {}
    for path in sorted(found):
        info = found[path]
        if info.get("type") != "directory" and (after is None or path > after):
            yield path, int(info.get("size") or 0), identity_of(info)
