"""An expectation as the connection file writes it, checked when the file is loaded.

Each stream may list named boolean Spark SQL expressions over its rows, each with
what to do with a row for which it is false::

    streams:
      - name: orders
        expectations:
          - {name: positive_amount, expr: "amount >= 0", action: drop}

Why sqlglot parses the expression here: a typo must be a config error of
``headwater validate`` (which starts no Spark and reads no data), naming the
stream and the expression, and sqlglot's ``spark`` dialect reads Spark SQL
without a JVM.  It only has to say "this is one scalar expression, over these
columns": Spark's own analyzer has the last word when the sync starts
(:func:`headwater.expectations.analyse`), before any checkpoint is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: What a row for which the expression is false does: ``warn`` is counted and kept,
#: ``drop`` is counted and kept out, ``quarantine`` is kept out of the table and
#: written to the stream's quarantine table, ``fail`` stops the checkpoint before
#: its commit (nothing of it lands, state does not move past it).  A row failing
#: several: ``fail`` stops the checkpoint; else ``quarantine`` before ``drop``.
Action = Literal["warn", "drop", "quarantine", "fail"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ExpectationConfig(BaseModel):
    """One named check of a stream's rows (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    expr: str = Field(min_length=1)
    action: Action = "warn"

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        # It names a counter in metrics and a value in the quarantine table's column.
        if not _NAME.fullmatch(value):
            raise ValueError("must be letters, digits and '_', not starting with a digit")
        return value

    def columns(self) -> set[str]:
        """The top-level columns the expression reads (parsed again: cheap, and the
        model stays plain values that pickle and dump)."""
        return referenced_columns(self.expr)


def parse_problem(expr: str) -> str | None:
    """Why ``expr`` is not one scalar Spark SQL expression over a row (None: it is)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        parsed = sqlglot.parse(expr, read="spark")
    except SqlglotError as exc:
        return f"does not parse as Spark SQL: {_first_line(str(exc))}"
    if len(parsed) != 1 or parsed[0] is None:
        return "must be one expression, not several statements"
    tree = parsed[0]
    if isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command):
        return "must be an expression over a row, not a statement"
    if tree.find(exp.AggFunc) is not None or tree.find(exp.Window) is not None:
        return "must be evaluated on one row: aggregates and window functions are not allowed"
    if tree.find(exp.Subquery, exp.Select) is not None:
        return "must be evaluated on one row: subqueries are not allowed"
    return None


def referenced_columns(expr: str) -> set[str]:
    """The top-level column names ``expr`` reads (``a.b`` reads ``a``); lambda
    variables of higher-order functions (``exists(xs, x -> x > 0)``) are not columns."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(expr, read="spark")
    bound = {identifier.name for function in tree.find_all(exp.Lambda)
             for identifier in function.expressions}
    names = set()
    for column in tree.find_all(exp.Column):
        parts = [part.name for part in column.parts]
        if parts and parts[0] not in bound:
            names.add(parts[0])
    return names


def expectations_problem(stream: str, expectations: Iterable[ExpectationConfig]) -> str | None:
    """Why a stream's expectations cannot run, naming the stream and the expression."""
    seen: set[str] = set()
    for expectation in expectations:
        if expectation.name in seen:
            return f"stream {stream!r}: expectation {expectation.name!r} is listed more than once"
        seen.add(expectation.name)
        problem = parse_problem(expectation.expr)
        if problem is not None:
            return (f"stream {stream!r}: expectation {expectation.name!r}: expression "
                    f"{expectation.expr!r} {problem}")
    return None


def unknown_columns_problem(stream: str, expectations: Iterable[ExpectationConfig],
                            columns: Iterable[str]) -> str | None:
    """Which expression names a column the stream does not have (None: none does)."""
    known = {name.lower() for name in columns}  # Spark resolves names case-insensitively
    for expectation in expectations:
        missing = sorted(c for c in expectation.columns() if c.lower() not in known)
        if missing:
            return (f"stream {stream!r}: expectation {expectation.name!r}: expression "
                    f"{expectation.expr!r} names {', '.join(map(repr, missing))}, which the "
                    f"stream does not have; it has: {', '.join(sorted(columns))}")
    return None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return re.sub(r"\x1b\[[0-9;]*m", "", lines[0]) if lines else "syntax error"


__all__ = ["Action", "ExpectationConfig", "expectations_problem",
           "parse_problem", "referenced_columns", "unknown_columns_problem"]
