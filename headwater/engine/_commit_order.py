"""An overwrite commits first: the checkpoints read beside it wait for it to commit.

An overwrite run's first checkpoint replaces the table's rows; every other
checkpoint of the run appends after it.  Where Spark's writer commits inside
its job, that first checkpoint runs alone before the others start, and the
cores idle between the two jobs.  Where the commit is a step of its own (the
tasks wrote files, the driver commits them), the other lanes need not wait to
*read*: their jobs run beside the overwrite's, and only their commits wait
here until it has committed.  If it fails, theirs never happen.
"""

from __future__ import annotations

import threading

__all__ = ["FirstCommit", "FirstCommitFailed"]


class FirstCommitFailed(Exception):
    """A checkpoint read beside the overwrite is not committed: the overwrite was not."""


class FirstCommit:
    """The commit of checkpoint ``index``, which every other commit of the run waits for."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._settled = threading.Event()
        self._committed = False
        self._lock = threading.Lock()

    def settle(self, *, committed: bool) -> None:
        """The overwrite committed, or will not; the first call counts, later ones do not."""
        with self._lock:
            if self._settled.is_set():
                return
            self._committed = committed
            self._settled.set()

    def wait_turn(self, index: int) -> None:
        """Return when checkpoint ``index`` may commit; raise if it never may."""
        if index == self.index:
            return
        self._settled.wait()
        if not self._committed:
            raise FirstCommitFailed(
                f"checkpoint {index} was not committed: the overwrite (checkpoint "
                f"{self.index}) did not commit")
