"""Expectations evaluated inside the Python task, on the typed Arrow batches it emits.

Why: a sync's rows normally never leave Python between the source and the table's
files (the tasks write the Parquet, :meth:`Destination.file_writer`).  Evaluating
the expressions with Spark's ``expr()`` takes the rows into the JVM, persists them
and hands them back out to be written: many times slower (bench/RESULTS.md,
"Expectations").
So an expression whose meaning pyarrow's compute functions give exactly is
compiled to them (:func:`compile_check`) and run in the task, before the rows are
written; one that uses anything else (a function, a cast, a timestamp compared
with text...) is left to Spark (:mod:`._checks`), as is a stream with a
``quarantine`` expectation (its rows go to a second table, through Spark).

What is compiled, with SQL's three-valued logic kept (NULL in, NULL out; only
FALSE fails): columns (top level, matched case-insensitively as Spark does),
number, string, boolean and NULL literals, ``= <> != < <= > >=``, ``AND OR NOT``
(Kleene), ``IS [NOT] NULL``, ``[NOT] BETWEEN``, ``[NOT] IN (literals)``, ``LIKE`` /
``ILIKE`` with ``%`` and ``_``, ``+ - *`` (an overflow raises, as in Spark's ANSI
mode).  Not compiled: ``/`` (Spark gives NULL for a division by zero, pyarrow
infinity) and any column of floating point type (Spark orders NaN above every
number and equal to itself, IEEE comparisons do not).  Before it is used, each
compiled expression is run on an empty batch of the rows' schema: a type pyarrow
cannot compare (or a result that is no boolean) sends the stream to Spark instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark import Accumulator

#: A compiled expression: the batch -> a value per row (or one for every row).
Evaluator = Callable[[pa.RecordBatch], Any]
ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

#: Metadata columns a failing row's sample shows (where it came from), beside its data.
SAMPLE_META = ("_hw_raw_id", "_hw_partition_id")
#: The column of a checkpoint's rows, and of the quarantine table, that names the
#: expectations a row fails (empty when it fails none).
FAILED_COLUMN = "_hw_failed_expectations"
#: A sample's values are cut to this many characters.
SAMPLE_CHARS = 200


class _Unsupported(Exception):
    """The expression uses something pyarrow does not evaluate as Spark does."""


def _column(name: str, schema: pa.Schema) -> Evaluator:
    wanted = name.lower()
    kinds = [f.type for f in schema if f.name.lower() == wanted]
    if not kinds:
        raise _Unsupported(f"no column {name}")
    if pa.types.is_floating(kinds[0]):
        raise _Unsupported("a floating point column (NaN)")

    def value(batch: pa.RecordBatch) -> Any:
        for index, field in enumerate(batch.schema):
            if field.name.lower() == wanted:
                return batch.column(index)
        raise KeyError(name)

    return value


def _constant(value: Any) -> Evaluator:
    scalar = pa.scalar(value)
    return lambda batch: scalar


def _call(function: Callable[..., Any], *parts: Evaluator) -> Evaluator:
    return lambda batch: function(*(part(batch) for part in parts))


def _literal_value(node: Any) -> Any:
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) \
            and not node.this.is_string:
        return -_literal_value(node.this)
    raise _Unsupported(type(node).__name__)


def _in(value: Evaluator, options: Sequence[Any]) -> Evaluator:
    values = pa.array(options)

    def evaluate(batch: pa.RecordBatch) -> Any:
        found = value(batch)
        # SQL: NULL IN (...) is NULL, where is_in says false.
        return pc.if_else(pc.is_null(found), pa.scalar(None, pa.bool_()),
                          pc.is_in(found, value_set=values))

    return evaluate


def _logical(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` of booleans, taking a NULL literal as a boolean NULL (as Spark does)."""
    def call(*values: Any) -> Any:
        return function(*(v.cast(pa.bool_()) if pa.types.is_null(v.type) else v
                          for v in values))
    return call


_COMPARISONS: Mapping[str, Callable[..., Any]] = {
    "EQ": pc.equal, "NEQ": pc.not_equal, "GT": pc.greater, "GTE": pc.greater_equal,
    "LT": pc.less, "LTE": pc.less_equal,
    "And": _logical(pc.and_kleene), "Or": _logical(pc.or_kleene),
    # Checked: an overflow raises, as Spark's ANSI mode (its default) does.
    "Add": pc.add_checked, "Sub": pc.subtract_checked, "Mul": pc.multiply_checked,
}


def _compile(node: Any, schema: pa.Schema) -> Evaluator:
    from sqlglot import exp

    kind = type(node).__name__
    if isinstance(node, exp.Paren):
        return _compile(node.this, schema)
    if isinstance(node, exp.Column):
        if node.table or not isinstance(node.this, exp.Identifier):
            raise _Unsupported("a nested field")
        return _column(node.name, schema)
    if isinstance(node, exp.Null):
        return _constant(None)
    if isinstance(node, exp.Literal | exp.Boolean):
        return _constant(_literal_value(node))
    if kind in _COMPARISONS and isinstance(node, exp.Binary):
        return _call(_COMPARISONS[kind], _compile(node.this, schema),
                     _compile(node.expression, schema))
    if isinstance(node, exp.Not):
        return _call(_logical(pc.invert), _compile(node.this, schema))
    if isinstance(node, exp.Neg):
        return _call(pc.negate_checked, _compile(node.this, schema))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return _call(pc.is_null, _compile(node.this, schema))
    if isinstance(node, exp.Between):
        value, low, high = (_compile(node.this, schema), _compile(node.args["low"], schema),
                            _compile(node.args["high"], schema))
        return lambda batch: pc.and_kleene(pc.greater_equal(value(batch), low(batch)),
                                           pc.less_equal(value(batch), high(batch)))
    if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
        return _in(_compile(node.this, schema), [_literal_value(e) for e in node.expressions])
    if isinstance(node, exp.Like | exp.ILike) and not node.args.get("escape"):
        pattern = _literal_value(node.expression)
        if not isinstance(pattern, str):
            raise _Unsupported("a pattern that is no string literal")
        value = _compile(node.this, schema)
        ignore_case = isinstance(node, exp.ILike)
        return lambda batch: pc.match_like(value(batch), pattern, ignore_case=ignore_case)
    raise _Unsupported(kind)


def compile_check(expr: str, schema: pa.Schema) -> Evaluator | None:
    """``expr`` as pyarrow compute over a batch of ``schema``, or None when only Spark
    evaluates it as Spark does (see the module docstring)."""
    import sqlglot

    try:
        evaluator = _compile(sqlglot.parse_one(expr, read="spark"), schema)
        result = evaluator(pa.RecordBatch.from_pylist([], schema=schema))
    except (_Unsupported, KeyError, pa.ArrowException, TypeError, ValueError):
        return None
    kind = result.type if hasattr(result, "type") else None
    if kind is not None and not (pa.types.is_boolean(kind) or pa.types.is_null(kind)):
        return None
    return evaluator


def failing(evaluator: Evaluator, batch: pa.RecordBatch) -> pa.Array:
    """Where the row fails the expression: FALSE fails, TRUE and NULL pass."""
    result = evaluator(batch)
    if isinstance(result, pa.Scalar):
        result = pa.repeat(result.cast(pa.bool_()), batch.num_rows)
    elif isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return pc.fill_null(pc.invert(result.cast(pa.bool_())), False)


@dataclass(frozen=True)
class TaskChecks:
    """What a task runs on its output batches: plain values, pickled with the task.

    ``checks`` are ``(name, action, expr)``; the evaluators are compiled again on
    the executor (what pickles is text).  Counts go to ``counts`` (per partition,
    replaced, not added, so a task run again counts its partitions once):
    ``{partition id: [evaluated, failed per check..., removed]}``.
    """

    stream: str
    checks: tuple[tuple[str, str, str], ...]
    secret_columns: frozenset[str] = frozenset()

    def around(self, task: ArrowTask, counts: Accumulator[dict[str, list[int]]],
               schema: pa.Schema,
               quarantined: Callable[[pa.RecordBatch], None] | None = None) -> ArrowTask:
        """``task`` with its batches checked: ``fail`` raises, ``drop`` and ``quarantine``
        filter, and the rows a ``quarantine`` expectation fails go to ``quarantined``
        (with :data:`~headwater.expectations._checks.FAILED_COLUMN`), whose caller
        writes them to the quarantine table in the same task."""
        checks, stream, secrets = self.checks, self.stream, self.secret_columns

        def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            compiled = [(name, action, compile_check(expr, schema))
                        for name, action, expr in checks]
            evaluators = [evaluator for _, _, evaluator in compiled if evaluator is not None]
            if len(evaluators) != len(compiled):  # the driver compiled them all
                raise RuntimeError("an expectation the driver compiled does not compile here")
            local: dict[str, list[int]] = {}
            for batch in task(positions):
                if batch.num_rows == 0:
                    yield batch
                    continue
                masks = [failing(evaluator, batch) for evaluator in evaluators]
                for (name, action, _), mask in zip(compiled, masks, strict=True):
                    if action == "fail" and pc.any(mask).as_py():
                        raise _failure(stream, name, checks, batch.filter(mask), mask,
                                       secrets)
                held = _any([m for (_, action, _), m in zip(compiled, masks, strict=True)
                             if action == "quarantine"])
                gone = _any([m for (_, action, _), m in zip(compiled, masks, strict=True)
                             if action in ("drop", "quarantine")])
                _count(local, batch, masks, gone)
                if held is not None and quarantined is not None and pc.any(held).as_py():
                    quarantined(with_failed(batch, held, [name for name, _, _ in compiled],
                                            masks))
                yield batch if gone is None else batch.filter(pc.invert(gone))
            counts.add(local)

        return run


def _any(masks: list[pa.Array]) -> pa.Array | None:
    """Where any of ``masks`` holds (None: no mask)."""
    found = masks[0] if masks else None
    for mask in masks[1:]:
        found = pc.or_(found, mask)
    return found


def with_failed(batch: pa.RecordBatch, rows: pa.Array, names: Sequence[str],
                masks: Sequence[pa.Array]) -> pa.RecordBatch:
    """The ``rows`` of ``batch``, with the names of the expectations each failed (in the
    expectations' order, as Spark's way lists them) as a last column."""
    flags = [mask.filter(rows).to_pylist() for mask in masks]
    failed = [[name for name, flag in zip(names, row, strict=True) if flag]
              for row in zip(*flags, strict=True)]
    chosen = batch.filter(rows)
    return chosen.append_column(pa.field(FAILED_COLUMN, pa.list_(pa.string())),
                                pa.array(failed, pa.list_(pa.string())))


def _count(local: dict[str, list[int]], batch: pa.RecordBatch, masks: list[pa.Array],
           gone: pa.Array | None) -> None:
    """Add one batch's figures to its partitions' (a batch may hold several)."""
    partitions = batch.column("_hw_partition_id")
    for partition in pc.unique(partitions).to_pylist():
        rows = pc.equal(partitions, partition)
        figures = local.setdefault(partition, [0] * (len(masks) + 2))
        figures[0] += pc.sum(rows.cast(pa.int64())).as_py() or 0
        for i, mask in enumerate(masks, 1):
            figures[i] += pc.sum(pc.and_(rows, mask).cast(pa.int64())).as_py() or 0
        if gone is not None:
            figures[-1] += pc.sum(pc.and_(rows, gone).cast(pa.int64())).as_py() or 0


def _failure(stream: str, name: str, checks: Sequence[tuple[str, str, str]],
             failed: pa.RecordBatch, mask: pa.Array, secrets: frozenset[str]) -> Exception:
    from headwater.errors import ExpectationFailed

    expr = next(e for n, _, e in checks if n == name)
    row = failed.slice(0, 1).to_pylist()[0]
    shown = {key: row[key] for key in (*SAMPLE_META, *row) if key in row
             and (key in SAMPLE_META or not key.startswith("_hw_"))}
    return ExpectationFailed(
        f"expectation {name!r} ({expr}) failed on {pc.sum(mask.cast(pa.int64())).as_py():,} "
        f"row(s) of a batch and its action is fail: the checkpoint was not committed and the "
        f"stream's state did not move; a failing row: {sample_text(shown, secrets)}",
        stream=stream)


def sample_text(row: Mapping[str, Any], secret_columns: frozenset[str] | set[str]) -> str:
    """A failing row as one line of JSON: secret columns and registered secrets masked,
    long values cut."""
    from headwater.config import mask
    from headwater.config._secrets import REDACTED

    shown = {}
    for key, value in row.items():
        if key in secret_columns:
            shown[key] = REDACTED
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        shown[key] = text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "..."
    return mask(json.dumps(shown, ensure_ascii=False, default=str))


class CountsParam:
    """Accumulator of :class:`TaskChecks`' counts: a partition's figures replace its
    earlier ones (a task run again must not count twice)."""

    def zero(self, value: dict[str, list[int]]) -> dict[str, list[int]]:
        return {}

    def addInPlace(self, value1: dict[str, list[int]],
                   value2: dict[str, list[int]]) -> dict[str, list[int]]:
        value1.update(value2)
        return value1


__all__ = [
    "FAILED_COLUMN",
    "CountsParam",
    "TaskChecks",
    "compile_check",
    "failing",
    "sample_text",
    "with_failed",
]
