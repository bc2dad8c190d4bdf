"""Serve a Headwater source as an Airbyte source connector (no Spark).

``headwater airbyte SOURCE spec|check|discover|read`` answers with Airbyte
protocol messages, one per line on stdout, so Airbyte, PyAirbyte or any other
protocol client can run a Headwater source.  ``read`` runs each stream's
partitions one after the other in this process (the light path: no JVM), and
after each partition prints the stream's STATE as the stream's cursor sees it
then, with the partition's record count in ``sourceStats``: a client that
stops after any STATE resumes without losing or repeating a partition.

Nothing but protocol messages goes to stdout: Headwater's own warnings become
LOG messages, a failed stream an error TRACE (then ``INCOMPLETE``), and the
process exits non-zero after the other streams finished.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

import pyarrow as pa

from headwater.config import mask, register_secrets, secret_values, validate_config
from headwater.connectors import get_source_class
from headwater.errors import HeadwaterError
from headwater.interop._state_migration import parse_airbyte_state
from headwater.protocol import (
    AirbyteConnectionStatus,
    AirbyteErrorTraceMessage,
    AirbyteLogMessage,
    AirbyteMessage,
    AirbyteStreamStatus,
    AirbyteStreamStatusTraceMessage,
    AirbyteTraceMessage,
    CheckStatus,
    ConfiguredAirbyteCatalog,
    ConfiguredAirbyteStream,
    ConnectorSpecification,
    DestinationSyncMode,
    FailureType,
    LogLevel,
    MessageType,
    StreamDescriptor,
    SyncMode,
    TraceType,
    stream_state_message,
)
from headwater.sdk import PartitionState, Source

__all__ = ["AirbyteServer"]

_LOG_LEVELS = {logging.CRITICAL: LogLevel.FATAL, logging.ERROR: LogLevel.ERROR,
               logging.WARNING: LogLevel.WARN, logging.INFO: LogLevel.INFO}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return str(value)


class _LogToProtocol(logging.Handler):
    """Headwater's log records as LOG messages (stdout must carry protocol messages only)."""

    def __init__(self, server: AirbyteServer) -> None:
        super().__init__(logging.INFO)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        level = _LOG_LEVELS.get(record.levelno, LogLevel.DEBUG)
        self.server.emit(AirbyteMessage(type=MessageType.LOG, log=AirbyteLogMessage(
            level=level, message=mask(record.getMessage()))))


class AirbyteServer:
    """Answers the four protocol commands for one built-in source type."""

    def __init__(self, source_type: str, out: IO[str]) -> None:
        self.source_type = source_type
        self.out = out

    @property
    def source_cls(self) -> type[Source]:
        """Looked up on use, so an unknown type becomes an error TRACE like any other."""
        return get_source_class(self.source_type)

    def emit(self, message: AirbyteMessage) -> None:
        self.out.write(message.to_json_line() + "\n")

    def _emit_record(self, stream: str, namespace: str | None, data: Mapping[str, Any],
                     emitted_at: int) -> None:
        body: dict[str, Any] = {"stream": stream, "data": data, "emitted_at": emitted_at}
        if namespace:
            body["namespace"] = namespace
        self.out.write(json.dumps({"type": "RECORD", "record": body}, default=_json_value,
                                  separators=(",", ":")) + "\n")

    @contextmanager
    def capture_logs(self) -> Iterator[None]:
        """Send Headwater's own log records (INFO and up) to stdout as LOG messages.

        The root logger's handlers and level are restored on exit, so nothing
        writes to this server's stream after the command finished.
        """
        root = logging.getLogger()
        saved = (list(root.handlers), root.level)
        root.handlers[:] = [_LogToProtocol(self)]
        root.setLevel(logging.INFO)
        for noisy in ("py4j", "pyspark"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        try:
            yield
        finally:
            root.handlers[:] = saved[0]
            root.setLevel(saved[1])

    # -- the commands ---------------------------------------------------------------

    def spec(self) -> None:
        self.emit(AirbyteMessage(type=MessageType.SPEC, spec=ConnectorSpecification(
            connectionSpecification=self.source_cls.spec(),
            supported_destination_sync_modes=[DestinationSyncMode.OVERWRITE,
                                              DestinationSyncMode.APPEND,
                                              DestinationSyncMode.APPEND_DEDUP],
            protocol_version="0.2.0")))

    def build(self, config: Mapping[str, Any]) -> Source:
        spec = self.source_cls.spec()
        register_secrets(secret_values(spec, config))
        validated = validate_config(spec, config, where="config")
        register_secrets(secret_values(spec, validated))
        return self.source_cls(validated)

    def check(self, config: Mapping[str, Any]) -> None:
        """CONNECTION_STATUS: FAILED with the reason for a bad config or refused access."""
        try:
            self.build(config).check()
            status = AirbyteConnectionStatus(status=CheckStatus.SUCCEEDED)
        except HeadwaterError as exc:
            status = AirbyteConnectionStatus(status=CheckStatus.FAILED, message=mask(str(exc)))
        self.emit(AirbyteMessage(type=MessageType.CONNECTION_STATUS, connectionStatus=status))

    def discover(self, config: Mapping[str, Any]) -> None:
        from headwater.engine.connection import discover_catalog

        self.emit(AirbyteMessage(type=MessageType.CATALOG,
                                 catalog=discover_catalog(self.build(config))))

    def read(self, config: Mapping[str, Any], catalog: Mapping[str, Any] | None,
             state: Any) -> bool:
        """Read the configured streams (no catalog: all, full refresh); True if all passed."""
        from headwater.engine.connection import discover_catalog

        source = self.build(config)
        if catalog is None:
            configured = ConfiguredAirbyteCatalog(streams=[
                ConfiguredAirbyteStream(stream=s, sync_mode=SyncMode.FULL_REFRESH,
                                        destination_sync_mode=DestinationSyncMode.OVERWRITE)
                for s in discover_catalog(source).streams])
        else:
            configured = ConfiguredAirbyteCatalog.model_validate(catalog)
        states = parse_airbyte_state(state).streams if state else {}
        ok = True
        for item in configured.streams:
            ok = self._read_stream(source, item, states.get(item.stream.name)) and ok
        return ok

    def _status(self, descriptor: StreamDescriptor, status: AirbyteStreamStatus) -> None:
        self.emit(AirbyteMessage(type=MessageType.TRACE, trace=AirbyteTraceMessage(
            type=TraceType.STREAM_STATUS, emitted_at=float(_now_ms()),
            stream_status=AirbyteStreamStatusTraceMessage(stream_descriptor=descriptor,
                                                          status=status))))

    def _read_stream(self, source: Source, configured: ConfiguredAirbyteStream,
                     state: Mapping[str, Any] | None) -> bool:
        name = configured.stream.name
        namespace = configured.stream.namespace
        descriptor = StreamDescriptor(name=name, namespace=namespace)
        incremental = configured.sync_mode == SyncMode.INCREMENTAL
        self._status(descriptor, AirbyteStreamStatus.STARTED)
        try:
            stream = source.stream(name)
            start = dict(state) if (incremental and state) else None
            cursor = stream.cursor(start, incremental)
            partitions = stream.partitions(start)
            self._status(descriptor, AirbyteStreamStatus.RUNNING)
            for number, partition in enumerate(partitions, start=1):
                emitted_at = _now_ms()
                count = 0
                for item in stream.read(partition):
                    if isinstance(item, PartitionState):
                        cursor.observe_state(partition, item.state)
                        continue
                    rows = item.to_pylist() if isinstance(item, pa.RecordBatch) else [item]
                    for row in rows:
                        self._emit_record(name, namespace, row, emitted_at)
                    count += len(rows)
                cursor.close_partition(partition)
                # A full refresh is complete only after its last partition.
                current = cursor.state() if incremental or number == len(partitions) else None
                if current is not None:
                    self.emit(AirbyteMessage(type=MessageType.STATE, state=stream_state_message(
                        name, current, namespace=namespace, record_count=count)))
        except Exception as exc:
            text = mask(str(exc) if isinstance(exc, HeadwaterError)
                        else f"{type(exc).__name__}: {exc}")
            self.emit(AirbyteMessage(type=MessageType.TRACE, trace=AirbyteTraceMessage(
                type=TraceType.ERROR, emitted_at=float(_now_ms()),
                error=AirbyteErrorTraceMessage(
                    message=f"stream {name!r} failed: {text}", stream_descriptor=descriptor,
                    failure_type=FailureType.config_error if getattr(exc, "exit_code", 1) == 2
                    else FailureType.system_error))))
            self._status(descriptor, AirbyteStreamStatus.INCOMPLETE)
            return False
        self._status(descriptor, AirbyteStreamStatus.COMPLETE)
        return True
