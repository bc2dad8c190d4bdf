"""A tiny Airbyte source connector: a real process speaking the protocol on stdout.

Tests start it through the ``airbyte`` source type's ``command`` option.  Its
config decides what it does (``fail: discover`` makes its ``discover`` exit 2):
``records`` rows of stream ``items`` (``id``,
``updated_at`` = ``id``), a STATE every ``state_every`` records, then either a
normal end, an error TRACE (``fail: trace``) or a crash (``fail: crash``, exit 3
without a word) after ``fail_after`` records.  With a state ``{"cursor": N}`` it
starts after record N.  ``compact: true`` prints messages without spaces, as
the Airbyte CDK does (so Headwater's bulk RECORD decoding sees them), and
``bad_id_at: N`` gives record N the id ``"not-a-number"``.  ``streams: N``
offers N such streams (``items``, ``items_2``...; ``read`` emits the one its
catalog names).  Started as ``fake_connector.py --invocations PATH <command>``,
it appends one line per start to PATH (the command, and for ``read`` the
stream), so tests can count how often Headwater starts it.  It needs only the standard library.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

COMPACT = {"separators": (",", ":")}
SPACED: dict = {}
style = SPACED


def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message, **style) + "\n")
    sys.stdout.flush()


SPEC = {
    "connectionSpecification": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "records": {"type": "integer"},
            "state_every": {"type": "integer"},
            "fail": {"type": "string", "enum": ["none", "trace", "crash", "discover"]},
            "fail_after": {"type": "integer"},
            "token": {"type": "string", "airbyte_secret": True},
            "compact": {"type": "boolean"},
            "bad_id_at": {"type": "integer"},
            "streams": {"type": "integer"},
        },
        "required": ["records"],
    }
}
STREAM = {
    "name": "items",
    "json_schema": {"type": "object", "properties": {
        "id": {"type": "integer"}, "updated_at": {"type": "integer"},
        "label": {"type": "string"}}},
    "supported_sync_modes": ["full_refresh", "incremental"],
    "source_defined_cursor": True,
    "default_cursor_field": ["updated_at"],
    "source_defined_primary_key": [["id"]],
}


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def main(args: list[str]) -> int:
    invocations = None
    if args[0] == "--invocations":
        invocations, args = args[1], args[2:]
    command = args[0]
    config = json.loads(Path(option(args, "--config")).read_text()) if command != "spec" \
        else {}
    catalog_path = option(args, "--catalog")
    name = json.loads(Path(catalog_path).read_text())["streams"][0]["stream"]["name"] \
        if catalog_path else "items"
    if invocations:
        with open(invocations, "a") as log:
            log.write(f"{command} {name}\n" if command == "read" else f"{command}\n")
    if command == "spec":
        emit({"type": "SPEC", "spec": SPEC})
        return 0
    global style
    style = COMPACT if config.get("compact") else SPACED
    if command == "check":
        ok = config.get("token") != "token-denied-7f3c"
        emit({"type": "CONNECTION_STATUS", "connectionStatus": {
            "status": "SUCCEEDED" if ok else "FAILED", "message": None if ok else "refused"}})
        return 0
    if command == "discover":
        if config.get("fail") == "discover":
            sys.stderr.write("discover refused\n")
            return 2
        more = [{**STREAM, "name": f"items_{n}"}
                for n in range(2, int(config.get("streams", 1)) + 1)]
        emit({"type": "CATALOG", "catalog": {"streams": [STREAM, *more]}})
        return 0
    state_path = option(args, "--state")
    start = 0
    if state_path:
        for message in json.loads(Path(state_path).read_text()):
            start = int(message["stream"]["stream_state"]["cursor"])
    emit({"type": "LOG", "log": {"level": "WARN",
                                 "message": f"fake connector starts after {start}"}})
    every = int(config.get("state_every", 10))
    fail = config.get("fail", "none")
    fail_after = int(config.get("fail_after", 0))
    for number in range(start + 1, int(config["records"]) + 1):
        if fail != "none" and number - start > fail_after:
            if fail == "crash":
                sys.stdout.write('{"type":"RECORD","record":{"stream":"ite')  # cut mid-line
                sys.stdout.flush()
                sys.exit(3)
            emit({"type": "TRACE", "trace": {"type": "ERROR", "emitted_at": time.time() * 1000,
                                             "error": {"message": "the fake API said no",
                                                       "failure_type": "system_error"}}})
            return 1
        emit({"type": "RECORD", "record": {"stream": name, "emitted_at": 0, "data": {
            "id": "not-a-number" if number == config.get("bad_id_at") else number,
            "updated_at": number, "label": f"item {number}"}}})
        if number % every == 0:
            emit({"type": "STATE", "state": {"type": "STREAM", "stream": {
                "stream_descriptor": {"name": name}, "stream_state": {"cursor": number}}}})
    emit({"type": "STATE", "state": {"type": "STREAM", "stream": {
        "stream_descriptor": {"name": name},
        "stream_state": {"cursor": max(start, int(config["records"]))}}}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
