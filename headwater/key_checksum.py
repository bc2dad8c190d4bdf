"""The key checksum ``headwater verify`` compares: one definition, three engines.

A window of a stream is the same at the source and in the table when both hold
as many rows and the same primary keys.  Counting is easy everywhere; the keys
are compared through an order-independent checksum that PostgreSQL (in SQL),
Spark (over the table) and Python (sources that hash what they read) compute
to the same integer, so no key ever travels to the driver:

1. **Canonical text of a key**: for each key column, in key order, the value's
   text ``t`` written as ``<number of characters of t>:<t>``, all concatenated
   (``(7, "ab")`` -> ``1:72:ab``).  The length prefix keeps composite keys
   apart (``("a:b", "c")`` and ``("a", "b:c")`` differ) whatever the text holds.
   The text of a value: integers in decimal, strings as they are, dates as
   ``YYYY-MM-DD``, booleans ``true``/``false``, UUIDs in their lower-case
   hyphenated form.  Other types (timestamps, decimals, floats, bytes) have
   texts the engines do not agree on: a key with such a column has no checksum,
   and ``verify`` compares counts only.
2. **Hash of a key**: the first 8 bytes of the MD5 digest of the canonical
   text's UTF-8 bytes, as an unsigned big-endian 64-bit integer.  MD5 because
   it is the one digest PostgreSQL (``md5(text)``, every version) and Spark
   (``md5``) both have built in; it is not used for security here, only to
   spread keys.
3. **Checksum of a window**: the sum of its keys' hashes modulo 2^64.  A key
   with a NULL column adds nothing (it is still counted).

Why a sum and not XOR: a row landed twice adds its hash twice, where XOR would
cancel it.  Why in SQL and not by fetching the keys and hashing them in Python:
a million ``bigint`` keys took 1.2-1.6 s in PostgreSQL against 5.7-5.9 s fetched and
hashed in Python (``bench/RESULTS.md``, "verify"), and nothing crosses the network
or sits in the driver's memory.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MODULUS", "canonical_key", "key_checksum", "key_hash", "value_text"]

#: Checksums are sums modulo 2^64.
MODULUS = 2**64


def value_text(value: Any) -> str | None:
    """The canonical text of one key value, None for NULL.

    Raises :class:`TypeError` for a type that has no canonical text (see the
    module docs): the caller then gives no checksum.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"a key of type {type(value).__name__} has no canonical text")


def canonical_key(values: Sequence[Any]) -> str | None:
    """The canonical text of a key (its column values in key order); None if one is NULL."""
    texts = [value_text(v) for v in values]
    if any(t is None for t in texts):
        return None
    return "".join(f"{len(t)}:{t}" for t in texts if t is not None)


def key_hash(text: str) -> int:
    """The 64-bit hash of a key's canonical text (the first 8 bytes of its MD5)."""
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "big")


def key_checksum(keys: Iterable[Sequence[Any]]) -> int:
    """The checksum of ``keys`` (each a sequence of column values, in key order)."""
    total = 0
    for key in keys:
        text = canonical_key(key)
        if text is not None:
            total += key_hash(text)
    return total % MODULUS
