"""Run one Airbyte connector command and turn its stdout into messages.

The connector is a separate process speaking the protocol: one JSON message
per line on stdout.  RECORD lines are the bulk of the traffic, so consecutive
ones are handed over raw, as a :class:`RecordBlock` (at most
:data:`BLOCK_LINES` lines or :data:`BLOCK_BYTES` characters), for the reader to
decode in bulk; :meth:`RecordBlock.records` decodes them one by one instead
(``json.loads`` only, a number keeping its literal's text:
:mod:`headwater.json_numbers`).  A block is always handed over before the message that
follows it, so a STATE never overtakes the records it covers.  Every other line
is validated into :class:`~headwater.protocol.AirbyteMessage`.
LOG messages go to Headwater's logger at their level; an error TRACE becomes a
:class:`~headwater.errors.ConnectorError` with the connector's own message; a
process that exits non-zero (or dies mid-stream) fails with the tail of its
stderr.  Either way the caller's partition fails and no state moves.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from headwater import json_numbers
from headwater.config import mask
from headwater.errors import ConnectorError
from headwater.protocol import AirbyteMessage, LogLevel, MessageType, TraceType

log = logging.getLogger("headwater.connectors.airbyte")

_LEVELS = {
    LogLevel.FATAL: logging.CRITICAL, LogLevel.ERROR: logging.ERROR, LogLevel.WARN: logging.WARNING,
    LogLevel.INFO: logging.INFO, LogLevel.DEBUG: logging.DEBUG, LogLevel.TRACE: logging.DEBUG,
}
#: How the Airbyte CDK starts a RECORD line (compact JSON): such lines go into blocks.
RECORD_PREFIX = '{"type":"RECORD"'
_STDERR_TAIL = 20
#: A :class:`RecordBlock` is handed over at this many lines, or this many characters.
BLOCK_LINES = 10_000
BLOCK_BYTES = 8 << 20
#: Blocks read ahead of the consumer (at most this many times BLOCK_BYTES in memory).
QUEUE_BLOCKS = 8
#: The buffer of the connector's stdout in this process.
PIPE_BUFFER = 1 << 20


@dataclass(frozen=True)
class Record:
    """One RECORD message, kept as plain values (the fast path)."""

    stream: str
    data: dict[str, Any]


@dataclass(frozen=True)
class RecordBlock:
    """Consecutive RECORD lines of a connector, undecoded, in the order it wrote them."""

    lines: list[str]
    label: str
    stream: str | None = None

    def records(self) -> Iterator[Record]:
        """The block line by line: the exact path for lines bulk decoding refuses.

        Raises :class:`ConnectorError` on a line that is not a valid message.
        """
        for line in self.lines:
            record = _record_of(line, self.label, self.stream)
            if record is not None:
                yield record


def _record_of(line: str, label: str, stream: str | None) -> Record | None:
    """One line starting like a RECORD; ``None`` when it holds no record after all."""
    try:
        body = json_numbers.loads(line)["record"]  # a decimal keeps its literal
        return Record(body["stream"], body["data"])
    except (ValueError, KeyError, TypeError):
        pass  # the validating parser says what is wrong
    try:
        message = AirbyteMessage.parse_line(line)
    except Exception as exc:
        raise ConnectorError(f"connector {label} printed an invalid message: {exc}",
                             stream=stream) from exc
    return None if message.record is None else Record(message.record.stream,
                                                      message.record.data)


@dataclass
class MessageCounts:
    """What a connector said besides records, for logs and run stats."""

    logs: int = 0
    warnings: int = 0
    traces: int = 0


def connector_environment() -> dict[str, str]:
    """This process's environment without what would leak Headwater's (or Spark's)
    Python path into the connector's own interpreter."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}


def run_connector(argv: list[str], label: str, *, stream: str | None = None,
                  counts: MessageCounts | None = None,
                  ) -> Iterator[RecordBlock | Record | AirbyteMessage]:
    """Start ``argv`` and yield its record blocks, records and messages until it exits.

    Raises :class:`ConnectorError` on an error TRACE, an unparsable line, or a
    non-zero exit; the process is killed if the consumer stops early.  Lines of
    a block are only checked when the consumer decodes them.
    """
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, text=True, bufsize=PIPE_BUFFER,
                                   env=connector_environment())
    except OSError as exc:
        raise ConnectorError(f"cannot start connector {label}: {exc}", stream=stream) from exc
    assert process.stdout is not None and process.stderr is not None
    stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
    drain = threading.Thread(target=_drain, args=(process.stderr, stderr_tail), daemon=True)
    drain.start()

    def exit_code() -> int:
        process.wait()
        drain.join(timeout=10)
        return process.returncode

    def kill() -> None:
        if process.poll() is None:
            process.kill()
            process.wait()

    yield from _protocol(process.stdout, exit_code, kill, stderr_tail, label, stream, counts)


def _protocol(stdout: Iterable[str], exit_code: Callable[[], int], kill: Callable[[], None],
              stderr_tail: Iterable[str], label: str, stream: str | None,
              counts: MessageCounts | None) -> Iterator[RecordBlock | Record | AirbyteMessage]:
    """A connector's stdout as blocks, records and messages, then its exit code checked."""
    counts = counts if counts is not None else MessageCounts()
    lines = _LineReader(stdout, label)
    finished = False
    try:
        for item in lines:
            if isinstance(item, list):
                yield RecordBlock(item, label, stream)
                continue
            try:
                message = AirbyteMessage.parse_line(item)
            except Exception as exc:
                raise ConnectorError(f"connector {label} printed an invalid message: {exc}",
                                     stream=stream) from exc
            if message.record is not None:  # a record spelled differently from the fast path
                yield Record(message.record.stream, message.record.data)
                continue
            _observe(message, label, stream, counts)
            yield message
        if lines.failure is not None:  # the process is killed below, never waited for
            raise ConnectorError(f"reading connector {label}'s output failed: "
                                 f"{lines.failure}", stream=stream) from lines.failure
        code = exit_code()
        if code != 0:
            tail = " | ".join(line.rstrip() for line in stderr_tail if line.strip())[-2000:]
            raise ConnectorError(
                f"connector {label} exited with code {code} before finishing"
                + (f": {mask(tail)}" if tail else ""), stream=stream)
        finished = True
    finally:
        lines.stop()
        if not finished:
            kill()


class _LineReader:
    """The connector's stdout, read by a thread of its own into a bounded queue.

    Read by the consumer itself, the pipe stood still while the consumer decoded
    and wrote a block (the pipe holds 64 KiB, a block is megabytes), so the
    connector waited for Headwater, then Headwater for the connector.  The
    thread keeps reading while the consumer works, up to :data:`QUEUE_BLOCKS`
    items ahead.  Items keep the connector's order: a block of RECORD lines
    (``list[str]``) is queued before the message line that follows it.
    """

    _END = object()

    def __init__(self, pipe: Iterable[str], label: str) -> None:
        self.label = label
        self.failure: BaseException | None = None
        self._queue: queue.Queue[object] = queue.Queue(maxsize=QUEUE_BLOCKS)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pipe,), daemon=True,
                                        name="hw-airbyte-stdout")
        self._thread.start()

    def __iter__(self) -> Iterator[list[str] | str]:
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            yield item  # type: ignore[misc]

    def stop(self) -> None:
        """Let the thread end (the consumer stopped early, or the process ended)."""
        self._stopped.set()

    def _put(self, item: object) -> bool:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, pipe: Iterable[str]) -> None:
        block: list[str] = []
        size = 0
        try:
            for line in pipe:
                if not line.endswith("\n"):
                    # The last line of a process that died mid-write: its exit code speaks.
                    log.debug("connector %s left a cut line: %s", self.label, line[:200])
                    continue
                if line.startswith(RECORD_PREFIX):
                    block.append(line)
                    size += len(line)
                    if len(block) >= BLOCK_LINES or size >= BLOCK_BYTES:
                        if not self._put(block):
                            return
                        block, size = [], 0
                    continue
                if not line.strip():
                    continue
                if not line.lstrip().startswith("{"):
                    log.debug("connector %s printed a non-protocol line: %s", self.label,
                              line.rstrip())
                    continue
                if block:  # the records before this message go first
                    if not self._put(block):
                        return
                    block, size = [], 0
                if not self._put(line):
                    return
            if block:
                self._put(block)
        except Exception as exc:  # undecodable output: the consumer raises it
            self.failure = exc
        finally:
            self._put(self._END)


def _observe(message: AirbyteMessage, label: str, stream: str | None,
             counts: MessageCounts) -> None:
    if message.type == MessageType.LOG and message.log is not None:
        counts.logs += 1
        level = _LEVELS.get(message.log.level, logging.INFO)
        if level >= logging.WARNING:
            counts.warnings += 1
        log.log(level, "[%s] %s", label, mask(message.log.message))
    elif message.type == MessageType.TRACE and message.trace is not None:
        counts.traces += 1
        trace = message.trace
        if trace.type == TraceType.ERROR and trace.error is not None:
            failing = trace.error.stream_descriptor.name if trace.error.stream_descriptor \
                else stream
            raise ConnectorError(
                f"connector {label} reported an error"
                + (f" on stream {failing!r}" if failing else "")
                + f": {mask(trace.error.message)}"
                + (f" ({trace.error.failure_type.value})" if trace.error.failure_type else ""),
                stream=stream)


def _drain(pipe: IO[str], tail: collections.deque[str]) -> None:
    """Keep the connector's stderr flowing (a full pipe would block it) and its last lines."""
    for line in pipe:
        tail.append(line)
        log.debug("connector stderr: %s", mask(line.rstrip()))
