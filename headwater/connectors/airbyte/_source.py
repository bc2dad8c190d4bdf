"""The ``airbyte`` source type: any Airbyte source connector, run as Headwater streams.

Example connection snippet::

    source:
      type: airbyte
      config:
        package: airbyte-source-faker      # installed once into its own venv
        version: 7.2.1                     # pinned: a connection must read the same code
        config: {count: 1000, seed: 1}     # the connector's own config, checked by its spec

``command: [path/to/connector]`` runs a local executable instead of a package.

Each stream is one partition, so each stream is one Spark task and streams run
side by side.  Its ``read`` starts ``<connector> read`` with a catalog holding
that stream alone and the stream's state, yields the RECORD data as Arrow
record batches decoded in bulk (see :mod:`._records`; a block that cannot be
decoded exactly in bulk is yielded as dicts, typed value by value by the
engine), and each of the connector's STATEs of the stream as a
:class:`~headwater.sdk.PartitionState` after the records before it; the engine
commits the last one with the records.  Incremental streams store the
connector's own state unchanged, so Airbyte state imports and exports as it is.
A connector that keeps GLOBAL state (a shared part, say a CDC position, plus
per-stream parts) has both parts stored with each stream
(:func:`~headwater.protocol.global_stream_state`) and gets a GLOBAL state back
on the stream's next read.

Secrets: the connector's spec marks them (``airbyte_secret``); they are
registered for masking as soon as the spec is known, and the config recorded
with a run is redacted with that spec.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from headwater.config import redact, register_secrets, secret_values, validate_config
from headwater.connectors.airbyte import _head_start as head_start
from headwater.connectors.airbyte import _kept as kept
from headwater.connectors.airbyte._env import ConnectorEnv, envs_root
from headwater.connectors.airbyte._process import (
    MessageCounts,
    Record,
    RecordBlock,
    run_connector,
)
from headwater.connectors.airbyte._records import RecordDecoder
from headwater.errors import AuthenticationError, ConfigError, ConnectorError
from headwater.protocol import (
    AirbyteCatalog,
    AirbyteMessage,
    AirbyteStateMessage,
    AirbyteStateType,
    AirbyteStream,
    CheckStatus,
    ConfiguredAirbyteCatalog,
    ConfiguredAirbyteStream,
    ConnectorSpecification,
    DestinationSyncMode,
    MessageType,
    SyncMode,
    TraceType,
    global_state_message,
    global_stream_state,
    split_global_stream_state,
    stream_state_message,
)
from headwater.sdk import (
    ConnectorStateCursor,
    Cursor,
    FinalStateCursor,
    Partition,
    PartitionState,
    PlanContext,
    RecordOrBatch,
    Source,
    Stream,
)
from headwater.table_schema import arrow_schema_for, json_kinds_differ

__all__ = ["AirbyteSource", "AirbyteSourceStream"]

_log = logging.getLogger("headwater.connectors.airbyte")


class AirbyteSourceStream(Stream):
    """One stream of an Airbyte connector; pickled to the executor that reads it."""

    keeps_own_state = True

    def __init__(self, env: ConnectorEnv, connector_config: Mapping[str, Any],
                 stream: AirbyteStream,
                 head_starts: dict[str, head_start.HeadStart] | None = None) -> None:
        # The Stream contract declares these as class attributes; an Airbyte
        # stream only learns them from ``discover``, so they are set per instance.
        vars(self).update(
            name=stream.name,
            namespace=stream.namespace,
            primary_key=tuple(path[0] for path in stream.source_defined_primary_key or []
                              if len(path) == 1),
            cursor_field=(stream.default_cursor_field[0]
                          if stream.default_cursor_field and len(stream.default_cursor_field) == 1
                          else None),
        )
        self._env = env
        self._config = dict(connector_config)
        self._stream = stream
        #: Reads the driver started before Spark (shared with the source; see _head_start).
        self._head_starts = head_starts if head_starts is not None else {}

    @property
    def supported_sync_modes(self) -> list[str]:
        return [mode.value for mode in self._stream.supported_sync_modes]

    @property
    def incremental_capable(self) -> bool:
        return SyncMode.INCREMENTAL in self._stream.supported_sync_modes

    def json_schema(self) -> dict[str, Any]:
        return self._stream.json_schema

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        """The connector's own state, moved only by committed STATE messages."""
        return ConnectorStateCursor(state) if incremental else FinalStateCursor()

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        """One partition: the whole stream is one connector process, one Spark task."""
        self._env.ship()
        # The catalog entry read with, in the plan: a resumed run reads with it again
        # even if the connector's catalog has changed since.
        params: dict[str, Any] = {"state": dict(state) if state else None,
                                  "stream": self._stream.model_dump(mode="json",
                                                                    exclude_none=True)}
        head = self._head_starts.pop(self.name, None)
        if head is not None:
            if head.key == head_start.read_key(self.read_documents(params["state"])):
                params["head_start"] = vars(head)
            else:  # started from another state than the plan's: not this read
                head_start.discard(head)
        return [Partition(self.name, self.name, params)]

    def read_documents(self, state: Mapping[str, Any] | None,
                       stream: AirbyteStream | None = None) -> dict[str, Any]:
        """The config, catalog and state documents ``read`` of this stream is given
        (``stream``: the catalog entry a plan recorded, else the current one)."""
        stream = stream or self._stream
        mode = SyncMode.INCREMENTAL if SyncMode.INCREMENTAL in stream.supported_sync_modes \
            else SyncMode.FULL_REFRESH
        catalog = ConfiguredAirbyteCatalog(streams=[ConfiguredAirbyteStream(
            stream=stream, sync_mode=mode,
            destination_sync_mode=DestinationSyncMode.APPEND,
            cursor_field=stream.default_cursor_field,
            primary_key=stream.source_defined_primary_key)])
        state_messages = None if not state else [
            _state_message(state, self.name, self.namespace)
            .model_dump(mode="json", by_alias=True, exclude_none=True)]
        return {"config": self._config,
                "catalog": catalog.model_dump(mode="json", exclude_none=True),
                "state": state_messages}

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        """Run ``read`` for this stream alone; yield its records, then its last state.

        A read the driver started before Spark (``head_start`` in the partition) is
        followed instead, when this is the first attempt to claim it.
        """
        counts = MessageCounts()
        recorded = partition.params.get("stream")  # absent from plans made before it was
        stream = AirbyteStream.model_validate(recorded) if recorded else self._stream
        decoder = RecordDecoder(self.name, stream.json_schema)
        if json_kinds_differ(arrow_schema_for(stream.json_schema), self.landing):
            # A column the table keeps as JSON text (``json_columns``) the decoder would
            # type as a struct, re-serialized later: the engine types these records.
            decoder.usable = False
        head = partition.params.get("head_start")
        with tempfile.TemporaryDirectory(prefix="hw-airbyte-") as folder:
            items = None if head is None else head_start.follow(
                head_start.HeadStart(**head), self._env.label, self.name, counts)
            if items is None:
                args = head_start.read_args(
                    folder, self.read_documents(partition.params.get("state"), stream))
                items = run_connector(self._env.command() + args, self._env.label,
                                      stream=self.name, counts=counts)
            for item in items:
                if isinstance(item, RecordBlock):
                    yield from block_items(decoder, item)
                elif isinstance(item, Record):
                    if item.stream == self.name:
                        yield item.data
                elif item.type == MessageType.STATE and item.state is not None:
                    own = _stream_state(item, self.name, self.namespace)
                    if own is not None:
                        yield PartitionState(own)
                elif (item.type == MessageType.TRACE and item.trace is not None
                      and item.trace.type == TraceType.STREAM_STATUS and item.trace.stream_status
                      and item.trace.stream_status.status.value == "INCOMPLETE"):
                    raise ConnectorError(f"connector {self._env.label} marked the stream "
                                         "INCOMPLETE", stream=self.name)
        _log.info("connector %s, stream %s: %d log messages (%d warnings or worse), %d traces",
                  self._env.label, self.name, counts.logs, counts.warnings, counts.traces)


def block_items(decoder: RecordDecoder, block: RecordBlock) -> Iterator[RecordOrBatch]:
    """The decoder's stream's records of one block: one batch decoded in bulk, or, where
    the decoder refuses the block, each record's data parsed line by line (numbers
    keeping their literal: the reference the bulk decoder is held to)."""
    batch = decoder.decode(block.lines)
    if batch is not None:
        if batch.num_rows:
            yield batch
    else:
        yield from (r.data for r in block.records() if r.stream == decoder.stream)


class AirbyteSource(Source):
    """An Airbyte source connector (pinned package or command) as a Headwater source."""

    type_name = "airbyte"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        command: list[str] = list(config.get("command") or [])
        if command and config.get("entrypoint"):
            raise ConfigError("entrypoint names the console script of an installed package, "
                              "and this source runs its command instead, so it would be "
                              "ignored; remove entrypoint, or give package and version",
                              field="source.config.entrypoint")
        self.env = ConnectorEnv(
            package=config.get("package"), version=config.get("version"),
            command_line=tuple(command),
            entrypoint=config.get("entrypoint"), root=str(envs_root(config.get("envs_dir"))))
        if not self.env.command_line:
            self.env.ensure()  # what is kept of its answers is keyed on what is installed
        #: The installed connector's digest: what its kept spec and catalogs are keyed on.
        self._installed = kept.installation_digest(self.env)
        spec = self.connector_spec().connectionSpecification
        raw = dict(config.get("config") or {})
        register_secrets(secret_values(spec, raw))
        self._connector_config = validate_config(spec, raw, where="source.config.config")
        register_secrets(secret_values(spec, self._connector_config))
        # What the engine records with a run: the connector's secrets redacted by its spec.
        self.config = {**self.config, "config": redact(self._connector_config, spec)}
        self._catalog: AirbyteCatalog | None = None
        self._discovering: Future[AirbyteCatalog] | None = None
        self._discover_lock = threading.Lock()
        self._heads_ready: Future[None] | None = None
        self._head_starts: dict[str, head_start.HeadStart] = {}
        self._catalog_max_age = float(config.get("catalog_max_age_minutes",
                                                 kept.DEFAULT_CATALOG_MAX_AGE_MINUTES))

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Airbyte source connector",
            "description": "Runs an Airbyte source connector in its own venv (or a command); "
                           "its own config goes under `config` and is checked by its spec.",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "package": {"type": "string",
                            "description": "PyPI package, e.g. airbyte-source-faker."},
                "version": {"type": "string", "description": "Exact version to install."},
                "command": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                            "description": "Instead of a package: the connector's command."},
                "entrypoint": {"type": "string",
                               "description": "Console script of the package "
                                              "(default: the package name without airbyte-); "
                                              "refused beside command."},
                "envs_dir": {"type": "string", "description": "Where connector venvs are kept "
                             "(default: $HEADWATER_CONNECTOR_ENVS or ~/.cache/headwater)."},
                "config": {"type": "object", "description": "The connector's own config."},
                "catalog_max_age_minutes": {
                    "type": "number", "minimum": 0,
                    "default": kept.DEFAULT_CATALOG_MAX_AGE_MINUTES,
                    "description": "A sync plans with the catalog the last `discover` gave "
                                   "(same installed connector and config) while it is "
                                   "younger than this, else discovers again first; 0: "
                                   "discover before every sync. `headwater discover` "
                                   "always discovers."},
            },
            "oneOf": [{"required": ["package", "version"]}, {"required": ["command"]}],
        }

    # -- the protocol, on the driver ---------------------------------------------------

    def _single(self, args: Sequence[str], wanted: MessageType) -> AirbyteMessage:
        with tempfile.TemporaryDirectory(prefix="hw-airbyte-") as folder:
            argv = self.env.command() + [
                arg if arg != "{config}" else
                _write(folder, "config.json", self._connector_config) for arg in args]
            for item in run_connector(argv, self.env.label):
                if isinstance(item, AirbyteMessage) and item.type == wanted:
                    return item
        raise ConnectorError(f"connector {self.env.label} answered `{args[0]}` without a "
                             f"{wanted.value} message")

    def connector_spec(self) -> ConnectorSpecification:
        """The connector's own spec, kept per installed connector (see :mod:`._kept`)."""
        path = None if self._installed is None else kept.spec_file(self.env, self._installed)
        known = None if path is None else kept.load_spec(path)
        if known is not None:
            return known
        spec = self._single(["spec"], MessageType.SPEC).spec
        assert spec is not None
        if path is not None:
            kept.keep_spec(path, spec)
        return spec

    def check(self) -> None:
        message = self._single(["check", "--config", "{config}"], MessageType.CONNECTION_STATUS)
        status = message.connectionStatus
        if status is None or status.status != CheckStatus.SUCCEEDED:
            text = (status.message if status else None) or "no reason given"
            raise AuthenticationError(f"connector {self.env.label} check failed: {text}",
                                      field="source.config.config")

    def prepare(self, reads: Mapping[str, Mapping[str, Any] | None] | None = None,
                context: PlanContext | None = None) -> bool:
        """Run ``discover`` in the background (the sync starts Spark meanwhile); with
        ``reads`` (stream name -> state), start those reads once it is done: a head
        start (see :mod:`._head_start`), which :meth:`streams` waits for.  True when
        the reads are starting."""
        # Here, not in the threads: finding the command imports PySpark, which must
        # not happen in a thread while the caller's thread imports it to start Spark.
        self.env.command()
        discovering = self._discovery(plans_with_kept=True)
        if not reads or self._heads_ready is not None:
            return False
        wanted = {name: dict(state) if state else None for name, state in reads.items()}
        self._heads_ready = Future()
        threading.Thread(target=self._start_reads, args=(discovering, wanted, self._heads_ready),
                         daemon=True, name="hw-airbyte-head-starts").start()
        return True

    def _start_reads(self, discovering: Future[AirbyteCatalog],
                     reads: dict[str, dict[str, Any] | None], done: Future[None]) -> None:
        try:
            # The catalog of the last discover with this config, if kept (whatever its
            # age): a read started from an outdated catalog does not match the plan's,
            # and is discarded.
            known = self._kept_catalog()
            catalog = known.catalog if known is not None else discovering.result()
            for name, state in reads.items():
                found = next((s for s in catalog.streams if s.name == name), None)
                if found is None:
                    continue
                stream = AirbyteSourceStream(self.env, self._connector_config, found)
                head = head_start.start(self.env.command(), stream.read_documents(state),
                                        self.env.label)
                if head is not None:
                    self._head_starts[name] = head
        except Exception as exc:  # no head start; streams() reports a failed discover
            _log.info("connector %s: no head start: %s", self.env.label, exc)
        finally:
            done.set_result(None)

    def catalog(self) -> AirbyteCatalog:
        """The connector's catalog, learned once per source object (once per sync).

        A ``discover`` run now, unless :meth:`prepare` (a sync) found a kept
        catalog younger than ``catalog_max_age_minutes`` (see :mod:`._kept`).
        """
        if self._catalog is None:
            self._catalog = self._discovery().result()
        return self._catalog

    def _discovery(self, plans_with_kept: bool = False) -> Future[AirbyteCatalog]:
        with self._discover_lock:
            if self._discovering is None:
                self._discovering = Future()
                known = self._kept_catalog() if plans_with_kept else None
                if known is not None and known.age_minutes() < self._catalog_max_age:
                    _log.info("connector %s: planning with the catalog discovered %.1f "
                              "minutes ago (catalog_max_age_minutes: %g)", self.env.label,
                              known.age_minutes(), self._catalog_max_age)
                    self._discovering.set_result(known.catalog)
                else:
                    threading.Thread(target=self._discover, args=(self._discovering,),
                                     daemon=True, name="hw-airbyte-discover").start()
            return self._discovering

    def _discover(self, result: Future[AirbyteCatalog]) -> None:
        try:
            message = self._single(["discover", "--config", "{config}"], MessageType.CATALOG)
            assert message.catalog is not None
            self._keep_catalog(message.catalog)
            result.set_result(message.catalog)
        except BaseException as exc:  # handed to whoever asks for the catalog
            result.set_exception(exc)

    def _catalog_file(self) -> Path | None:
        """Where the last discover's catalog is kept (package connectors, see :mod:`._kept`)."""
        if self._installed is None:
            return None
        return kept.catalog_file(self.env, self._installed, self._connector_config)

    def _kept_catalog(self) -> kept.KeptCatalog | None:
        path = self._catalog_file()
        return None if path is None else kept.load_catalog(path)

    def _keep_catalog(self, catalog: AirbyteCatalog) -> None:
        """Keep a discover's catalog, saying what changed since the one kept before."""
        path = self._catalog_file()
        if path is None:
            return
        before = kept.load_catalog(path)
        changes = [] if before is None else kept.catalog_changes(before.catalog, catalog)
        if before is not None and changes:
            _log.warning("connector %s: the catalog changed since the discover of %s: %s",
                         self.env.label, time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                       time.gmtime(before.discovered_at)),
                         "; ".join(changes))
        kept.keep_catalog(path, catalog, time.time())

    def streams(self) -> list[Stream]:
        if self._heads_ready is not None:
            self._heads_ready.result()
        return [AirbyteSourceStream(self.env, self._connector_config, s, self._head_starts)
                for s in self.catalog().streams]


def _state_message(state: Mapping[str, Any], name: str,
                   namespace: str | None) -> AirbyteStateMessage:
    """The state handed to the connector: GLOBAL if it reported GLOBAL state, else STREAM."""
    parts = split_global_stream_state(state)
    if parts is not None:
        return global_state_message(name, *parts, namespace=namespace)
    return stream_state_message(name, dict(state), namespace=namespace)


def _stream_state(message: AirbyteMessage, name: str,
                  namespace: str | None) -> dict[str, Any] | None:
    """What to store of a STATE message: this stream's part (STREAM form), or the
    shared part with this stream's part (GLOBAL form, see ``global_stream_state``)."""
    state = message.state
    assert state is not None
    if state.type == AirbyteStateType.STREAM and state.stream is not None:
        descriptor = state.stream.stream_descriptor
        if descriptor.name == name and descriptor.namespace == namespace:
            return dict(state.stream.stream_state or {})
    if state.type == AirbyteStateType.GLOBAL and state.global_ is not None:
        own = next((part.stream_state for part in state.global_.stream_states
                    if part.stream_descriptor.name == name), None)
        return global_stream_state(state.global_.shared_state, own)
    return None


def _write(folder: str, name: str, document: Any) -> str:
    path = Path(folder) / name
    path.write_text(json.dumps(document))
    return str(path)

