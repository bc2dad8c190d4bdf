"""Records per partition while a checkpoint is being read: the tasks report, the driver
records, the page and ``/metrics`` read.

Why a channel of Headwater's own.  The figures of a checkpoint reach the driver in a
Python accumulator (:mod:`._partition_stats`), which Spark merges only when a task
ends, so a run of one long checkpoint read 0 records until its commit.  What Spark
itself updates while a task runs does not fit: executors' heartbeats (every 10 s by
default) carry the JVM's task and SQL metrics, but the one that counts Python rows
(``MapInArrow``'s "number of output rows") counts what the Python task hands back to
the JVM, and for a destination whose tasks write the files themselves (most of the
built-in ones) that is one row per file written, not per record; its per-task values
live in private listener state (only the execution's sum is reachable, through py4j
internals); and the driver's UI, with the REST status API, is off in local sessions.
Nothing else leaves a running task before it ends.

So each task sends the driver a UDP datagram per partition it is reading, with the
records read so far, at most every ``interval`` seconds (default 2) and once when
the partition is read.  UDP because a task must never wait for the driver: ``sendto``
returns at once whether or not anyone listens, a datagram lost only leaves the figure
a few seconds older, and nothing is retried.  It works wherever Spark does: executors
already reach the driver at ``spark.driver.host`` (its RPC endpoint and block manager
are there), on local[*] over loopback and on a cluster over the network; the driver
listens on ``spark.driver.bindAddress`` (else ``spark.driver.host``) and a free port, or
``spark.headwater.progress.port`` for a firewall that opens only known ports (a run
listens for itself: with a fixed port, a second run of the same process at the same time,
the page syncing two connections, cannot bind it and goes without, with a warning).  Each
datagram carries a token made per run, sent to the tasks with the task itself, so no
other sender's numbers are taken.  A firewall that drops the datagrams costs only the live
figure: the checkpoint's own figures still arrive with its commit.  Off under Spark
Connect (no accumulator either: the figures arrive per checkpoint), or with
``spark.headwater.progress.enabled=false``.

The driver keeps the newest count per partition (a retried task's attempt replaces the
failed one's) and writes the run's figures to the metadata store's ``run_progress``
when they changed, at most every ``interval`` seconds; a checkpoint's leave it as it
commits or fails (in the same moment, so a reader never counts them twice), and the
rest when the run ends.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.metadata_store import LiveFigure, MetadataStore

log = logging.getLogger(__name__)

#: Spark settings (``--conf``, the connection file's ``spark.conf``).
ENABLED_CONF = "spark.headwater.progress.enabled"
PORT_CONF = "spark.headwater.progress.port"
INTERVAL_CONF = "spark.headwater.progress.intervalSeconds"
DEFAULT_INTERVAL_S = 2.0

#: Bigger than any datagram a task sends (its partition id is cut to fit).
_MAX_DATAGRAM = 4096

_Key = tuple[str, int, str]  # stream, checkpoint index, partition id


@dataclass(frozen=True)
class ProgressAddress:
    """Where a checkpoint's tasks report (pickled with the task: plain values only)."""

    host: str
    port: int
    token: str
    stream: str
    checkpoint_index: int
    interval_s: float = DEFAULT_INTERVAL_S

    def reporting(self, partition_id: str, attempt: int) -> PartitionProgress:
        return PartitionProgress(self, partition_id, attempt)


class PartitionProgress:
    """One partition's count while its task reads it: the worker's reporter sends what
    ``count`` says (set by the reader: it costs the read nothing per record) when it
    changed, every ``interval_s``, and once more when the partition is read."""

    def __init__(self, address: ProgressAddress, partition_id: str, attempt: int) -> None:
        self.address = address
        self.count: Callable[[], int] = lambda: 0
        self._message = {"t": address.token, "s": address.stream,
                         "c": address.checkpoint_index, "p": partition_id[:512], "a": attempt}
        self._sent = -1
        self._due = 0.0  # monotonic time of the next report

    def __enter__(self) -> PartitionProgress:
        _REPORTER.add(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _REPORTER.remove(self, last=exc_info[0] is None)

    def report(self, sock: socket.socket, target: Any, *, now: bool = False) -> None:
        """Send the count if it changed and its interval has passed (``now``: whatever the
        interval), to ``target`` (the reporter's call)."""
        moment = time.monotonic()
        if moment < self._due and not now:
            return
        self._due = moment + self.address.interval_s
        records = self.count()
        if records == self._sent:
            return
        payload = json.dumps({**self._message, "n": records}).encode()
        with contextlib.suppress(OSError):  # never the task's problem
            sock.sendto(payload, target)
            self._sent = records


@functools.cache
def _target(host: str, port: int) -> Any:
    """The driver's address as ``sendto`` takes it (``None``: it does not resolve)."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][4]
    except OSError:
        return None


class _Reporter:
    """One thread and one UDP socket per Python worker process, however many partitions
    its tasks read one after another: a partition only joins and leaves a set (a task of
    many small partitions pays no thread or socket each)."""

    #: How often the thread looks at the partitions being read (each has its interval).
    TICK_S = 0.1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: set[PartitionProgress] = set()
        self._sockets: dict[int, socket.socket] = {}  # by address family
        self._thread: threading.Thread | None = None

    def add(self, progress: PartitionProgress) -> None:
        with self._lock:
            self._active.add(progress)
            # Not alive: gone idle, or this process was forked from one that had it.
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="hw-progress",
                                                daemon=True)
                self._thread.start()

    def remove(self, progress: PartitionProgress, *, last: bool) -> None:
        with self._lock:
            self._active.discard(progress)
        if last:  # the partition's last count: it stays until its checkpoint ends
            self._send(progress, force=True)

    def _run(self) -> None:
        while True:
            time.sleep(self.TICK_S)
            with self._lock:
                active = list(self._active)
                if not active:  # nothing read now: the next partition starts it again
                    self._thread = None
                    return
            for progress in active:
                self._send(progress)

    def _send(self, progress: PartitionProgress, *, force: bool = False) -> None:
        target = _target(progress.address.host, progress.address.port)
        if target is None:
            return  # the driver's name does not resolve here: no live figure, no error
        family = socket.AF_INET6 if len(target) == 4 else socket.AF_INET
        with self._lock:
            sock = self._sockets.get(family)
            if sock is None:
                try:
                    sock = self._sockets[family] = socket.socket(family, socket.SOCK_DGRAM)
                except OSError:
                    return
        progress.report(sock, target, now=force)


_REPORTER = _Reporter()


class LiveProgress:
    """The driver's side for one run: receives the tasks' datagrams, keeps the newest
    count per partition, and keeps the run's ``run_progress`` rows up to date."""

    def __init__(self, store: MetadataStore, run_id: str, *, host: str, bind: str,
                 port: int = 0, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.store = store
        self.run_id = run_id
        self.interval_s = interval_s
        self.token = secrets.token_hex(16)
        family = socket.getaddrinfo(bind, port, type=socket.SOCK_DGRAM)[0][0]
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.bind((bind, port))
        self._socket.settimeout(0.2)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one write at a time, the newest figures last
        self._figures: dict[_Key, tuple[int, int, datetime]] = {}  # attempt, records, when
        self._ended: set[tuple[str, int]] = set()
        self._changed = False
        self._closed = threading.Event()
        self._receiver = threading.Thread(target=self._receive, name="hw-progress-in",
                                          daemon=True)
        self._writer = threading.Thread(target=self._write_every_interval,
                                        name="hw-progress-store", daemon=True)

    @classmethod
    def for_run(cls, spark: SparkSession, store: MetadataStore,
                run_id: str) -> LiveProgress | None:
        """The run's listener, started; ``None`` under Spark Connect, when turned off, or
        when the driver's address cannot be listened on (said once, as a warning)."""
        try:
            conf = spark.sparkContext.getConf()
        except Exception:  # Spark Connect: no SparkContext; the figures come per checkpoint
            return None
        if conf.get(ENABLED_CONF, "true").strip().lower() == "false":
            return None
        host = conf.get("spark.driver.host") or socket.gethostname()
        bind = conf.get("spark.driver.bindAddress") or host
        try:
            live = cls(store, run_id, host=host, bind=bind,
                       port=int(conf.get(PORT_CONF, "0") or 0),
                       interval_s=float(spark.conf.get(INTERVAL_CONF, None)
                                        or DEFAULT_INTERVAL_S))
        except Exception as exc:  # a live figure is never worth a run
            log.warning("no live figures within checkpoints: cannot listen for the tasks' "
                        "progress on %s (%s); figures move per committed checkpoint", bind, exc)
            return None
        live.start()
        return live

    def start(self) -> None:
        self._write([])  # what a killed attempt of the run left is not this one's
        self._receiver.start()
        self._writer.start()

    def address(self, stream: str, checkpoint_index: int) -> ProgressAddress:
        """Where the tasks of one checkpoint report."""
        return ProgressAddress(self.host, self.port, self.token, stream, checkpoint_index,
                               self.interval_s)

    def checkpoint_ended(self, stream: str, checkpoint_index: int) -> None:
        """The checkpoint committed or failed: its live figures go, now (its committed
        ones are recorded), and a datagram of it arriving later is not taken."""
        with self._lock:
            self._ended.add((stream, checkpoint_index))
            gone = [k for k in self._figures if k[:2] == (stream, checkpoint_index)]
            for key in gone:
                del self._figures[key]
            if not gone:
                return
            self._changed = True
        self._write_if_changed()

    def figures(self) -> list[LiveFigure]:
        """The newest count of every partition being read (what the store gets)."""
        from headwater.metadata_store import LiveFigure

        with self._lock:
            return [LiveFigure(stream, index, partition, records, at)
                    for (stream, index, partition), (_, records, at)
                    in sorted(self._figures.items())]

    def close(self) -> None:
        """Stop listening and drop the run's live figures (the run has ended here)."""
        self._closed.set()
        for thread in (self._receiver, self._writer):
            if thread.is_alive():
                thread.join()
        self._socket.close()
        self._write([])

    def __enter__(self) -> LiveProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ inside

    def _receive(self) -> None:
        while not self._closed.is_set():
            try:
                payload = self._socket.recv(_MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return
            self._take(payload)

    def _take(self, payload: bytes) -> None:
        try:
            message = json.loads(payload)
            if message.get("t") != self.token:
                return
            key = (str(message["s"]), int(message["c"]), str(message["p"]))
            attempt, records = int(message["a"]), int(message["n"])
        except (ValueError, TypeError, KeyError, AttributeError):
            return  # not one of ours
        with self._lock:
            if key[:2] in self._ended:
                return
            known = self._figures.get(key)
            if known is not None and (known[0], known[1]) >= (attempt, records):
                return  # an older attempt's, or a datagram overtaken by a newer one
            self._figures[key] = (attempt, records, datetime.now(UTC))
            self._changed = True

    def _write_every_interval(self) -> None:
        while not self._closed.wait(self.interval_s):
            self._write_if_changed()

    def _write_if_changed(self) -> None:
        with self._write_lock:
            with self._lock:
                if not self._changed:
                    return
                self._changed = False
            self._write(self.figures())

    def _write(self, figures: list[LiveFigure]) -> None:
        """Replace the run's rows (callers hold ``_write_lock`` or run alone)."""
        try:
            self.store.set_live_figures(self.run_id, figures)
        except Exception as exc:  # a live figure is never worth a run
            log.debug("live figures of run %s not written: %s", self.run_id, exc)


@contextlib.contextmanager
def live_progress(spark: SparkSession, store: MetadataStore,
                  run_id: str) -> Iterator[LiveProgress | None]:
    """:meth:`LiveProgress.for_run`, closed when the block ends."""
    live = LiveProgress.for_run(spark, store, run_id)
    try:
        yield live
    finally:
        if live is not None:
            live.close()


__all__ = ["LiveProgress", "PartitionProgress", "ProgressAddress", "live_progress"]
