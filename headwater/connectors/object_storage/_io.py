"""Opening objects: storage errors kept apart from bad bytes, decompression, line blocks.

Two kinds of failure must not be confused.  A network or permission error is
the store's fault: the partition fails and the sync is retried, so nothing is
recorded as bad data.  Bytes that do not decode (a truncated gzip, an invalid
Parquet footer) are the object's fault: they become a rejected record and the
sync goes on.  :class:`StorageFile` draws that line by turning every exception
raised *by the store* into :class:`StorageReadError`.
"""

from __future__ import annotations

import bz2
import gzip
import io
from collections.abc import Iterator
from typing import Any, BinaryIO

import fsspec
import zstandard

from headwater.errors import ConnectorError

__all__ = ["COMPRESSIONS", "StorageFile", "StorageReadError", "compression_of", "decompress",
           "line_blocks", "newlines_before"]

#: Suffix -> compression, for ``compression: infer``.
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bzip2", ".zst": "zstd",
                ".zstd": "zstd"}
#: Bytes read from the store at a time.
BLOCK_BYTES = 8 * 1024 * 1024


class StorageReadError(ConnectorError):
    """The store failed while an object was read (not the object's bytes)."""


def compression_of(key: str, setting: str) -> str | None:
    if setting == "none":
        return None
    if setting != "infer":
        return setting
    lower = key.lower()
    for suffix, name in COMPRESSIONS.items():
        if lower.endswith(suffix):
            return name
    return None


class StorageFile(io.RawIOBase):
    """A read-only view of a store file whose own errors become :class:`StorageReadError`."""

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str) -> None:
        self._path = path
        self._where = fs.unstrip_protocol(path)
        self._file: Any = self._call(fs.open, path, "rb", block_size=BLOCK_BYTES)

    def _call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise StorageReadError(f"reading {self._where} failed: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._call(self._file.read, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        return bytes(self._call(self._file.read, -1 if size is None else size))

    def readline(self, size: int | None = -1) -> bytes:
        return bytes(self._call(self._file.readline))

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._call(self._file.seek, offset, whence))

    def tell(self) -> int:
        return int(self._file.tell())

    def close(self) -> None:
        try:
            self._file.close()
        finally:
            super().close()


def decompress(raw: Any, compression: str | None) -> BinaryIO:
    """A stream of the object's decompressed bytes (``raw`` itself when uncompressed)."""
    if compression is None:
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "bzip2":
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if compression == "zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(reader)
    raise ValueError(f"unknown compression {compression!r}")


def newlines_before(stream: BinaryIO, position: int) -> int:
    """Line ends in the first ``position`` bytes (reads them: the price of object-wide
    record numbers in a byte-range split)."""
    stream.seek(0)
    count, left = 0, position
    while left > 0:
        chunk = stream.read(min(BLOCK_BYTES, left))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def line_blocks(stream: BinaryIO, start: int = 0, end: int | None = None,
                block: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Blocks of whole lines, each ending in ``\\n``, of the lines that *start* in
    ``[start, end)`` (``end=None``: to the end of the stream).

    A line belongs to the range holding its first byte, so byte ranges that tile
    an object give every line exactly once, wherever the cuts fall.  When
    ``start > 0`` the caller has positioned nothing: this seeks to ``start - 1``
    and skips through the first line end, which belongs to the range before.
    """
    if start > 0:
        stream.seek(start - 1)
        stream.readline()
        position = stream.tell()
    else:
        position = 0
    carry = b""
    # read1 returns what a decompressor has so far: a truncated object still gives
    # every whole line before the damage.
    read = getattr(stream, "read1", stream.read) if end is None else stream.read
    while end is None or position < end:
        want = block if end is None else min(block, end - position)
        chunk = read(want)
        if not chunk:
            break
        position += len(chunk)
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        yield data[: cut + 1]
        carry = data[cut + 1 :]
    if end is not None and position >= end and carry:
        carry += stream.readline()  # the last line starts before ``end``: finish it
    if carry:
        yield carry if carry.endswith(b"\n") else carry + b"\n"
