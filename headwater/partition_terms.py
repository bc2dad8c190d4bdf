"""A stream's ``partition_by`` entries: a column, or an Iceberg partition transform of one.

Why a module of its own: the connection file is checked when it is loaded
(the shape of each entry), the engine checks the columns when a sync starts,
and the Iceberg destination turns the entries into a partition spec; all three
read them the same way.  Plain data, no Spark, no PyIceberg.

Accepted (Spark SQL's spelling of Iceberg's transforms)::

    country              identity: one partition per value
    years(ts)  months(ts)  days(ts)  hours(ts)
    bucket(16, id)       Iceberg's hash of the value, modulo 16
    truncate(4, name)    the first 4 characters (or the value rounded down to a multiple of 4)

Only the Iceberg destination takes transforms; Delta partitions by columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: What an entry may look like, for error messages.
EXPECTED_SHAPE = ("a column, or years(column), months(column), days(column), hours(column), "
                  "bucket(N, column) or truncate(W, column)")

#: Each time transform's spelling, and Iceberg's name for it (also the partition's suffix).
TIME_TRANSFORMS = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
#: Each transform that takes a number, and the partition field's suffix.
WIDTH_TRANSFORMS = {"bucket": "bucket", "truncate": "trunc"}

_CALL = re.compile(r"^\s*(?P<name>\w+)\s*\((?P<args>.*)\)\s*$", re.DOTALL)


@dataclass(frozen=True)
class PartitionTerm:
    """One ``partition_by`` entry: ``transform`` of ``column`` (``identity``: the column)."""

    column: str
    #: ``identity``, ``year``, ``month``, ``day``, ``hour``, ``bucket`` or ``truncate``.
    transform: str = "identity"
    #: The bucket count or truncation width (None for the others).
    width: int | None = None

    @property
    def is_identity(self) -> bool:
        return self.transform == "identity"

    @property
    def field_name(self) -> str:
        """The partition field's name, as Spark's Iceberg names it (``ts_day``, ``id_bucket``)."""
        if self.is_identity:
            return self.column
        suffix = WIDTH_TRANSFORMS.get(self.transform, self.transform)
        return f"{self.column}_{suffix}"


def parse_term(entry: str) -> PartitionTerm:
    """The term ``entry`` spells; ``ValueError`` (saying the expected shape) when it is none.

    >>> parse_term("bucket(16, id)")
    PartitionTerm(column='id', transform='bucket', width=16)
    """
    call = _CALL.match(entry)
    if call is None:
        if "(" in entry or ")" in entry or "," in entry:
            raise ValueError(f"{entry!r} is not {EXPECTED_SHAPE}")
        return PartitionTerm(column=entry)
    name, args = call.group("name").lower(), [a.strip() for a in call.group("args").split(",")]
    if name in TIME_TRANSFORMS and len(args) == 1 and _is_column(args[0]):
        return PartitionTerm(column=args[0], transform=TIME_TRANSFORMS[name])
    if name in WIDTH_TRANSFORMS:
        if len(args) == 2 and args[0].isdigit() and int(args[0]) > 0 and _is_column(args[1]):
            return PartitionTerm(column=args[1], transform=name, width=int(args[0]))
        raise ValueError(f"{entry!r} is not {name}(N, column) with N a positive whole number")
    if name in TIME_TRANSFORMS:
        raise ValueError(f"{entry!r} is not {name}(column)")
    raise ValueError(f"{entry!r} is not {EXPECTED_SHAPE}")


def _is_column(text: str) -> bool:
    return bool(text) and not any(c in text for c in "(),")


__all__ = ["EXPECTED_SHAPE", "PartitionTerm", "parse_term"]
