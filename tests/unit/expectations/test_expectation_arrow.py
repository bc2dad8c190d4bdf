"""The expressions compiled to pyarrow compute (run inside the tasks): which are, and
SQL's three-valued logic (only FALSE fails).  Spark's own answers on the same rows are
checked in tests/integration/expectations (test_in_task_checks_agree_with_spark)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headwater.expectations._arrow import compile_check, failing

SCHEMA = pa.schema([("_hw_partition_id", pa.string()), ("id", pa.int64()),
                    ("age", pa.int64()), ("email", pa.string()), ("score", pa.float64()),
                    ("updated_at", pa.timestamp("us", tz="UTC"))])
BATCH = pa.RecordBatch.from_pylist([
    {"_hw_partition_id": "p", "id": 1, "age": 30, "email": "a@x", "score": 1.0},
    {"_hw_partition_id": "p", "id": 2, "age": None, "email": None, "score": None},
    {"_hw_partition_id": "p", "id": 3, "age": 10, "email": "nobody", "score": 2.0},
], schema=SCHEMA)


@pytest.mark.parametrize(("expr", "fails"), [
    ("age >= 18", [False, False, True]),              # NULL passes
    ("AGE >= 18 AND email LIKE '%@%'", [False, False, True]),
    ("age >= 18 OR id = 2", [False, False, True]),
    ("age IS NOT NULL", [False, True, False]),
    ("NOT (age BETWEEN 20 AND 40)", [True, False, False]),
    ("email IN ('a@x', 'b@x')", [False, False, True]),
    ("email NOT IN ('a@x')", [True, False, False]),
    ("age + id * 2 > 20", [False, False, True]),
    ("email ILIKE 'A@%'", [False, False, True]),
    ("true", [False, False, False]),
])
def test_compiled_checks_fail_only_on_false(expr: str, fails: list[bool]) -> None:
    evaluator = compile_check(expr, SCHEMA)

    assert evaluator is not None
    assert failing(evaluator, BATCH).to_pylist() == fails


@pytest.mark.parametrize("expr", [
    "score > 1",                        # floating point: NaN orders differently
    "age / 2 > 1",                      # division: NULL or infinity by zero
    "updated_at > '2024-01-01'",        # a timestamp against text: Spark casts
    "length(email) > 3",                # a function
    "age = 'thirty'",                   # types pyarrow does not compare
    "age + 1",                          # no boolean
    "struct_col.field = 1",             # a nested field
    "unknown_column = 1",
])
def test_what_pyarrow_would_not_evaluate_as_spark_does_is_left_to_spark(expr: str) -> None:
    assert compile_check(expr, SCHEMA) is None
