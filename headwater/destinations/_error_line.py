"""A destination's error in one line a person can act on: what was raised, no stack trace.

Every destination reports a failed write, commit or lookup as what failed and the
error's type and most telling line.  The text of such an error varies by where it
came from: a Python exception (PyIceberg, psycopg, pyarrow) is its first line; a
Spark job's error carries the worker's whole Python traceback, or starts with a
line that names nothing (``SparkException: ``, ``An error occurred while calling
o728.save.``); a py4j error hides the reason in the innermost JVM cause.  One
function reads them all, so every destination's errors read alike; the stack
traces stay in the log, where Spark and Python put them.
"""

from __future__ import annotations

import re

#: A traceback's line naming what was raised: ``OSError: ...``, ``psycopg.errors.X: ...``.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*: |^\w*(?:Error|Exception)\w*: ")


def error_line(exc: BaseException) -> str:
    """The error's type and most telling line (:func:`telling_line`), with the innermost
    JVM cause of a py4j error, whose own first line only names the call."""
    told = telling_line(str(exc))
    cause = _jvm_root_cause(exc)
    if cause and cause not in told:
        told = f"{told} {cause}".strip()
    return f"{type(exc).__name__}: {told}"


def telling_line(text: str) -> str:
    """The first line of ``text`` that says something, and what a traceback in it raised.

    A Python worker that failed reaches the driver as ``SparkException: `` (or "An
    exception was thrown from the Python worker. Please see the stack trace below.")
    followed by the worker's own traceback: the first line alone said nothing (a run
    ended with ``SparkException: (stream=...)``).  Blank lines are skipped, a line that
    announces what follows (ends with ``:``) takes the next one with it, and a
    traceback is told by its last line naming what was raised.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    told, rest = lines[0], lines[1:]
    while told.endswith(":") and rest and not rest[0].startswith("Traceback"):
        told = f"{told} {rest.pop(0)}"
    raised = _last_raised(lines)
    if raised and raised not in told:
        told = f"{told} {raised}"
    return told


def _last_raised(lines: list[str]) -> str:
    """The line naming what the last traceback among ``lines`` raised ("" if none)."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return ""
    raised = [line for line in lines[starts[-1] + 1:] if _RAISED.match(line)]
    return raised[-1] if raised else ""


def _jvm_root_cause(exc: BaseException) -> str:
    """The telling line of the innermost JVM exception behind a py4j error ("" if none).

    A write Spark's writer refuses (a CHECK constraint, say) fails inside a job, and
    the reason is the cause of the cause of the error the driver's call raised.
    """
    java = getattr(exc, "java_exception", None)
    if java is None:
        return ""
    try:
        while java.getCause() is not None:
            java = java.getCause()
        return telling_line(str(java.toString()))
    except Exception:  # the JVM is gone, or the object is not a Throwable
        return ""


__all__ = ["error_line", "telling_line"]
