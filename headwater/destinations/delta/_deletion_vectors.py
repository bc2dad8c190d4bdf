"""Deletion vectors as Delta's protocol stores them, for Headwater's own history commit.

Why by hand: a history checkpoint closes versions spread over every file of the
table; a deletion vector marks the closed rows gone without rewriting their files
(what Spark's MERGE does with ``delta.enableDeletionVectors``).  delta-spark writes
them only inside its own MERGE/UPDATE/DELETE, and delta-rs 1.6.6 reads them but its
commit API (``create_write_transaction``) adds files only.  The format is short and
public (Delta's PROTOCOL.md, "Deletion Vector Format"); the bitmap itself is
``pyroaring``'s (CRoaring's portable serialisation, which Delta's
``RoaringBitmapArray`` wraps), and the tests hold these bytes equal to the ones
delta-spark writes for the same rows, and Spark's reads of tables so written equal
to the rows its own MERGE leaves.

A deletion vector file (``deletion_vector_<uuid>.bin`` in the table's folder) is
one version byte (1), then per vector: its size (4 bytes, big-endian), the vector
(the magic number 1681511377 and a ``RoaringBitmapArray``: a count of 32-bit
bitmaps as 8 bytes and, per bitmap, its high 32 bits as 4 bytes, little-endian,
then the bitmap), and the vector's CRC-32 (4 bytes, big-endian).  An ``add``
action names its vector by a descriptor: storage ``u`` (a file of this table,
named by a Z85-encoded UUID after an optional prefix), its offset and size.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.errors import DestinationError

if TYPE_CHECKING:
    from pyroaring import BitMap

    from headwater.destinations._table_files._store import TableFolder

#: Delta's ``RoaringBitmapArray`` magic number, before the portable serialisation.
MAGIC = 1681511377
#: The first byte of every deletion vector file.
FILE_FORMAT_VERSION = 1
#: Row positions a 32-bit bitmap holds; one Parquet file never holds more rows here.
_POSITIONS = 1 << 32

#: Z85's alphabet (ZeroMQ RFC 32), which Delta uses for a vector file's UUID.  Python's
#: ``base64.z85encode`` arrives in 3.13; Headwater runs on 3.11.
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}


def z85_encode(data: bytes) -> str:
    """``data`` (a multiple of 4 bytes long) in Z85."""
    out: list[str] = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start:start + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(_Z85[digit])
        out.extend(reversed(chunk))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    """The bytes ``text`` (a multiple of 5 characters long) encodes in Z85."""
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start:start + 5]:
            value = value * 85 + _Z85_VALUE[char]
        out += value.to_bytes(4, "big")
    return bytes(out)


def encode(positions: BitMap) -> bytes:
    """The serialised vector of the row ``positions`` (magic number and bitmap array)."""
    if positions and positions.max() >= _POSITIONS:
        raise DestinationError(f"a deletion vector of row {positions.max()}: past the "
                               "4,294,967,295 rows a file may hold here")
    return struct.pack("<iqi", MAGIC, 1, 0) + positions.serialize()


def decode(data: bytes) -> BitMap:
    """The row positions of a serialised vector (one bitmap, as :func:`encode` writes)."""
    from pyroaring import BitMap

    magic, count = struct.unpack_from("<iq", data)
    if magic != MAGIC:
        raise DestinationError(f"a deletion vector with magic number {magic} (Delta's is "
                               f"{MAGIC}): not a vector this version of Headwater reads")
    positions = BitMap()
    offset = 12
    for _ in range(count):
        (high,) = struct.unpack_from("<i", data, offset)
        bitmap = BitMap.deserialize(data[offset + 4:])
        if high != 0 and bitmap:
            raise DestinationError("a deletion vector of rows past 2^32 in one file")
        positions |= bitmap
        offset += 4 + len(bitmap.serialize())
    return positions


@dataclass(frozen=True)
class Descriptor:
    """An ``add`` action's ``deletionVector``: where its vector is and how many rows it holds."""

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @classmethod
    def of(cls, action: Mapping[str, Any]) -> Descriptor:
        return cls(storage_type=action["storageType"],
                   path_or_inline_dv=action["pathOrInlineDv"],
                   offset=action.get("offset"), size_in_bytes=int(action["sizeInBytes"]),
                   cardinality=int(action["cardinality"]))

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"storageType": self.storage_type,
                                 "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            found["offset"] = self.offset
        return {**found, "sizeInBytes": self.size_in_bytes, "cardinality": self.cardinality}

    @property
    def unique_id(self) -> str:
        """What, with a file's path, identifies a logical file in the log (the protocol's
        ``uniqueId``: storage type, path or inline data, and ``@offset`` when given)."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    def relative_file(self) -> str:
        """The vector file's name in the table's folder (storage ``u``)."""
        text = self.path_or_inline_dv
        prefix, encoded = text[:-20], text[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name


def read(folder: TableFolder, descriptor: Descriptor) -> BitMap:
    """The row positions ``descriptor``'s vector holds, checked against its CRC-32."""
    if descriptor.storage_type == "i":
        return decode(z85_decode(descriptor.path_or_inline_dv))
    if descriptor.storage_type != "u":
        raise DestinationError(f"a deletion vector stored as {descriptor.storage_type!r} "
                               "(an absolute path): Headwater closes versions in tables "
                               "whose vectors are their own files only")
    filesystem, path = folder.filesystem()
    start = descriptor.offset or 1
    with filesystem.open_input_file(f"{path}/{descriptor.relative_file()}") as handle:
        handle.seek(start)
        head = handle.read(4 + descriptor.size_in_bytes + 4)
    (size,) = struct.unpack_from(">i", head)
    data = head[4:4 + size]
    (checksum,) = struct.unpack_from(">I", head, 4 + size)
    if size != descriptor.size_in_bytes or zlib.crc32(data) != checksum:
        raise DestinationError(f"the deletion vector at {descriptor.relative_file()}@{start} "
                               "does not match its descriptor or checksum")
    positions = decode(data)
    if len(positions) != descriptor.cardinality:
        raise DestinationError(f"the deletion vector at {descriptor.relative_file()}@{start} "
                               f"holds {len(positions)} rows, its descriptor says "
                               f"{descriptor.cardinality}")
    return positions


def write(folder: TableFolder, vectors: Iterable[BitMap]) -> list[Descriptor]:
    """Write ``vectors`` into one new file of the table's folder; their descriptors."""
    file_id = uuid.uuid4()
    body = bytearray([FILE_FORMAT_VERSION])
    descriptors = []
    for positions in vectors:
        data = encode(positions)
        descriptors.append(Descriptor(storage_type="u",
                                      path_or_inline_dv=z85_encode(file_id.bytes),
                                      offset=len(body), size_in_bytes=len(data),
                                      cardinality=len(positions)))
        body += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    filesystem, path = folder.filesystem()
    with filesystem.open_output_stream(f"{path}/deletion_vector_{file_id}.bin") as out:
        out.write(bytes(body))
    return descriptors


__all__ = ["Descriptor", "decode", "encode", "read", "write", "z85_decode", "z85_encode"]
