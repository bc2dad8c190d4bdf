"""Peak resident memory of a process tree, and of its Spark Python workers, read from /proc.

A benchmark's memory question is usually "does it stream?": the peak of the whole
tree (driver, JVM, Python workers) answers it for the run, and the peak of the
Python workers alone (the executors' side, where a source's ``read`` runs)
answers it for the source.  A thread samples ``/proc`` every ``interval`` seconds
(RSS from ``statm``), so a spike shorter than that may be missed.  Linux only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from _proc_cpu import _children, process_kind

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class PeakMemory:
    """Peak summed RSS of this process and its descendants (:attr:`peak`), and of the
    Python workers among them: the largest one (:attr:`worker_peak`) and all of them at
    once (:attr:`workers_peak`), sampled in a thread while the ``with`` block runs."""

    def __init__(self, interval: float = 0.2) -> None:
        self.peak = self.worker_peak = self.workers_peak = 0
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        root = os.getpid()
        while not self._stop.is_set():
            tree, todo, total, workers = _children(), [root], 0, []
            while todo:
                pid = todo.pop()
                todo += tree.get(pid, [])
                rss = _rss(pid)
                total += rss
                if pid != root and process_kind(pid, root) == "Python workers":
                    workers.append(rss)
            self.peak = max(self.peak, total)
            self.worker_peak = max([self.worker_peak, *workers])
            self.workers_peak = max(self.workers_peak, sum(workers))
            self._stop.wait(self.interval)
