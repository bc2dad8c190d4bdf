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
import uuid
from typing import Any

import msgspec

__all__ = ["JsonFloat", "decode", "dumps", "exact_decimal", "loads"]


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


#: Made once: ``json.loads(..., parse_float=...)`` builds a decoder per call (twice
#: the time of a short line).
_LOADS = json.JSONDecoder(parse_float=JsonFloat)


def loads(text: str | bytes) -> Any:
    """``json.loads`` (same errors, ``NaN`` and ``Infinity`` taken), numbers with a
    fraction or an exponent as :class:`JsonFloat`."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")  # as json.loads
    return _LOADS.decode(text)


_DECODER = msgspec.json.Decoder(float_hook=JsonFloat)


def decode(content: bytes) -> Any:
    """:func:`loads` for a whole document, with msgspec where it takes the text
    (about as fast as orjson but for the floats): ``json`` takes what msgspec
    refuses and ``json`` accepts (``NaN``)."""
    try:
        return _DECODER.decode(content)
    except msgspec.DecodeError:
        return loads(content)


class _Literal:
    """A :class:`JsonFloat` on its way through :func:`dumps` (``json`` writes a float's
    repr, subclass or not, and asks ``default`` only for what it cannot write)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _marked(value: Any) -> tuple[Any, bool]:
    """``value`` with each JsonFloat as a :class:`_Literal`, and whether there was one."""
    if isinstance(value, JsonFloat):
        return _Literal(value.text), True
    if isinstance(value, dict):
        items = [(key, *_marked(item)) for key, item in value.items()]
        if any(found for _, _, found in items):
            return {key: item for key, item, _ in items}, True
    elif isinstance(value, list | tuple):
        marked = [_marked(item) for item in value]
        if any(found for _, found in marked):
            return [item for item, _ in marked], True
    return value, False


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` writing each JsonFloat as its literal
    (``1.50``, ``12345678901234567890.123456789012345678``), not the float's repr."""
    marked, found = _marked(value)
    if not found:
        return json.dumps(value, **options)
    literals: list[str] = []
    token = uuid.uuid4().hex
    fallback = options.pop("default", None)

    def default(item: Any) -> Any:
        if isinstance(item, _Literal):
            literals.append(item.text)
            return f"{token}:{len(literals) - 1}"
        if fallback is None:
            raise TypeError(f"{type(item).__name__} is not JSON serializable")
        return fallback(item)

    text = json.dumps(marked, default=default, **options)
    for number, literal in enumerate(literals):
        text = text.replace(f'"{token}:{number}"', literal, 1)
    return text
