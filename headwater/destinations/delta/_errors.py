"""A Delta destination's failures: what failed, then the error in one line
(:func:`~headwater.destinations._error_line.error_line`; the JVM's stack trace stays in
the log, where Spark puts it)."""

from __future__ import annotations

from headwater.destinations._error_line import error_line
from headwater.errors import DestinationError


def _failed(what: str, exc: BaseException, stream: str) -> DestinationError:
    """``what``, then the Spark error's type and telling line."""
    return DestinationError(f"{what}: {error_line(exc)}", stream=stream)
