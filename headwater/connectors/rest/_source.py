"""The built-in ``rest`` source: an HTTP API declared in YAML, no Python needed.

The config (validated against :data:`~._spec.SPEC` before this runs) becomes
:class:`~headwater.sdk.http.HttpSettings` and one
:class:`~headwater.sdk.http.HttpStreamSpec` per stream; the SDK does the rest.
See ``examples/surveys.yaml`` and ``examples/github.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.connectors.rest._spec import SPEC
from headwater.errors import ConfigError
from headwater.sdk import PlanContext, Source, Stream
from headwater.sdk.http import (
    ApiKeyAuth,
    Authenticator,
    BasicAuth,
    BearerAuth,
    CallBudget,
    CursorPaginator,
    HttpClient,
    HttpSettings,
    HttpStream,
    HttpStreamSpec,
    LinkHeaderPaginator,
    NextUrlPaginator,
    NoAuth,
    NoPagination,
    OAuth2Auth,
    OffsetPaginator,
    PageNumberPaginator,
    Paginator,
    ParentLink,
)
from headwater.sdk.http._early_reads import EarlyReads

__all__ = ["RestSource"]


def _authenticator(config: Mapping[str, Any] | None, timeout_s: float) -> Authenticator:
    config = dict(config or {"type": "none"})
    kind = config.pop("type")
    if kind == "bearer":
        return BearerAuth(config["token"])
    if kind == "api_key":
        return ApiKeyAuth(config["name"], config["value"], where=config.get("where", "header"),
                          prefix=config.get("prefix", ""))
    if kind == "basic":
        return BasicAuth(config["username"], config["password"])
    if kind == "oauth2":
        return OAuth2Auth(token_url=config["token_url"], client_id=config["client_id"],
                          client_secret=config["client_secret"],
                          refresh_token=config.get("refresh_token"),
                          scopes=config.get("scopes"), timeout_s=timeout_s)
    return NoAuth()


_PAGINATORS: dict[str, type[Paginator]] = {
    "none": NoPagination,
    "page_number": PageNumberPaginator,
    "offset": OffsetPaginator,
    "cursor": CursorPaginator,
    "next_url": NextUrlPaginator,
    "link_header": LinkHeaderPaginator,
}


#: A stream's settings of its date windows: what a stream without ``cursor_field`` has none of.
WINDOW_SETTINGS = ("start_date", "end_date", "window_size_seconds", "windows_per_partition",
                   "cursor_format")


def _refuse_windows_without_a_cursor(raw: Mapping[str, Any], where: str) -> None:
    """A window setting on a stream with no ``cursor_field`` is refused, naming it: its
    calls are not cut into date windows, so the setting would be accepted and ignored."""
    if raw.get("cursor_field"):
        return
    given = [key for key in WINDOW_SETTINGS if raw.get(key) is not None]
    if given:
        raise ConfigError(
            f"stream {raw['name']!r} has no cursor_field, so its calls are not cut into date "
            f"windows and {given[0]} would be ignored; set cursor_field (the records' time "
            f"the windows cut), or remove {given[0]}", stream=str(raw["name"]),
            field=f"{where}.{given[0]}")


def _paginator(config: Mapping[str, Any] | None) -> Paginator:
    options = dict(config or {"type": "none"})
    return _PAGINATORS[options.pop("type")](**options)


class RestSource(Source):
    """A declarative REST API source; see the module docstring."""

    type_name = "rest"
    offline_catalog = "schemas"  # streams and schemas are the config's

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        timeout_s = float(config.get("timeout_seconds", 30))
        retries = config.get("retries") or {}
        limits = config.get("rate_limit") or {}
        self.settings = HttpSettings(
            base_url=config["base_url"],
            auth=_authenticator(config.get("auth"), timeout_s),
            headers=dict(config.get("headers") or {}),
            timeout_s=timeout_s,
            max_attempts=int(retries.get("max_attempts", 5)),
            backoff_s=float(retries.get("backoff_seconds", 0.5)),
            max_backoff_s=float(retries.get("max_backoff_seconds", 60)),
            concurrency=int(config.get("concurrency", 10)),
            budgets=tuple(CallBudget(calls=int(b["calls"]), period_s=float(b["period_seconds"]),
                                     path_pattern=b.get("path_pattern"),
                                     margin_s=float(b.get("margin_seconds", 0.25)))
                          for b in limits.get("budgets") or []),
            redis_url=limits.get("redis_url"),
        )
        default_paginator = config.get("paginator")
        self._specs: dict[str, HttpStreamSpec] = {}
        for position, raw in enumerate(config["streams"]):
            spec = self._stream_spec(raw, default_paginator)
            if spec.name in self._specs:
                raise ConfigError(f"two streams are named {spec.name!r}",
                                  field=f"source.config.streams[{position}].name")
            self._specs[spec.name] = spec
        for name, spec in self._specs.items():
            if spec.parent and spec.parent.stream not in self._specs:
                raise ConfigError(f"stream {name!r} names parent {spec.parent.stream!r}, which "
                                  "is not a stream of this source", stream=name,
                                  field="parent.stream")
        self._check_no_cycles()
        for position, raw in enumerate(config["streams"]):
            _refuse_windows_without_a_cursor(raw, f"source.config.streams[{position}]")
        #: The driver's early calls, once :meth:`prepare` started them.
        self._early: EarlyReads | None = None

    @staticmethod
    def _stream_spec(raw: Mapping[str, Any], default_paginator: Any) -> HttpStreamSpec:
        parent = raw.get("parent")
        return HttpStreamSpec(
            name=raw["name"],
            path=raw["path"],
            json_schema=raw["schema"],
            params=dict(raw.get("params") or {}),
            record_path=raw.get("record_selector"),
            primary_key=tuple(raw.get("primary_key") or ()),
            paginator=_paginator(raw.get("paginator", default_paginator)),
            cursor_field=raw.get("cursor_field"),
            cursor_format=raw.get("cursor_format", "iso"),
            start_date=raw.get("start_date"),
            end_date=raw.get("end_date"),
            window_size_s=int(raw.get("window_size_seconds", 86_400)),
            windows_per_partition=(int(raw["windows_per_partition"])
                                   if raw.get("windows_per_partition") is not None else None),
            parent=ParentLink(stream=parent["stream"],
                              fields=tuple(parent.get("fields") or ("id",)),
                              copy_to=dict(parent.get("copy_to") or {}),
                              parents_per_partition=int(parent.get("parents_per_partition", 10)))
            if parent else None,
            ignore_404=bool(raw.get("ignore_404", False)),
        )

    def _check_no_cycles(self) -> None:
        for name in self._specs:
            seen = [name]
            link = self._specs[name].parent
            while link is not None:
                if link.stream in seen:
                    raise ConfigError(f"streams {' -> '.join([*seen, link.stream])} form a "
                                      "cycle of parents", stream=name, field="parent.stream")
                seen.append(link.stream)
                link = self._specs[link.stream].parent

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return SPEC

    def prepare(self, reads: Mapping[str, Mapping[str, Any] | None] | None = None,
                context: PlanContext | None = None) -> bool:
        """With ``reads`` and a shared folder: make the run's first calls while Spark
        starts (:mod:`headwater.sdk.http._early_reads`; not with per-task call budgets)."""
        if (not reads or context is None or not context.shared_dir or not context.reads_early
                or self._early is not None or not EarlyReads.allowed(self.settings)):
            return False
        streams = [self.stream(name) for name in reads if name in self._specs]
        self._early = EarlyReads(streams, context, self.settings).start()
        return True

    def streams(self) -> list[Stream]:
        return [self.stream(name) for name in self._specs]

    def stream(self, name: str) -> HttpStream:
        spec = self._specs.get(name)
        if spec is None:
            raise ConfigError(f"the rest source has no stream {name!r}; it has: "
                              f"{', '.join(self._specs)}", stream=name)
        parent = self.stream(spec.parent.stream) if spec.parent else None
        children = tuple(child for child, other in self._specs.items()
                         if other.parent is not None and other.parent.stream == name)
        return HttpStream(spec, self.settings, parent, substreams=children)

    def check(self) -> None:
        """Fetch the first page of one stream: refused credentials raise
        :class:`~headwater.errors.AuthenticationError`, anything else wrong a
        :class:`~headwater.errors.ConnectorError` naming the URL."""
        roots = [n for n, s in self._specs.items() if s.parent is None]
        name = self.config.get("check_stream") or roots[0]
        stream = self.stream(name)
        if stream.spec.parent is not None:
            raise ConfigError(f"check_stream {name!r} is a substream; name a stream without "
                              "a parent", field="source.config.check_stream")
        partitions = stream.partitions(None)
        values: dict[str, Any] = {"start": None, "end": None}
        if partitions and "start" in partitions[0].params:
            values.update(start=partitions[0].params["start"], end=partitions[0].params["end"])
        with HttpClient(self.settings) as client:
            from types import SimpleNamespace

            params = stream.request_params({**values, "parent": SimpleNamespace()})
            path = stream.spec.path.format_map({**values, "parent": SimpleNamespace()})
            next(iter(client.pages(path, params, stream.spec.paginator,
                                   stream.spec.record_path)), None)
