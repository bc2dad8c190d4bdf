"""A stream's expectations evaluated on a checkpoint's rows, in Spark, in the pass that
reads and types them.

The way for what the tasks cannot evaluate as Spark does (:mod:`._arrow`) and for a
stream with a ``quarantine``: Spark's own ``expr()`` gives exactly Spark's semantics
(every function, casts, NULLs), in the same stage as the task that types the rows
(whole-stage code after the Arrow task, no extra read of the source).

One checkpoint goes like this (:meth:`StreamExpectations.commit`):

1. every row gets :data:`FAILED_COLUMN`, the names of the expectations it fails,
   and the rows are persisted (memory, then disk): the only read of the source;
2. one aggregate over them counts rows and failures per expectation;
3. a ``fail`` expectation that any row fails raises :class:`ExpectationFailed`
   naming it and one failing row (secrets masked): nothing is committed, so the
   checkpoint is not released and state does not move past it;
4. the rows a ``quarantine`` expectation fails go to the quarantine table first
   (:mod:`headwater.engine._quarantine`, idempotent), then the rows no
   ``drop`` or ``quarantine`` expectation fails are committed as any checkpoint.

A NULL result passes, as a SQL ``CHECK`` constraint does: only FALSE fails (write
``amount IS NOT NULL AND amount >= 0`` to require a value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any, TypeVar

from headwater._events import emit
from headwater.errors import ConfigError, ExpectationFailed
from headwater.expectations._arrow import FAILED_COLUMN, SAMPLE_META, sample_text
from headwater.expectations._config import ExpectationConfig

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

T = TypeVar("T")


@dataclass(frozen=True)
class CheckpointCounts:
    """What one checkpoint's expectations found."""

    evaluated: int
    #: Rows failing each expectation, by name (every expectation, 0 included).
    failed: Mapping[str, int]
    #: Rows written to the quarantine table.
    quarantined: int = 0
    #: Rows kept out of the table (dropped or quarantined).
    removed: int = 0

    def to_stats(self, actions: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """The checkpoint's figures as its record in the store keeps them."""
        return {name: {"action": actions.get(name, "warn"), "evaluated": self.evaluated,
                       "failed": count} for name, count in self.failed.items()}


def add_counts(totals: dict[str, dict[str, Any]],
               stats: Mapping[str, Mapping[str, Any]] | None) -> None:
    """Add a checkpoint's counts (:meth:`CheckpointCounts.to_stats`) to a stream's
    ``totals``: ``{name: {action, evaluated, failed}}``, as the summary, ``runs show``,
    ``--json`` and the metrics show them."""
    for name, found in (stats or {}).items():
        total = totals.setdefault(
            name, {"action": found.get("action", "warn"), "evaluated": 0, "failed": 0})
        total["evaluated"] += int(found.get("evaluated") or 0)
        total["failed"] += int(found.get("failed") or 0)


def _check(expectation: ExpectationConfig) -> Column:
    """The expectation's name where the row fails it (FALSE; NULL passes), else NULL."""
    from pyspark.sql import functions as F

    holds = F.coalesce(F.expr(expectation.expr).cast("boolean"), F.lit(True))
    return F.when(~holds, F.lit(expectation.name))


def _fails_any(names: Sequence[str]) -> Column:
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b,
                  [F.array_contains(F.col(FAILED_COLUMN), n) for n in names], F.lit(False))


class StreamExpectations:
    """One stream's expectations, ready to check its checkpoints (see the module docstring)."""

    def __init__(self, stream: str, expectations: Sequence[ExpectationConfig],
                 json_schema: Mapping[str, Any] | None = None) -> None:
        self.stream = stream
        self.expectations = list(expectations)
        self.actions = {e.name: e.action for e in self.expectations}
        self.secret_columns = frozenset(_secret_columns(json_schema or {}))

    def names(self, *actions: str) -> list[str]:
        return [e.name for e in self.expectations if e.action in actions]

    @property
    def quarantines(self) -> bool:
        return bool(self.names("quarantine"))

    def analyse(self, spark: SparkSession, schema: StructType) -> None:
        """Let Spark's analyzer confirm every expression against the rows' columns,
        before anything is read: an unknown column, function or a result that is no
        boolean is a :class:`ConfigError` naming the stream and the expression."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType, NullType

        empty = spark.createDataFrame([], schema)
        for expectation in self.expectations:
            where = (f"stream {self.stream!r}: expectation {expectation.name!r}: expression "
                     f"{expectation.expr!r}")
            try:
                kind = empty.select(F.expr(expectation.expr)).schema.fields[0].dataType
            except PySparkException as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise ConfigError(f"{where} is refused by Spark: {first}",
                                  stream=self.stream) from None
            if not isinstance(kind, BooleanType | NullType):
                raise ConfigError(f"{where} is of type {kind.simpleString()}, not boolean",
                                  stream=self.stream)

    def flag(self, rows: DataFrame) -> DataFrame:
        """``rows`` with :data:`FAILED_COLUMN`."""
        from pyspark.sql import functions as F

        return rows.withColumn(FAILED_COLUMN, F.array_compact(
            F.array(*[_check(e) for e in self.expectations])))

    def count(self, flagged: DataFrame) -> CheckpointCounts:
        from pyspark.sql import functions as F

        def rows_where(condition: Column) -> Column:
            return F.coalesce(F.sum(condition.cast("long")), F.lit(0))

        quarantine = self.names("quarantine")
        removed = self.names("drop", "quarantine")
        row = flagged.agg(
            F.count(F.lit(1)).alias("evaluated"),
            rows_where(self._quarantined()).alias("quarantined"),
            rows_where(_fails_any(removed)).alias("removed"),
            *[rows_where(F.array_contains(F.col(FAILED_COLUMN), e.name)).alias(f"e{i}")
              for i, e in enumerate(self.expectations)],
        ).first()
        assert row is not None  # an aggregate without grouping has one row
        return CheckpointCounts(
            evaluated=int(row["evaluated"]),
            failed={e.name: int(row[f"e{i}"]) for i, e in enumerate(self.expectations)},
            quarantined=int(row["quarantined"]) if quarantine else 0,
            removed=int(row["removed"]))

    def _quarantined(self) -> Column:
        """A row the quarantine table takes: it fails a ``quarantine`` expectation."""
        return _fails_any(self.names("quarantine"))

    def kept(self, flagged: DataFrame) -> DataFrame:
        """The rows the stream's table takes, without :data:`FAILED_COLUMN`."""
        return flagged.where(~_fails_any(self.names("drop", "quarantine"))).drop(FAILED_COLUMN)

    def quarantined(self, flagged: DataFrame) -> DataFrame:
        return flagged.where(self._quarantined())

    def commit(self, rows: DataFrame, commit: Callable[[DataFrame], T],
               quarantine: Callable[[DataFrame], object] | None, *,
               always_quarantine: bool = False,
               counted: Callable[[CheckpointCounts], None] | None = None,
               ) -> tuple[T, CheckpointCounts]:
        """Check a checkpoint's ``rows``, quarantine, then ``commit`` what is kept.

        Returns what ``commit`` returned and the checkpoint's counts; raises
        :class:`ExpectationFailed` (nothing committed) when a ``fail`` expectation
        fails.  ``counted`` gets the counts before anything is committed: a commit
        that raises may have landed nonetheless (the engine looks it up), and then
        its counts are the checkpoint's.  The rows are persisted for the steps after
        the first (released at the end, whatever happens).
        """
        from pyspark import StorageLevel

        flagged = self.flag(rows).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            counts = self.count(flagged)
            if counted is not None:
                counted(counts)
            for name in self.names("fail"):
                if counts.failed.get(name):
                    raise self._failure(flagged, name, counts.failed[name])
            if counts.quarantined or (always_quarantine and self.quarantines):
                if quarantine is None:
                    raise ConfigError(f"stream {self.stream!r}: the destination has no "
                                      "quarantine table", stream=self.stream)
                quarantine(self.quarantined(flagged))
                emit("after-quarantine")
            return commit(self.kept(flagged)), counts
        finally:
            flagged.unpersist()

    def _failure(self, flagged: DataFrame, name: str, failed: int) -> ExpectationFailed:
        from pyspark.sql import functions as F

        expectation = next(e for e in self.expectations if e.name == name)
        data = [c for c in flagged.columns if not c.startswith("_hw_")]
        found = (flagged.where(F.array_contains(F.col(FAILED_COLUMN), name))
                 .select(*SAMPLE_META, *data).limit(1).collect())
        sample = (sample_text(found[0].asDict(recursive=True), self.secret_columns)
                  if found else "{}")
        return ExpectationFailed(
            f"expectation {name!r} ({expectation.expr}) failed on {failed:,} row(s) and its "
            f"action is fail: the checkpoint was not committed and the stream's state did "
            f"not move; a failing row: {sample}", stream=self.stream)


def _secret_columns(json_schema: Mapping[str, Any]) -> set[str]:
    """Columns the stream's schema marks secret (``airbyte_secret``, ``secret``, ``writeOnly``)."""
    properties = json_schema.get("properties") or {}
    return {name for name, spec in properties.items() if isinstance(spec, Mapping)
            and any(spec.get(flag) for flag in ("airbyte_secret", "secret", "writeOnly"))}


__all__ = ["FAILED_COLUMN", "CheckpointCounts", "StreamExpectations", "add_counts"]
