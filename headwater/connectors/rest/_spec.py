"""The ``rest`` source's spec: the JSON Schema a declarative API config must match.

Written by hand (not generated) so it stays flat: the secret finder walks
``properties`` and ``oneOf`` branches, and every credential here is marked
``airbyte_secret`` so it never prints.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SPEC"]


def _secret(description: str) -> dict[str, Any]:
    return {"type": "string", "airbyte_secret": True, "description": description}


def _auth(kind: str, required: list[str], **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "title": kind,
        "required": ["type", *required],
        "additionalProperties": False,
        "properties": {"type": {"const": kind}, **properties},
    }


_AUTH = {
    "description": "How requests authenticate (default: none).",
    "oneOf": [
        _auth("none", []),
        _auth("bearer", ["token"], token=_secret("Sent as 'Authorization: Bearer <token>'.")),
        _auth("api_key", ["name", "value"],
              name={"type": "string", "description": "Header or query parameter name."},
              value=_secret("The API key."),
              where={"enum": ["header", "query"], "default": "header"},
              prefix={"type": "string", "default": "",
                      "description": "Written before the key in a header, e.g. 'Token '."}),
        _auth("basic", ["username", "password"], username={"type": "string"},
              password=_secret("The password.")),
        _auth("oauth2", ["token_url", "client_id", "client_secret"],
              token_url={"type": "string", "description": "The token endpoint."},
              client_id={"type": "string"},
              client_secret=_secret("The OAuth2 client secret."),
              refresh_token=_secret("With it, tokens come from the refresh_token grant; "
                                    "without it, from client_credentials."),
              scopes={"type": "array", "items": {"type": "string"}}),
    ],
}

_PAGINATOR = {
    "description": "How to get the next page (default: none).",
    "oneOf": [
        _auth("none", []),
        _auth("page_number", [], page_param={"type": "string", "default": "page"},
              size_param={"type": ["string", "null"], "default": "per_page"},
              page_size={"type": "integer", "minimum": 1, "default": 100},
              start_page={"type": "integer", "default": 1}),
        _auth("offset", [], offset_param={"type": "string", "default": "offset"},
              limit_param={"type": "string", "default": "limit"},
              page_size={"type": "integer", "minimum": 1, "default": 100}),
        _auth("cursor", ["cursor_path"],
              cursor_path={"type": "string", "description": "Dotted path of the next token."},
              cursor_param={"type": "string", "default": "cursor"},
              size_param={"type": ["string", "null"], "default": None},
              page_size={"type": "integer", "minimum": 1, "default": 100}),
        _auth("next_url", ["next_url_path"],
              next_url_path={"type": "string",
                             "description": "Dotted path of the next page's URL."}),
        _auth("link_header", [], rel={"type": "string", "default": "next"}),
    ],
}

_STREAM = {
    "type": "object",
    "required": ["name", "path", "schema"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "path": {"type": "string", "description": "Path under base_url; may use {start}, "
                 "{end} and {parent.<field>}."},
        "params": {"type": "object", "description": "Query parameters (templates allowed)."},
        "record_selector": {"type": ["string", "null"],
                            "description": "Dotted path of the records in the body "
                                           "(default: the body is the list)."},
        "primary_key": {"type": "array", "items": {"type": "string"}},
        "cursor_field": {"type": ["string", "null"]},
        "cursor_format": {"enum": ["iso", "epoch"], "default": "iso",
                          "description": "How the cursor is sent to the API and stored in "
                                         "state: ISO 8601 date-time or epoch seconds."},
        "start_date": {"type": "string", "description": "ISO 8601; where history begins."},
        "end_date": {"type": "string", "description": "ISO 8601; default: now."},
        "window_size_seconds": {"type": "integer", "minimum": 1, "default": 86400},
        "windows_per_partition": {
            "type": "integer", "minimum": 1,
            "description": "API windows per partition (a partition is read by one task, its "
                           "windows side by side). Default: 4 per request the task keeps in "
                           "flight (its share of `concurrency`), at least 10."},
        "paginator": _PAGINATOR,
        "schema": {"type": "object", "description": "JSON Schema of one record."},
        "ignore_404": {"type": "boolean", "default": False},
        "parent": {
            "type": "object",
            "required": ["stream"],
            "additionalProperties": False,
            "properties": {
                "stream": {"type": "string"},
                "fields": {"type": "array", "items": {"type": "string"}, "default": ["id"]},
                "copy_to": {"type": "object", "additionalProperties": {"type": "string"}},
                "parents_per_partition": {
                    "type": "integer", "minimum": 1, "default": 10,
                    "description": "Unused (accepted for older files): a substream's "
                                   "partition is one partition of its parent, whose pages "
                                   "it reads, starting each parent's calls at once."},
            },
        },
    },
}

_BUDGET = {
    "type": "object",
    "required": ["calls", "period_seconds"],
    "additionalProperties": False,
    "properties": {
        "calls": {"type": "integer", "minimum": 1},
        "period_seconds": {"type": "number", "exclusiveMinimum": 0},
        "path_pattern": {"type": ["string", "null"],
                         "description": "Regular expression on the URL path; default: every "
                                        "call to the host."},
        "margin_seconds": {"type": "number", "minimum": 0, "default": 0.25,
                           "description": "Added to the window, for an API whose window "
                                          "edge or clock is coarser than ours (a call counts "
                                          "until one window after its answer anyway)."},
    },
}

SPEC: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "REST API (declarative)",
    "description": "Any JSON HTTP API declared in the connection file: auth, pagination, "
                   "streams with windows, cursors and substreams, and a call budget.",
    "type": "object",
    "required": ["base_url", "streams"],
    "additionalProperties": False,
    "properties": {
        "base_url": {"type": "string", "pattern": "^https?://"},
        "auth": _AUTH,
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "paginator": _PAGINATOR,
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "default": 30},
        "retries": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_attempts": {"type": "integer", "minimum": 1, "default": 5},
                "backoff_seconds": {"type": "number", "minimum": 0, "default": 0.5},
                "max_backoff_seconds": {"type": "number", "minimum": 0, "default": 60},
            },
        },
        "concurrency": {"type": "integer", "minimum": 1, "default": 10,
                        "description": "Requests in flight across the whole sync."},
        "rate_limit": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "budgets": {"type": "array", "items": _BUDGET},
                "redis_url": {**_secret("With it, one budget is shared exactly through "
                                        "Redis; without it, split across running tasks."),
                              "pattern": "^rediss?://"},
            },
        },
        "check_stream": {"type": "string", "description": "Stream `check` reads a page of."},
        "streams": {"type": "array", "minItems": 1, "items": _STREAM},
    },
}
