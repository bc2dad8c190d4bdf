"""A Delta destination's errors in a line: Spark's (and py4j's) text without the JVM stack trace.

Every failure the destination reports (a write, a commit, a lookup that could not
answer) names what failed and the error's type and first line; the JVM's stack trace
stays in the log, where Spark puts it.
"""

from __future__ import annotations

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
        return (str(java.toString()).strip().splitlines() or [""])[0]
    except Exception:  # the JVM is gone, or the object is not a Throwable
        return ""
