"""Base64 text into bytes, a whole column at once.

A JSON Schema string with ``contentEncoding: base64`` is a binary column, and
its text is the encoding of the bytes that land.  Arrow's cast of text to binary
keeps the text's own bytes (``"aGk="`` landed as ``b"aGk="``, not ``b"hi"``, with no
note), and pyarrow has no base64 kernel, so a column of text is decoded here with
numpy: one table lookup and a few shifts over the column's data buffer, no Python
per value.  Only text Python's strict decoder (``base64.b64decode(text,
validate=True)``, the value-by-value path's) takes whole is decoded in bulk: a
column with any other value goes value by value, where each misfit is null plus
a note on its row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Canonical base64: whole quanta of the standard alphabet, ``=`` padding only at the
#: end.  A subset of what the strict decoder takes (it takes exactly these), so
#: every value that matches decodes alike.
_CANONICAL = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: Each byte's six bits (``=`` and anything else: 0; only canonical text gets here).
_SEXTETS = np.zeros(256, np.uint8)
_SEXTETS[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_PAD = ord("=")


def all_canonical(column: pa.Array) -> bool:
    """Whether every value of a string column is canonical base64 (nulls are)."""
    return bool(pc.all(pc.match_substring_regex(column, _CANONICAL), min_count=0).as_py())


def decode_canonical(column: pa.Array) -> pa.Array:
    """A string column of canonical base64 (:func:`all_canonical`) as its bytes."""
    filled = pc.fill_null(column.cast(pa.string()), "")
    _, offset_buffer, data_buffer = filled.buffers()
    offsets = np.frombuffer(offset_buffer, np.int32)[filled.offset:
                                                     filled.offset + len(filled) + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    text = (np.frombuffer(data_buffer, np.uint8)[start:end] if end > start
            else np.zeros(0, np.uint8))
    quads = _SEXTETS[text].reshape(-1, 4)
    decoded = np.empty((len(quads), 3), np.uint8)
    decoded[:, 0] = (quads[:, 0] << 2) | (quads[:, 1] >> 4)
    decoded[:, 1] = ((quads[:, 1] & 0x0F) << 4) | (quads[:, 2] >> 2)
    decoded[:, 2] = ((quads[:, 2] & 0x03) << 6) | quads[:, 3]
    ends = (offsets[1:] - start).astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    last = np.where(lengths > 0, ends - 1, 0)
    pads = np.where(lengths > 0, (text[last] == _PAD).astype(np.int64)
                    + (text[np.maximum(last - 1, 0)] == _PAD), 0) if len(text) else lengths
    flat = decoded.reshape(-1)
    if pads.any():  # a padded quantum decodes to one or two bytes fewer than three
        keep = np.ones(len(flat), bool)
        out_ends = ends // 4 * 3
        keep[out_ends[pads >= 1] - 1] = False
        keep[out_ends[pads == 2] - 2] = False
        flat = flat[keep]
    out_offsets = np.zeros(len(filled) + 1, np.int32)
    np.cumsum(lengths // 4 * 3 - pads, out=out_offsets[1:])
    result = pa.Array.from_buffers(pa.binary(), len(filled),
                                   [None, pa.py_buffer(out_offsets), pa.py_buffer(flat)])
    if column.null_count:
        result = pc.if_else(column.is_valid(), result, pa.scalar(None, pa.binary()))
    return result


__all__ = ["all_canonical", "decode_canonical"]
