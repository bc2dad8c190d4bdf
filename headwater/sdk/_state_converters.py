"""State converters: how a cursor value is stored in state and compared in memory.

A cursor compares values in one *internal* form (a timezone-aware UTC
``datetime`` for dates, an ``int`` for integers) and writes them to state in a
*stored* form (an ISO 8601 string, epoch seconds, an integer), because state is
JSON and must read the same way in every later run.  A converter translates
between the two, reads cursor values found in records, and knows the natural
unit of a step so the cursor can cut windows.

Converters hold no state of their own: the same instance is shared by every
partition and is pickled to Spark executors with the stream.

Example::

    conv = IsoDateTimeStateConverter()
    start = conv.parse("2024-01-01T00:00:00+02:00")     # 2023-12-31 22:00 UTC
    conv.serialize(start + conv.step(3600))               # '2023-12-31T23:00:00Z'
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from datetime import UTC, date, datetime, timedelta
from typing import Any, ClassVar

from headwater.errors import StateError

__all__ = [
    "EpochSecondsStateConverter",
    "IntegerStateConverter",
    "IsoDateTimeStateConverter",
    "StateConverter",
]


class StateConverter(ABC):
    """Translates a cursor value between its stored form and its internal form.

    Guarantees every implementation keeps:

    * ``parse(serialize(v)) == v`` for every internal value ``v`` the stored
      form can represent exactly (``EpochSecondsStateConverter`` holds whole
      seconds only and floors anything finer, see there);
    * internal values of one converter are totally ordered with ``<``;
    * instances are stateless and picklable.
    """

    #: The ``state_type`` written into concurrent state (Airbyte's names).
    state_type: ClassVar[str]

    __slots__ = ()

    @abstractmethod
    def parse(self, stored: Any) -> Any:
        """Stored form (as read back from JSON state) -> internal value.

        Raises :class:`~headwater.errors.StateError` when ``stored`` is not a
        value this converter writes.
        """

    @abstractmethod
    def serialize(self, value: Any) -> Any:
        """Internal value -> stored form (a JSON value)."""

    @abstractmethod
    def parse_record_value(self, value: Any) -> Any:
        """A cursor value found in a record -> internal value.

        Records are looser than state (a date column, an ISO string with any
        offset, an epoch number), so this accepts more than :meth:`parse`.
        Raises :class:`~headwater.errors.StateError` when the value cannot be a
        cursor value of this kind.
        """

    @abstractmethod
    def step(self, amount: int | float) -> Any:
        """A positive step of ``amount`` natural units, addable to internal values.

        The unit is seconds for date converters (a ``timedelta``) and one for
        integers.  Used to cut gaps into windows; ``amount`` must be > 0.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def _is_number(value: Any) -> bool:
    # bool is an int subclass, but True is never a meaningful cursor value.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _to_utc(value: datetime) -> datetime:
    """Aware UTC datetime; a naive datetime is taken to already be UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _from_epoch(seconds: int | float) -> datetime:
    try:
        if isinstance(seconds, int):
            # Integer arithmetic keeps large epochs exact (no float rounding).
            return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
        if not math.isfinite(seconds):
            raise ValueError("not a finite number")
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise StateError(f"epoch seconds {seconds!r} are not a representable date-time") from exc


def _from_iso(text: str) -> datetime:
    try:
        return _to_utc(datetime.fromisoformat(text.strip()))
    except ValueError as exc:
        raise StateError(f"{text!r} is not an ISO 8601 date-time") from exc


class _DateTimeStateConverter(StateConverter, ABC):
    """Shared behaviour of converters whose internal value is an aware UTC datetime."""

    state_type: ClassVar[str] = "date-range"

    __slots__ = ()

    def parse_record_value(self, value: Any) -> datetime:
        if isinstance(value, datetime):
            return _to_utc(value)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, str):
            return _from_iso(value)
        if _is_number(value):
            return _from_epoch(value)
        raise StateError(
            f"cursor value {value!r} ({type(value).__name__}) is not a date-time: expected a "
            "datetime, a date, an ISO 8601 string or epoch seconds"
        )

    def step(self, amount: int | float) -> timedelta:
        if not _is_number(amount) or not math.isfinite(amount) or not amount > 0:
            raise ValueError(f"a window step must be a positive number of seconds, got {amount!r}")
        return timedelta(seconds=amount)


class IsoDateTimeStateConverter(_DateTimeStateConverter):
    """Stores date-times as ISO 8601 UTC strings: ``2024-01-01T00:00:00Z``.

    Microseconds are written only when non-zero (``2024-01-01T00:00:00.250000Z``).
    On parse, any UTC offset is accepted and normalised, and a string without
    one is taken to be UTC, so state written by other tools reads back.
    """

    __slots__ = ()

    def parse(self, stored: Any) -> datetime:
        if isinstance(stored, datetime):
            return _to_utc(stored)
        if not isinstance(stored, str):
            raise StateError(
                f"expected an ISO 8601 date-time string in state, got {stored!r} "
                f"({type(stored).__name__})"
            )
        return _from_iso(stored)

    def serialize(self, value: Any) -> str:
        utc = _to_utc(self._require_datetime(value))
        spec = "%Y-%m-%dT%H:%M:%S.%fZ" if utc.microsecond else "%Y-%m-%dT%H:%M:%SZ"
        return utc.strftime(spec)

    @staticmethod
    def _require_datetime(value: Any) -> datetime:
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime to serialize, got {type(value).__name__}")
        return value


class EpochSecondsStateConverter(_DateTimeStateConverter):
    """Stores date-times as integer epoch seconds (Airbyte's epoch-value converter).

    The stored form has one-second precision: :meth:`serialize` floors finer
    values.  That is the safe direction for a window's end (a later run reads
    the rest again) and why :meth:`step` accepts whole seconds only, so window
    boundaries the cursor cuts are always exact.
    """

    __slots__ = ()

    def parse(self, stored: Any) -> datetime:
        if isinstance(stored, float) and stored.is_integer():
            stored = int(stored)
        if not isinstance(stored, int) or isinstance(stored, bool):
            raise StateError(
                f"expected whole epoch seconds (an integer) in state, got {stored!r} "
                f"({type(stored).__name__})"
            )
        return _from_epoch(stored)

    def serialize(self, value: Any) -> int:
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime to serialize, got {type(value).__name__}")
        delta = _to_utc(value) - datetime(1970, 1, 1, tzinfo=UTC)
        return delta // timedelta(seconds=1)

    def step(self, amount: int | float) -> timedelta:
        if _is_number(amount) and not float(amount).is_integer():
            raise ValueError(f"epoch-second windows need a whole number of seconds, got {amount!r}")
        return super().step(amount)


class IntegerStateConverter(StateConverter):
    """Stores and compares integers: an auto-increment id, a version, a log offset."""

    state_type: ClassVar[str] = "integer-range"

    __slots__ = ()

    def parse(self, stored: Any) -> int:
        if isinstance(stored, float) and stored.is_integer():
            return int(stored)
        if not isinstance(stored, int) or isinstance(stored, bool):
            raise StateError(
                f"expected an integer in state, got {stored!r} ({type(stored).__name__})"
            )
        return stored

    def serialize(self, value: Any) -> int:
        return self.parse(value)

    def parse_record_value(self, value: Any) -> int:
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError as exc:
                raise StateError(f"cursor value {value!r} is not an integer") from exc
        try:
            return self.parse(value)
        except StateError as exc:
            raise StateError(
                f"cursor value {value!r} ({type(value).__name__}) is not an integer"
            ) from exc

    def step(self, amount: int | float) -> int:
        if not _is_number(amount) or not float(amount).is_integer() or not amount > 0:
            raise ValueError(f"an integer window step must be a positive integer, got {amount!r}")
        return int(amount)
