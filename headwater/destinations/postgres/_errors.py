"""The destination's errors in a line: a failed Spark job's Python error without its traces.

A COPY task that fails on an executor reaches the driver as Spark's error whose
text holds the worker's whole traceback; what a person needs is its last line
(``psycopg.errors.X: ...``), and a refusal of the credentials keeps its kind
(:class:`~headwater.errors.AuthenticationError`, exit 3).
"""

from __future__ import annotations

from headwater.destinations._error_line import error_line
from headwater.errors import AuthenticationError, DestinationError, HeadwaterError


def job_error(what: str, exc: BaseException, stream: str) -> HeadwaterError:
    """``what`` failed in its Spark job: the error a person acts on."""
    line = error_line(exc)
    if "AuthenticationError" in line:
        return AuthenticationError(f"{what} failed: {line}", field="destination.config.password",
                                   stream=stream)
    return DestinationError(f"{what} failed: {line}", stream=stream)


__all__ = ["error_line", "job_error"]
