"""JSON numbers that keep the text they were written as.

Python's ``json`` (and orjson) turn every JSON number with a fraction or an
exponent into a float, so ``12345678901234567890.123456789012345678`` is
``1.2345678901234567e+19`` before anything knows the column is a
``decimal(38, 18)``: a decimal landed rounded, without a note, and a note of a
misfit showed the float's repr (``-1e+20``), not what the source wrote.

:class:`JsonFloat` is what the per-record paths parse such a number into: a
float everywhere a float is wanted (arithmetic, ``json.dumps``, Arrow's
inference, the bulk paths' comparisons), which also carries the literal's
text, so the engine types it as a decimal (or an integer) from that text and
notes it as written (:mod:`headwater.table_schema`).  Integers need nothing:
both parsers give Python ints, exact at any size.
"""

from __future__ import annotations

import decimal
import json
from typing import Any

import msgspec

__all__ = ["JsonFloat", "decode", "exact_decimal", "loads"]


class JsonFloat(float):
    """A float parsed from JSON text that remembers that text (``1.50``, ``1E400``)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> JsonFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __reduce__(self) -> tuple[type[JsonFloat], tuple[str]]:
        # Pages and records are pickled (shared pages, Spark): the text goes along.
        return (JsonFloat, (self.text,))


def exact_decimal(value: JsonFloat) -> decimal.Decimal:
    """The number the literal wrote, exactly."""
    return decimal.Decimal(value.text)


def loads(text: str | bytes) -> Any:
    """``json.loads`` (same errors, ``NaN`` and ``Infinity`` taken), numbers with a
    fraction or an exponent as :class:`JsonFloat`."""
    return json.loads(text, parse_float=JsonFloat)


_DECODER = msgspec.json.Decoder(float_hook=JsonFloat)


def decode(content: bytes) -> Any:
    """:func:`loads` for a whole document, with msgspec where it takes the text
    (about as fast as orjson but for the floats): ``json`` takes what msgspec
    refuses and ``json`` accepts (``NaN``)."""
    try:
        return _DECODER.decode(content)
    except msgspec.DecodeError:
        return loads(content)
