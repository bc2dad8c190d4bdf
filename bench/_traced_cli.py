"""``headwater`` with its moments timed: the substream benchmark's entry point.

    python -m bench._traced_cli TRACE_FILE -- ARGS...

runs ``headwater ARGS`` in this very process, with a listener on every moment
of :mod:`headwater._events`, the driver's and the tasks' (those travel to the
Spark Python workers pickled by value, registered once Spark is ready: imported
up front, PySpark put 0.1 CPU-s before the first API call that the command
itself pays later, while its early reads run), that appends ``<monotonic seconds>
<pid> <moment>`` to ``TRACE_FILE``; ``interpreter-exit`` is the last thing the
interpreter runs before it goes (the first ``atexit`` handler registered runs
last).  ``time.monotonic`` is the machine's one monotonic clock, the one the
benchmark and the loopback API's call log use, so the lines place each step
of the command's tail against the API's last call.  Once the summary is
printed, ``cpu KIND SECONDS`` lines say how much CPU the driver, Spark's JVM
and its Python workers had used (:func:`descendants_cpu`): figures that a
loaded machine does not inflate the way it does wall time.
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


def descendants_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) so far of each process under ``root`` and of
    ``root`` itself, by kind: ``driver`` (root), ``jvm``, ``python`` (Spark's
    Python daemon and workers, and their children), ``other``; from ``/proc``.
    A worker that already ended is counted in its parent's figures only if it
    was waited for, so these are lower bounds."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    facts: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        facts[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    kinds: dict[str, float] = {}
    for pid, (name, seconds) in facts.items():
        at, depth = pid, 0
        while at not in (root, 0, 1) and depth < 20:
            at, depth = parents.get(at, 0), depth + 1
        if at != root:
            continue
        kind = ("driver" if pid == root else "jvm" if name == "java"
                else "python" if name.startswith("python") else "other")
        kinds[kind] = kinds.get(kind, 0.0) + seconds
    return kinds


def main(argv: list[str]) -> None:
    path, args = argv[0], argv[1:]
    args = args[1:] if args[:1] == ["--"] else args

    from bench import _traced_cli
    from headwater import _events

    note = note_to(path)

    def listen(moment: str) -> None:
        if moment == "spark-ready":
            # Tasks are built from here on, and PySpark is imported (module docstring).
            from pyspark import cloudpickle

            cloudpickle.register_pickle_by_value(_traced_cli)
        note(moment)
        if moment == "summary-printed":
            for kind, seconds in sorted(descendants_cpu(os.getpid()).items()):
                note(f"cpu {kind} {seconds:.2f}")
    atexit.register(note, "interpreter-exit")
    note("cli-imported")
    _events.listen(listen)
    _events.listen_in_tasks(note)

    from headwater.cli.app import main as headwater

    sys.argv = ["headwater", *args]
    headwater(args)


if __name__ == "__main__":
    main(sys.argv[1:])
