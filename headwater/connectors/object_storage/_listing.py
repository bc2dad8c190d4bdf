"""Listing objects in key order, with an identity that says when one changed.

Keys are the object paths relative to the source's ``url`` ("2024/01/a.csv"),
compared as Python strings (code point order), which is the order S3 lists in
(UTF-8 bytes sort as code points).  Listing streams: objects come a page at a
time (:class:`Page`), in key order, filtered by the globs as they come, so a
prefix of a million objects is never held whole by the listing (the planner
keeps only what it plans).  How each store is walked:

* a local folder: ``os.scandir``, one folder at a time, entries sorted so that
  the walk yields keys in code point order (a folder ``a`` sorts as ``a/``),
  a page for each run of files between subfolders;
* S3: s3fs's own paged ``ListObjectsV2`` (each page retried like any s3fs
  request), one page of up to 1,000 keys at a time, which S3 returns in order;
* GCS, Azure and any other fsspec store: ``fs.find`` (their fsspec
  implementations have no paged listing to reuse), one dict of the prefix,
  walked in key order, ``FOUND_PAGE`` objects a page.

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
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple

import fsspec
from fsspec.asyn import sync
from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import glob_translate

from headwater.errors import ConfigError, ConnectorError

__all__ = ["ObjectInfo", "Page", "identity_of", "iter_objects", "iter_pages", "open_filesystem",
           "root_path", "wanted_keys"]


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


class Page(NamedTuple):
    """Consecutive listed objects, in key order, as columns.

    The planner works a page at a time (a local folder's files, an S3 page of up
    to 1,000 keys): testing the globs, asking the cursor and cutting groups over
    whole lists costs a few C-level passes instead of a tuple and a few Python
    calls per object, which is most of what planning a million objects costs
    above the listing itself.
    """

    keys: list[str]
    paths: list[str]
    sizes: list[int]
    identities: list[str]

    def objects(self) -> Iterator[ObjectInfo]:
        return map(ObjectInfo, self.keys, self.paths, self.sizes, self.identities)

    @classmethod
    def of(cls, objects: Iterable[ObjectInfo]) -> Page:
        listed = list(objects)
        return cls([o.key for o in listed], [o.path for o in listed],
                   [o.size for o in listed], [o.identity for o in listed])


def iter_objects(fs: fsspec.AbstractFileSystem, root: str, prefix: str,
                 globs: Iterable[str], after: str | None = None) -> Iterator[ObjectInfo]:
    """Every object under ``root/prefix`` whose key matches a glob, in key order, one by one
    (:func:`iter_pages`, a page at a time)."""
    for page in iter_pages(fs, root, prefix, globs, after):
        yield from page.objects()


def iter_pages(fs: fsspec.AbstractFileSystem, root: str, prefix: str,
               globs: Iterable[str], after: str | None = None) -> Iterator[Page]:
    """Every object under ``root/prefix`` whose key matches a glob, in key order, a page
    at a time (pages are never empty).

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
    # local and S3 paths all start with where/ (so with root); fs.find's may not
    under_root = True
    if isinstance(fs, LocalFileSystem):
        listed = _local_files(where, after_path)
    elif _is_paged_s3(fs):
        listed = _s3_files(fs, where, after_path)
    else:
        listed, under_root = _found_files(fs, where, after_path), False
    try:
        for paths, sizes, identities in listed:
            keys = [path[start:] for path in paths] if under_root else \
                [path[start:] if path.startswith(root) else path for path in paths]
            if not keys:
                continue  # an S3 page of folder markers only
            if all(map(wanted, keys)):
                yield Page(keys, paths, sizes, identities)
                continue
            chosen = [wanted(key) is not None for key in keys]
            if any(chosen):
                yield Page(list(compress(keys, chosen)), list(compress(paths, chosen)),
                           list(compress(sizes, chosen)), list(compress(identities, chosen)))
    except FileNotFoundError:
        return  # the prefix (or bucket) does not exist: no objects, as an empty folder
    except Exception as exc:  # the store's own errors: auth, network
        raise ConnectorError(f"cannot list {fs.unstrip_protocol(where)}: "
                             f"{type(exc).__name__}: {exc}") from exc


#: Listed objects, a page at a time: their (paths, sizes, identities), in key order.
Listed = Iterator[tuple[list[str], list[int], list[str]]]


def _local_files(where: str, after: str | None = None) -> Listed:
    """A local folder walked in key order, as fsspec's local ``find`` sees it (a link to a
    folder is not followed, a link to a file is an object of the file's size); a page
    is a folder's run of files between two of its subfolders."""
    if not os.path.isdir(where):
        if os.path.lexists(where) and (after is None or where > after):
            stat = os.stat(where)
            yield [where], [stat.st_size], [
                identity_of({"size": stat.st_size, "mtime": stat.st_mtime})]
        return
    with os.scandir(where) as found:
        entries = list(found)
    folders = [entry for entry in entries if entry.is_dir(follow_symlinks=False)]
    if not folders:  # a folder of files only (most of a large prefix): one page
        entries.sort(key=_name)
        yield from _local_page(entries, after)
        return
    # a folder "a" holds keys "a/...", which sort as "a/": after "a.csv", before "a0"
    ordered = sorted([(e.name, e) for e in entries if not e.is_dir(follow_symlinks=False)]
                     + [(e.name + "/", e) for e in folders])
    run: list[os.DirEntry[str]] = []
    for name, entry in ordered:
        if not name.endswith("/"):
            run.append(entry)
            continue
        folder = entry.path + "/"
        # every key in the folder starts with folder/: all at or below ``after`` when
        # ``after`` sorts above folder/ without starting with it
        if after is None or not (after > folder and not after.startswith(folder)):
            yield from _local_page(run, after)
            run = []
            yield from _local_files(entry.path, after)
    yield from _local_page(run, after)


_name = attrgetter("name")


def _local_page(files: list[os.DirEntry[str]], after: str | None) -> Listed:
    """The files (in key order) above ``after`` as a page: one ``lstat`` each, as
    ``os.DirEntry`` caches it, and columns built by comprehensions, not appends."""
    if after is not None:
        files = [entry for entry in files if entry.path > after]
    if not files:
        return
    try:
        stats = [entry.stat(follow_symlinks=False) for entry in files]
    except FileNotFoundError:  # one deleted since the folder was read: leave it out
        files, stats = _still_there(files)
    sizes = [stat.st_size for stat in stats]
    if any([entry.is_symlink() for entry in files]):
        files, stats, sizes = _followed(files, stats)
    # identity_of's "size:mtime" (the mtime of the link itself, for a link)
    yield ([entry.path for entry in files], sizes,
           [f"{size}:{stat.st_mtime or None}" for size, stat in zip(sizes, stats, strict=True)])


def _still_there(files: list[os.DirEntry[str]]) -> tuple[list[os.DirEntry[str]], list[Any]]:
    """The files not deleted since their folder was read, and their ``lstat``."""
    kept, stats = [], []
    for entry in files:
        try:
            stats.append(entry.stat(follow_symlinks=False))
        except FileNotFoundError:
            continue
        kept.append(entry)
    return kept, stats


def _followed(files: list[os.DirEntry[str]], stats: list[Any]
              ) -> tuple[list[os.DirEntry[str]], list[Any], list[int]]:
    """The files with their sizes, a link's being its target's; a link to nothing (or
    a file deleted since) is not an object."""
    kept, kept_stats, sizes = [], [], []
    for entry, stat in zip(files, stats, strict=True):
        try:
            size = entry.stat().st_size if entry.is_symlink() else stat.st_size
        except FileNotFoundError:
            continue
        kept.append(entry)
        kept_stats.append(stat)
        sizes.append(size)
    return kept, kept_stats, sizes


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
#: Objects of a page of ``fs.find``'s listing (stores without paged listing).
FOUND_PAGE = 1000


def _s3_files(fs: Any, where: str, after: str | None = None) -> Listed:
    """The prefix in key order: its first level (``Delimiter="/"``) lists its objects and
    folders, and up to ``FOLDERS_AT_ONCE`` folders are listed side by side.

    Every listing goes a page of ``ListObjectsV2`` at a time through s3fs's
    retried calls, and S3 returns keys in order, so each folder's keys, and the
    first level's objects and folders sorted together (a folder ``a/`` as the
    string ``a/``), are the prefix's keys in order.  Keys at or below ``after``
    are not listed: a folder all of whose keys sort below it is skipped, the
    folder holding it starts after it (``StartAfter``).  A folder's pages are
    pages of the listing; the first level's objects come in runs between folders.
    """
    bucket, _, path = where.partition("/")
    base = f"{path}/" if path else ""
    after_key = after.partition("/")[2] if after else None
    waiting: collections.deque[tuple[str, Any]] = collections.deque()
    folders = 0
    try:
        for entries in _s3_first_level(fs, bucket, base):
            for key, item in entries:
                if item is None:  # a folder
                    if after_key is not None and after_key > key \
                            and not after_key.startswith(key):
                        continue
                    start_after = after_key if after_key and after_key.startswith(key) \
                        else None
                    waiting.append((key, _S3Folder(fs, bucket, key, start_after)))
                    folders += 1
                elif after_key is None or key > after_key:
                    waiting.append((key, item))
                while folders > FOLDERS_AT_ONCE or len(waiting) > WAITING_OBJECTS:
                    folders -= isinstance(waiting[0][1], _S3Folder)
                    yield from _s3_pop(bucket, waiting)
            while waiting and not isinstance(waiting[0][1], _S3Folder):
                yield from _s3_pop(bucket, waiting)  # the page's objects ahead of any folder
        while waiting:
            yield from _s3_pop(bucket, waiting)
    finally:
        for _, entry in waiting:  # a reader that stops early leaves no listing running
            if isinstance(entry, _S3Folder):
                entry.cancel()


def _s3_pop(bucket: str, waiting: collections.deque[tuple[str, Any]]) -> Listed:
    """The first waiting folder's pages, or the run of objects ahead of the first folder."""
    if isinstance(waiting[0][1], _S3Folder):
        folder = waiting.popleft()[1]
        for contents in folder.pages():
            yield _s3_page(bucket, contents)
        return
    run = []
    while waiting and not isinstance(waiting[0][1], _S3Folder):
        run.append(waiting.popleft()[1])
    yield _s3_page(bucket, run)


def _s3_page(bucket: str, contents: Iterable[dict[str, Any]]
             ) -> tuple[list[str], list[int], list[str]]:
    items = [item for item in contents if not item["Key"].endswith("/")]  # folder markers
    return ([f"{bucket}/{item['Key']}" for item in items],
            [int(item.get("Size") or 0) for item in items],
            [identity_of(item) for item in items])


def _s3_first_level(fs: Any, bucket: str, base: str) -> Iterator[list[tuple[str, Any]]]:
    """(key, object) and (folder key ending in "/", None) of the first level, in key order,
    a page at a time."""
    pages = fs._list_pages("list_objects_v2", Bucket=bucket, Prefix=base, Delimiter="/",
                           **fs.req_kw)
    while True:
        try:
            page = sync(fs.loop, pages.__anext__)
        except StopAsyncIteration:
            return
        entries = [(c["Prefix"], None) for c in page.get("CommonPrefixes", ())]
        entries += [(c["Key"], c) for c in page.get("Contents", ())]
        yield sorted(entries, key=lambda entry: entry[0])


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

    def pages(self) -> Iterator[list[dict[str, Any]]]:
        """The folder's pages (``Contents``) in order, as they are listed."""
        try:
            while True:
                page = sync(self._fs.loop, self._next)
                if page is None:
                    return
                if isinstance(page, Exception):
                    raise page
                yield page
        finally:  # a reader that stops inside this folder stops its listing too
            self.cancel()

    def cancel(self) -> None:
        self._task.cancel()


def _found_files(fs: fsspec.AbstractFileSystem, where: str, after: str | None = None) -> Listed:
    found = fs.find(where, detail=True, withdirs=False) if fs.exists(where) else {}
    paths = [path for path in sorted(found) if found[path].get("type") != "directory"
             and (after is None or path > after)]
    for at in range(0, len(paths), FOUND_PAGE):
        page = paths[at:at + FOUND_PAGE]
        yield (page, [int(found[path].get("size") or 0) for path in page],
               [identity_of(found[path]) for path in page])
