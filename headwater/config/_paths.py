"""Field paths: one spelling for "where in the connection file" across every error.

Interpolation, model validation and spec validation all report problems by
field path, and the line map of a connection file is keyed by the same
strings, so a path from any of them finds its line.  The spelling is
``source.config.auth.token`` for mapping keys and ``streams[0].sync_mode`` for
list items; a key that is not a plain word (a Spark conf key with dots, say)
is quoted: ``spark.conf["spark.sql.shuffle.partitions"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_LAST_SEGMENT = re.compile(r'(\.[A-Za-z0-9_-]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\])$')


def format_path(parts: Iterable[str | int], prefix: str = "") -> str:
    """Spell a path given as keys and list indices, continuing ``prefix`` if given.

    >>> format_path(["streams", 0, "sync_mode"])
    'streams[0].sync_mode'
    >>> format_path(["auth", "token"], prefix="source.config")
    'source.config.auth.token'
    """
    path = prefix
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            path += f".{part}" if path else part
        else:
            path += f"[{json.dumps(part)}]"
    return path


def parent_path(path: str) -> str | None:
    """The path one level up (``""`` is the document root), or ``None`` above the root."""
    if not path:
        return None
    match = _LAST_SEGMENT.search(path)
    return "" if match is None else path[: match.start()]


def line_of(lines: Mapping[str, int], path: str) -> int | None:
    """The file line of ``path``, or of its nearest ancestor present in the file.

    A missing required field has no line of its own; the line of the mapping
    that should hold it is the most useful thing to point at.
    """
    current: str | None = path
    while current is not None:
        if current in lines:
            return lines[current]
        current = parent_path(current)
    return None
