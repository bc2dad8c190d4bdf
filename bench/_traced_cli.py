"""``headwater`` with its moments timed: the substream benchmark's entry point.

    python -m bench._traced_cli TRACE_FILE -- ARGS...

runs ``headwater ARGS`` in this very process, with a listener on every moment
of :mod:`headwater._events`, the driver's and the tasks' (those travel to the
Spark Python workers pickled by value), that appends ``<monotonic seconds>
<pid> <moment>`` to ``TRACE_FILE``; ``interpreter-exit`` is the last thing the
interpreter runs before it goes (the first ``atexit`` handler registered runs
last).  ``time.monotonic`` is the machine's one monotonic clock, the one the
benchmark and the loopback API's call log use, so the lines place each step
of the command's tail against the API's last call.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Callable


def note_to(path: str) -> Callable[[str], None]:
    """A listener appending each moment to ``path`` (one short write: lines never mix)."""

    def note(moment: str) -> None:
        line = f"{time.monotonic():.6f} {os.getpid()} {moment}\n".encode()
        handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(handle, line)
        finally:
            os.close(handle)

    return note


def main(argv: list[str]) -> None:
    path, args = argv[0], argv[1:]
    args = args[1:] if args[:1] == ["--"] else args

    from pyspark import cloudpickle

    from bench import _traced_cli
    from headwater import _events

    cloudpickle.register_pickle_by_value(_traced_cli)
    note = note_to(path)
    atexit.register(note, "interpreter-exit")
    note("cli-imported")
    _events.listen(note)
    _events.listen_in_tasks(note)

    from headwater.cli.app import main as headwater

    sys.argv = ["headwater", *args]
    headwater(args)


if __name__ == "__main__":
    main(sys.argv[1:])
