"""OpenLineage run events for every run: START, then COMPLETE, FAIL or ABORT.

The engine calls :meth:`RunLineage.started` once a run's attempt is recorded and
:meth:`RunEvents.ended` once its end is; every run goes through there (sync,
replay, backfill, a resumed run).  Where events go:

1. the connection file's ``lineage:`` block (:class:`~headwater.config.LineageConfig`);
2. else the OpenLineage client's own environment, when ``OPENLINEAGE_URL`` or
   ``OPENLINEAGE_CONFIG`` is set (its namespace: ``OPENLINEAGE_NAMESPACE``);
3. else nowhere: no client is made and nothing is imported.

``openlineage-python`` is the ``headwater[lineage]`` extra, not a dependency: it
brings requests, attrs and an HTTP stack of its own that a sync without a
lineage receiver never uses.  A ``lineage:`` block without it installed is a
config error (the file asks for events that could not be sent); the
environment variables without it are only a warning (they may be set for
other tools on the machine).

Sending never fails nor stalls a sync (:mod:`._emitter`); what the events hold
is :mod:`._events`, their dataset namespaces :mod:`._namespaces`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from headwater.config import register_secrets
from headwater.config._lineage import DEFAULT_NAMESPACE, LineageConfig
from headwater.errors import ConfigError
from headwater.observability.lineage._emitter import HTTP_RETRY, LineageEmitter
from headwater.observability.lineage._namespaces import (
    destination_namespace,
    source_namespace,
    without_credentials,
)

if TYPE_CHECKING:
    from headwater.config import ConnectionConfig
    from headwater.destinations import Destination
    from headwater.engine._results import StreamStats
    from headwater.observability.lineage._events import RunFacts
    from headwater.plan import RunPlan
    from headwater.sdk import Source

log = logging.getLogger("headwater.lineage")

#: The environment variables that turn lineage on without a ``lineage:`` block.
ENVIRONMENT = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG")
#: Seconds a sync waits for one event when the environment configures the client.
DEFAULT_TIMEOUT_S = 5.0


class RunEvents:
    """The events of one run: :meth:`ended` sends its last one (no-op when lineage is off)."""

    def __init__(self, emitter: LineageEmitter | None, facts: RunFacts | None,
                 plan: RunPlan) -> None:
        self._emitter = emitter
        self._facts = facts
        self._plan = plan

    def send(self, status: str, *, error: str | None = None,
             streams: Sequence[StreamStats] = ()) -> None:
        """Send the event of a run that is ``running`` (START) or has ended with ``status``."""
        if self._emitter is None or self._facts is None:
            return
        from openlineage.client.event_v2 import RunState

        from headwater.observability.lineage._events import END_STATES, StreamOutcome, run_event

        state = RunState.START if status == "running" else END_STATES[status]
        outcomes = [StreamOutcome(s.name, s.records_written, s.bytes) for s in streams]
        try:
            event = run_event(self._facts, state, self._plan.streams, outcomes=outcomes,
                              error=error)
        except Exception as exc:  # an event that cannot be built is lineage's loss, not the run's
            self._emitter.warn(self._facts.run_id,
                               f"the {state.value} event could not be built: {exc!r}")
            return
        self._emitter.send(event, run_id=self._facts.run_id, what=state.value)

    def ended(self, status: str, *, error: str | None = None,
              streams: Sequence[StreamStats] = ()) -> None:
        """The run ended ``succeeded`` (COMPLETE), ``failed`` (FAIL) or ``stopped`` (ABORT)."""
        self.send(status, error=error, streams=streams)


class RunLineage:
    """A connection's lineage: made once per engine, it sends the events of each run."""

    def __init__(self, emitter: LineageEmitter | None, *, namespace: str,
                 connection: ConnectionConfig | None = None, source: Source | None = None,
                 destination: Destination | None = None) -> None:
        self._emitter = emitter
        self.namespace = namespace
        self._connection = connection
        self._source = source
        self._destination = destination

    @property
    def enabled(self) -> bool:
        return self._emitter is not None

    @classmethod
    def for_connection(cls, connection: ConnectionConfig, source: Source,
                       destination: Destination) -> RunLineage:
        """The lineage the connection file or the environment configures (see the module).

        Raises:
            ConfigError: a ``lineage:`` block, and ``openlineage-python`` is not installed.
        """
        config = connection.lineage
        if config is None and not any(os.environ.get(name) for name in ENVIRONMENT):
            return cls(None, namespace=DEFAULT_NAMESPACE)
        try:
            import openlineage.client  # noqa: F401 (only whether it is there)
        except ImportError:
            if config is not None:
                raise ConfigError(
                    "lineage needs the OpenLineage client: pip install 'headwater[lineage]'",
                    field="lineage") from None
            log.warning("lineage: %s is set but the OpenLineage client is not installed "
                        "(pip install 'headwater[lineage]'); no lineage events are sent",
                        " / ".join(name for name in ENVIRONMENT if os.environ.get(name)))
            return cls(None, namespace=DEFAULT_NAMESPACE)
        emitter = _file_emitter(config) if config is not None else _environment_emitter()
        namespace = (config.namespace if config is not None else None) \
            or os.environ.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE
        return cls(emitter, namespace=namespace, connection=connection, source=source,
                   destination=destination)

    def started(self, run_id: str, plan: RunPlan, *, attempt: int, resumed: bool) -> RunEvents:
        """Send the run's START event (each attempt's); the :class:`RunEvents` ends it."""
        if self._emitter is None:
            return RunEvents(None, None, plan)
        try:
            facts = self._facts(run_id, plan, attempt, resumed)
        except Exception as exc:  # lineage's loss, never the run's
            self._emitter.warn(run_id, f"the run's datasets could not be named: {exc!r}")
            return RunEvents(None, None, plan)
        events = RunEvents(self._emitter, facts, plan)
        events.send("running")
        return events

    def _facts(self, run_id: str, plan: RunPlan, attempt: int, resumed: bool) -> RunFacts:
        from headwater.expectations._quarantine import quarantine_stream
        from headwater.expectations._stream import configured_expectations
        from headwater.observability.lineage._events import RunFacts

        connection, source, destination = self._connection, self._source, self._destination
        assert connection is not None and source is not None and destination is not None
        streams = [s.stream.name for s in plan.streams]
        where = destination_namespace(destination, streams)
        tables = {name: destination.dataset_name(name, where) for name in streams}
        quarantines = {name: destination.dataset_name(quarantine_stream(name), where)
                       for name in streams
                       if any(e.action == "quarantine"
                              for e in configured_expectations(connection, name))}
        return RunFacts(run_id=run_id, connection=connection.name, namespace=self.namespace,
                        kind=plan.purpose, attempt=attempt, resumed=resumed,
                        replay_of=plan.replay_of,
                        source_namespace=source_namespace(connection.source.type, source.config),
                        destination_namespace=where, tables=tables, quarantines=quarantines)


def _file_emitter(config: LineageConfig) -> LineageEmitter:
    """The emitter of a ``lineage:`` block: its HTTP receiver or its file."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport import get_default_factory

    transport: dict[str, Any]
    if config.url is not None:
        parts = urlsplit(config.url)
        # A token in the URL's query is a credential too: masked wherever it shows.
        register_secrets([part for part in (parts.query, parts.fragment) if part])
        transport = {"type": "http", "url": config.url, "endpoint": config.endpoint,
                     "timeout": config.timeout_s, "retry": HTTP_RETRY}
        if config.api_key is not None:
            key = config.api_key.get_secret_value()
            register_secrets([key])
            transport["auth"] = {"type": "api_key", "apiKey": key}
        where = without_credentials(config.url)
    else:
        assert config.file is not None
        transport = {"type": "file", "log_file_path": config.file, "append": True}
        where = without_credentials(config.file)

    def make_client() -> Any:
        return OpenLineageClient(transport=get_default_factory().create(transport),
                                 config={"transport": transport})

    return LineageEmitter(make_client, where=where, timeout_s=config.timeout_s)


def _environment_emitter() -> LineageEmitter:
    """The emitter of the OpenLineage client's own environment configuration."""
    from openlineage.client import OpenLineageClient

    register_secrets([key for key in (os.environ.get("OPENLINEAGE_API_KEY"),) if key])
    url = os.environ.get("OPENLINEAGE_URL")
    where = without_credentials(url) if url else f"from {os.environ.get('OPENLINEAGE_CONFIG')}"
    return LineageEmitter(OpenLineageClient, where=where, timeout_s=DEFAULT_TIMEOUT_S)


__all__ = ["RunEvents", "RunLineage"]
