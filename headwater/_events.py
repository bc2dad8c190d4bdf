"""Named moments of a sync that something outside the engine may act on.

The engine and the destinations announce moments (``spark-ready``,
``after-plan``; per checkpoint ``after-quarantine`` when its expectations
quarantined rows (before its commit), ``after-commit``, a destination's
``commit-landed`` right after its commit is durable, ``after-release``; a
Delta history checkpoint's ``history-closing-read`` once the table version it
closes versions of is fixed, before its commit (the MERGE path has read them
by then; Headwater's own commit reads them at that version in its writing job); per
stream ``after-publish`` for a staged overwrite, ``after-state`` once its
state is saved, ``stream-done``; ``run-recorded`` once the metadata store holds
the run's end, ``summary-printed`` once the CLI has printed it; and
``early-reads-started`` and ``early-reads-done`` when the driver's early HTTP
calls start and have all ended, the latter heard from the reads' own process
by a thread of the driver once that process has ended); a
listener registered with :func:`listen` hears them in order, in the thread
that reached the moment.  On the executors each task announces ``reading``
before it reads a partition, ``partition-read`` once every batch of it has
left, and ``task-read`` once its last partition has, to the task listeners
registered on the driver (:func:`listen_in_tasks`), which travel pickled with
the task.  The benchmarks time a sync's tail with them
(``bench/substream_api_vs_cdk.py``).

With nobody listening a moment costs a look at an empty list, and nothing here
reads the environment: the crash tests install their faults (a SIGKILL at the
third ``after-commit``, a pause before each read) through an entry point of
their own (``tests/_faulty_cli.py``).
"""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[str], None]

_listeners: list[Listener] = []
_task_listeners: list[Listener] = []


def emit(moment: str) -> None:
    """Tell every listener that the sync reached ``moment``."""
    for listener in tuple(_listeners):
        listener(moment)


def commit_landed() -> None:
    """A destination's ``commit-landed`` moment: its commit is durable and it has not
    answered yet, so a failure from here on must still count as committed."""
    emit("commit-landed")


def listen(listener: Listener) -> None:
    """Hear every moment the driver reaches from now on."""
    _listeners.append(listener)


def forget(listener: Listener) -> None:
    """Stop ``listener`` hearing moments (one :func:`listen` registered)."""
    if listener in _listeners:
        _listeners.remove(listener)


def listen_in_tasks(listener: Listener) -> None:
    """Hear the moments of the tasks started from now on (``listener`` must pickle)."""
    _task_listeners.append(listener)


def task_listeners() -> tuple[Listener, ...]:
    """What a task being built carries to the executors (usually nothing)."""
    return tuple(_task_listeners)


def clear() -> None:
    """Forget every listener (tests)."""
    _listeners.clear()
    _task_listeners.clear()


__all__ = ["Listener", "clear", "commit_landed", "emit", "forget", "listen", "listen_in_tasks",
           "task_listeners"]
