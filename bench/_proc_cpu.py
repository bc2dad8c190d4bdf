"""CPU-seconds of a command's processes, and of its JVM's threads by kind, read from /proc.

Wall time on a shared 2-core machine moves with everyone else's load; the CPU a
process spends barely does.  So a benchmark can say where a command's CPU went
(the connector, Spark's JVM, the Python workers, the CLI) and, inside the JVM,
which of its threads spent it (garbage collection, JIT compilers, the tasks,
Spark's own event loops), figures that stay comparable from run to run.

A thread polls the process tree below the command every ``interval`` seconds and
keeps the last figures seen: a process's ``utime + stime`` counts its exited
threads too, so the per-process totals miss at most the last interval; a thread
that ends between two polls is counted up to the last poll that saw it (its rest
shows as ``exited threads``, the process total minus the threads seen).  Linux only.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

#: Thread kinds of a HotSpot JVM running Spark, by the first characters of the
#: thread's name (``/proc/<pid>/task/<tid>/comm`` keeps 15 characters).
THREAD_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GC", ("GC Thread", "G1 ", "VM Thread", "Reference Handl", "Finalizer")),
    ("JIT compilers", ("C1 CompilerThre", "C2 CompilerThre", "Sweeper", "CodeCacheSweep")),
    ("main (start-up, class loading)", ("java",)),
    ("tasks", ("Executor task l",)),
    ("py4j (driver calls from Python)", ("Thread-",)),
    ("Spark's event loops, RPC, listeners", ("dispatcher-", "spark-listener", "rpc-",
                                             "shuffle-", "driver-", "netty-", "block-manager",
                                             "SparkListener", "task-result", "executor-")),
)


def thread_kind(name: str) -> str:
    for kind, prefixes in THREAD_KINDS:
        if name.startswith(prefixes):
            return kind
    return "other JVM threads"


def _cpu(stat_path: Path) -> float | None:
    try:
        text = stat_path.read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def _running(pid: int) -> bool:
    """Whether ``pid`` is still running (not a zombie waiting to be reaped)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            text = Path(entry.path, "stat").read_text()
            parent = int(text[text.rindex(")") + 2:].split()[1])
            tree[parent].append(int(entry.name))
    return tree


def process_kind(pid: int, root: int, root_kind: str = "CLI (headwater sync)") -> str:
    """What a process is, by its command line: the CLI, the JVM, a connector, a worker."""
    if pid == root:
        return root_kind
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    line = b" ".join(argv)
    if argv and argv[0].endswith(b"java"):
        # spark-submit's launcher JVM only writes the real JVM's command line.
        return "Spark's launcher JVM" if b"launcher.Main" in line else "Spark's JVM"
    if b"source-" in line or b"/connectors/" in line:
        return "connector"
    if b"_python_daemon" in line or b"pyspark.daemon" in line or b"pyspark.worker" in line:
        return "Python workers"
    return "other"


class TreeCpu:
    """Poll the processes below ``root`` until :meth:`stop`; then read :attr:`by_kind`
    (CPU-s per process kind) and :attr:`jvm_threads` (CPU-s per JVM thread kind)."""

    def __init__(self, root: int, interval: float = 0.1,
                 root_kind: str = "CLI (headwater sync)") -> None:
        self.root = root
        self.root_kind = root_kind
        self.interval = interval
        self._process: dict[int, tuple[str, float]] = {}
        self._threads: dict[tuple[int, int], tuple[str, float]] = {}
        self._done = threading.Event()
        self._poller = threading.Thread(target=self._run, daemon=True)
        self._poller.start()

    def _poll(self) -> bool:
        """One look at the tree, and at every process seen before (the JVM outlives the
        CLI for its shutdown, reparented away from the tree); True if any is still alive."""
        tree = _children()
        todo, seen, alive = [self.root, *self._process], set(), False
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            todo += tree.get(pid, [])
            # Classified at every poll: ``spark-class`` (bash) execs the JVM in its own pid.
            kind = process_kind(pid, self.root, self.root_kind)
            if kind == "other" and pid in self._process:  # an exited one has no command line
                kind = self._process[pid][0]
            cpu = _cpu(Path(f"/proc/{pid}/stat"))
            if cpu is None:
                continue
            alive = alive or _running(pid)
            self._process[pid] = (kind, cpu)
            if kind == "Spark's JVM":
                self._poll_threads(pid)
        return alive

    def _poll_threads(self, pid: int) -> None:
        with contextlib.suppress(OSError):
            for task in os.scandir(f"/proc/{pid}/task"):
                cpu = _cpu(Path(task.path, "stat"))
                if cpu is None:
                    continue
                key = (pid, int(task.name))
                if key in self._threads:
                    self._threads[key] = (self._threads[key][0], cpu)
                    continue
                with contextlib.suppress(OSError):
                    name = Path(task.path, "comm").read_text().strip()
                    self._threads[key] = (name, cpu)

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            self._poll()

    def stop(self, linger: float = 20.0) -> None:
        """Stop polling once the command's processes have all exited (at most ``linger``
        seconds after the command itself did)."""
        self._done.set()
        self._poller.join()
        deadline = time.monotonic() + linger
        while self._poll() and time.monotonic() < deadline:
            time.sleep(self.interval)

    @property
    def by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for kind, cpu in self._process.values():
            totals[kind] += cpu
        return dict(totals)

    @property
    def jvm_threads(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for name, cpu in self._threads.values():
            totals[thread_kind(name)] += cpu
        if self._threads:
            jvm = sum(cpu for kind, cpu in self._process.values() if kind == "Spark's JVM")
            totals["exited threads"] = max(0.0, jvm - sum(totals.values()))
        return dict(totals)

    @property
    def jvm_thread_names(self) -> dict[str, float]:
        """CPU-s per thread name (numbers dropped), for a closer look."""
        totals: dict[str, float] = defaultdict(float)
        for name, cpu in self._threads.values():
            totals[name.rstrip("0123456789#- ")] += cpu
        return dict(totals)
