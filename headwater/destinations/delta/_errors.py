"""A Delta destination's errors in a line: Spark's (and py4j's) text without the JVM stack trace.

Every failure the destination reports (a write, a commit, a lookup that could not
answer) names what failed and the error's type and first line; the JVM's stack trace
stays in the log, where Spark puts it.
"""

from __future__ import annotations

import re

from headwater.errors import DestinationError


def _failed(what: str, exc: BaseException, stream: str) -> DestinationError:
    """``what``, then the Spark error's type and first line (its JVM stack trace stays out)."""
    return DestinationError(f"{what}: {_error_line(exc)}", stream=stream)


def _error_line(exc: BaseException) -> str:
    """The error's type and first line (a Spark error's JVM stack trace stays out)."""
    text = str(exc).strip()
    first_line = text.splitlines()[0] if text else ""
    cause = _jvm_root_cause(exc)
    if cause:  # py4j's own first line only names the call ("... calling o728.save.")
        first_line = f"{first_line} {cause}".strip()
    return f"{type(exc).__name__}: {first_line}"


def _jvm_root_cause(exc: BaseException) -> str:
    """The first line of the innermost JVM exception behind a py4j error ("" if none).

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


def telling_line(text: str) -> str:
    """The first line of ``text`` that says something.

    A Python worker that failed to start reaches the driver as ``SparkException: ``
    followed by ``Error from python worker:`` and the worker's own traceback: the
    first line alone said nothing (a run ended with ``SparkException: (stream=...)``).
    Blank lines are skipped, a line that announces what follows (ends with ``:``)
    takes the next one with it, and a traceback is told by the line naming what
    was raised.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    told, rest = lines[0], lines[1:]
    while told.endswith(":") and rest:
        line = rest.pop(0)
        if line.startswith("Traceback"):
            raised = [candidate for candidate in rest if _RAISED.match(candidate)]
            line, rest = (raised[-1] if raised else line), []
        told = f"{told} {line}"
    return told


#: A traceback's line naming what was raised: ``OSError: ...``, ``psycopg.errors.X: ...``.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*: |^\w*(?:Error|Exception)\w*: ")
