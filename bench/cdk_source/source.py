"""The Airbyte Python CDK concurrent source that bench/substream_api_vs_cdk.py races.

Built as the CDK's own tutorial builds its SurveyMonkey connector ("Custom Python
connector": incremental reads, reading from a subresource, concurrency):

* ``surveys``: an ``HttpStream`` whose slices are date windows (here 30 days,
  ``[start, end)`` as the API filters them), ``links.next`` pagination, a
  ``ConcurrentCursor`` with ``EpochValueConcurrentStreamStateConverter``;
* ``survey_responses``: a substream whose ``stream_slices`` reads the parent's
  records window by window and yields one slice per survey, with a
  ``FinalStateCursor``; ``use_cache`` on the parent, as the tutorial sets it, so
  the substream's reads of the parent can be answered from the cache;
* the source is a ``ConcurrentSourceAdapter`` over
  ``ConcurrentSource.create(num_workers, num_workers // 2, ...)`` and both streams
  are wrapped in ``StreamFacade``: the workers read partitions (windows,
  surveys) concurrently, and the substream's partitions are generated (one per
  parent record, as the parent's pages arrive) on a worker thread too.

Two departures from the tutorial, both so the comparison is fair: the API
budget of 120 calls a minute is left out (the loopback API has no limit to
respect, and Headwater runs without one), and ``num_workers`` is not capped at
10 (the benchmark runs it at 10 and 32).

It runs in the CDK's own venv (bench/setup-alternatives), never the project's:

    .bench-venvs/airbyte-cdk/bin/python bench/cdk_source/source.py read \\
        --config config.json --catalog catalog.json
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlparse

import requests
from airbyte_cdk.entrypoint import AirbyteEntrypoint, launch
from airbyte_cdk.logger import AirbyteLogFormatter
from airbyte_cdk.models import ConnectorSpecification, Level, SyncMode
from airbyte_cdk.sources.concurrent_source.concurrent_source import ConcurrentSource
from airbyte_cdk.sources.concurrent_source.concurrent_source_adapter import (
    ConcurrentSourceAdapter,
)
from airbyte_cdk.sources.connector_state_manager import ConnectorStateManager
from airbyte_cdk.sources.message import InMemoryMessageRepository
from airbyte_cdk.sources.streams import Stream
from airbyte_cdk.sources.streams.concurrent.adapters import StreamFacade
from airbyte_cdk.sources.streams.concurrent.cursor import (
    ConcurrentCursor,
    CursorField,
    FinalStateCursor,
)
from airbyte_cdk.sources.streams.concurrent.state_converters.datetime_stream_state_converter import (  # noqa: E501
    EpochValueConcurrentStreamStateConverter,
)
from airbyte_cdk.sources.streams.http import HttpStream
from airbyte_cdk.sources.streams.http.requests_native_auth import TokenAuthenticator
from airbyte_cdk.sources.types import StreamSlice

_DEFAULT_CONCURRENCY = 10
_PAGE_SIZE = 50
_logger = logging.getLogger("airbyte")

SCHEMAS: dict[str, dict[str, Any]] = {
    "surveys": {"type": "object", "properties": {
        "id": {"type": "integer"}, "title": {"type": "string"},
        "date_modified": {"type": "integer"}}},
    "survey_responses": {"type": "object", "properties": {
        "id": {"type": "integer"}, "survey_id": {"type": "integer"},
        "answer": {"type": "string"}, "score": {"type": "integer"}}},
}


def _next_page(response: requests.Response) -> Mapping[str, Any] | None:
    links = response.json().get("links", {})
    return {"next_url": links["next"]} if "next" in links else None


class SurveyMonkeyBaseStream(HttpStream):
    """The parent: 30-day windows on ``date_modified`` (epoch), paged by ``links.next``."""

    state_converter = EpochValueConcurrentStreamStateConverter()

    def __init__(self, config: Mapping[str, Any], name: str, path: str, primary_key: str,
                 cursor_field: str | None, **kwargs: Any) -> None:
        self._config = config
        self._name = name
        self._path = path
        self._primary_key = primary_key
        self._cursor_field = cursor_field
        super().__init__(**kwargs)

    @property
    def url_base(self) -> str:
        return str(self._config["base_url"])

    @property
    def name(self) -> str:
        return self._name

    @property
    def primary_key(self) -> str:
        return self._primary_key

    @property
    def cursor_field(self) -> str | list[str]:
        return self._cursor_field or []

    @property
    def use_cache(self) -> bool:
        # The tutorial: the substream's reads of the parent come from the cache.
        return bool(self._config.get("use_cache", True))

    def path(self, **kwargs: Any) -> str:
        return self._path

    def next_page_token(self, response: requests.Response) -> Mapping[str, Any] | None:
        return _next_page(response)

    def request_params(self, stream_state: Mapping[str, Any] | None,
                       stream_slice: Mapping[str, Any] | None = None,
                       next_page_token: Mapping[str, Any] | None = None,
                       ) -> MutableMapping[str, Any]:
        if next_page_token:
            return dict(parse_qsl(urlparse(next_page_token["next_url"]).query))
        assert stream_slice is not None
        return {"per_page": _PAGE_SIZE, "start_modified_at": stream_slice["start_date"],
                "end_modified_at": stream_slice["end_date"]}

    def parse_response(self, response: requests.Response, **kwargs: Any) -> Iterable[Mapping]:
        yield from response.json().get("data", [])

    def get_updated_state(self, current_stream_state: MutableMapping[str, Any],
                          latest_record: Mapping[str, Any]) -> MutableMapping[str, Any]:
        value = max(current_stream_state.get("date_modified", 0), latest_record["date_modified"])
        return {"date_modified": value}

    def stream_slices(self, stream_state: Mapping[str, Any] | None = None,
                      **kwargs: Any) -> Iterable[Mapping[str, Any] | None]:
        start = int((stream_state or {}).get("date_modified", self._config["start"]))
        step, end = int(self._config["window_days"]) * 86_400, int(self._config["end"])
        while start < end:  # half-open windows, as the API filters them
            # A StreamSlice (hashable), as the CDK's ConcurrentCursor keys on it.
            yield StreamSlice(partition={}, cursor_slice={"start_date": start,
                                                          "end_date": min(start + step, end)})
            start += step


class SurveyMonkeySubstream(HttpStream):
    """The child: one slice per parent record, read from the parent window by window."""

    def __init__(self, config: Mapping[str, Any], name: str, path: str, primary_key: str,
                 parent_stream: SurveyMonkeyBaseStream, **kwargs: Any) -> None:
        self._config = config
        self._name = name
        self._path = path
        self._primary_key = primary_key
        self._parent_stream = parent_stream
        super().__init__(**kwargs)

    @property
    def url_base(self) -> str:
        return str(self._config["base_url"])

    @property
    def name(self) -> str:
        return self._name

    @property
    def primary_key(self) -> str:
        return self._primary_key

    def path(self, *, stream_slice: Mapping[str, Any] | None = None, **kwargs: Any) -> str:
        return self._path.format(stream_slice=stream_slice)

    def next_page_token(self, response: requests.Response) -> Mapping[str, Any] | None:
        return _next_page(response)

    def request_params(self, stream_state: Mapping[str, Any] | None,
                       stream_slice: Mapping[str, Any] | None = None,
                       next_page_token: Mapping[str, Any] | None = None,
                       ) -> MutableMapping[str, Any]:
        if next_page_token:
            return dict(parse_qsl(urlparse(next_page_token["next_url"]).query))
        return {"per_page": _PAGE_SIZE}

    def parse_response(self, response: requests.Response, **kwargs: Any) -> Iterable[Mapping]:
        yield from response.json().get("data", [])

    def stream_slices(self, stream_state: Mapping[str, Any] | None = None,
                      **kwargs: Any) -> Iterable[Mapping[str, Any] | None]:
        for window in self._parent_stream.stream_slices():
            yield from self._parent_stream.read_records(sync_mode=SyncMode.full_refresh,
                                                        stream_slice=window)


class SourceSurveyMonkeyDemo(ConcurrentSourceAdapter):
    message_repository = InMemoryMessageRepository(
        Level(AirbyteLogFormatter.level_mapping[_logger.level]))

    def __init__(self, config: Mapping[str, Any] | None,
                 state: list[Any] | None) -> None:
        concurrency = int((config or {}).get("num_workers", _DEFAULT_CONCURRENCY))
        _logger.info("Using concurrent cdk with concurrency level %s", concurrency)
        concurrent_source = ConcurrentSource.create(
            concurrency, concurrency // 2, _logger, self._slice_logger, self.message_repository)
        super().__init__(concurrent_source)
        self._config = config
        self._state = state

    def spec(self, logger: logging.Logger) -> ConnectorSpecification:
        # The tutorial's spec.yaml, inline: this file is run as a script, not a package.
        return ConnectorSpecification(connectionSpecification={
            "type": "object",
            "required": ["base_url", "access_token", "start", "end"],
            "properties": {"base_url": {"type": "string"},
                           "access_token": {"type": "string", "airbyte_secret": True},
                           "start": {"type": "integer"}, "end": {"type": "integer"},
                           "window_days": {"type": "integer", "default": 30},
                           "num_workers": {"type": "integer", "default": 10},
                           "use_cache": {"type": "boolean", "default": True}}})

    def check_connection(self, logger: logging.Logger,
                         config: Mapping[str, Any]) -> tuple[bool, Any]:
        return True, None

    def streams(self, config: Mapping[str, Any]) -> list[Stream]:
        auth = TokenAuthenticator(config["access_token"])
        surveys = SurveyMonkeyBaseStream(config, name="surveys", path="/v3/surveys",
                                         primary_key="id", cursor_field="date_modified",
                                         authenticator=auth)
        synchronous: list[HttpStream] = [
            surveys,
            SurveyMonkeySubstream(config, name="survey_responses",
                                  path="/v3/surveys/{stream_slice[id]}/responses",
                                  primary_key="id", parent_stream=surveys, authenticator=auth),
        ]
        state_manager = ConnectorStateManager(state=self._state)
        converter = surveys.state_converter
        configured: list[Stream] = []
        for stream in synchronous:
            legacy_state = state_manager.get_stream_state(stream.name, stream.namespace)
            if stream.cursor_field:
                start = converter.parse_timestamp(int(config["start"]))
                end = converter.parse_timestamp(int(config["end"]))
                cursor: Any = ConcurrentCursor(
                    stream.name, stream.namespace, legacy_state, self.message_repository,
                    state_manager, converter, CursorField(str(stream.cursor_field)),
                    ("start_date", "end_date"), start, lambda end=end: end)
            else:
                cursor = FinalStateCursor(stream.name, stream.namespace, self.message_repository)
            configured.append(StreamFacade.create_from_stream(stream, self, _logger,
                                                              legacy_state, cursor))
        return configured


def _schema(self: HttpStream) -> Mapping[str, Any]:
    return SCHEMAS[self.name]


# The tutorial ships schemas/*.json files; here the schemas live in this one file.
SurveyMonkeyBaseStream.get_json_schema = _schema  # type: ignore[method-assign]
SurveyMonkeySubstream.get_json_schema = _schema  # type: ignore[method-assign]


def run() -> None:
    args = sys.argv[1:]
    config_path = AirbyteEntrypoint.extract_config(args)
    state_path = AirbyteEntrypoint.extract_state(args)
    source = SourceSurveyMonkeyDemo(
        SourceSurveyMonkeyDemo.read_config(config_path) if config_path else None,
        SourceSurveyMonkeyDemo.read_state(state_path) if state_path else None)
    launch(source, args)


if __name__ == "__main__":
    run()
