"""An Airbyte source connector that keeps GLOBAL state, like a CDC source.

A real process speaking the protocol on stdout (compact JSON, as the Airbyte
CDK prints it), standard library only.  Stream ``events``: each read emits
``records`` events after the state it is given, then one GLOBAL state:

* ``shared_state: {"lsn": N}``: a log position shared by all streams; each
  event's ``lsn`` continues from it (first read: from 1000, step 10);
* ``stream_states: [{"events": {"last_id": K}}]``: event ids continue from K.

So the events of a read show which state it was given: without the shared
part they would restart at lsn 1010.  A STREAM-form state is refused with an
error trace, as a CDC connector cannot resume from it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

STREAM = {
    "name": "events",
    "json_schema": {"type": "object", "properties": {
        "id": {"type": "integer"}, "lsn": {"type": "integer"}, "seen_lsn": {"type": "integer"}}},
    "supported_sync_modes": ["full_refresh", "incremental"],
    "source_defined_cursor": True,
    "default_cursor_field": ["lsn"],
    "source_defined_primary_key": [["id"]],
}
SPEC = {"connectionSpecification": {
    "type": "object", "properties": {"records": {"type": "integer"}}, "required": ["records"]}}


def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def given_state(path: str | None) -> tuple[int, int]:
    """(lsn, last_id) from a GLOBAL state file; (1000, 0) without one."""
    if path is None:
        return 1000, 0
    (message,) = json.loads(Path(path).read_text())
    if message.get("type") != "GLOBAL":
        emit({"type": "TRACE", "trace": {"type": "ERROR", "emitted_at": time.time() * 1000,
                                         "error": {"message": "expected a GLOBAL state, got "
                                                   f"{message.get('type')}"}}})
        sys.exit(1)
    glob = message["global"]
    (part,) = glob["stream_states"]
    return int(glob["shared_state"]["lsn"]), int(part["stream_state"]["last_id"])


def main(args: list[str]) -> int:
    if args[0] == "spec":
        emit({"type": "SPEC", "spec": SPEC})
        return 0
    config = json.loads(Path(option(args, "--config") or "").read_text())
    if args[0] == "check":
        emit({"type": "CONNECTION_STATUS", "connectionStatus": {"status": "SUCCEEDED"}})
        return 0
    if args[0] == "discover":
        emit({"type": "CATALOG", "catalog": {"streams": [STREAM]}})
        return 0
    lsn, last_id = given_state(option(args, "--state"))
    seen = lsn
    for _ in range(int(config["records"])):
        lsn += 10
        last_id += 1
        emit({"type": "RECORD", "record": {"stream": "events", "emitted_at": 0, "data": {
            "id": last_id, "lsn": lsn, "seen_lsn": seen}}})
    emit({"type": "STATE", "state": {"type": "GLOBAL", "global": {
        "shared_state": {"lsn": lsn},
        "stream_states": [{"stream_descriptor": {"name": "events"},
                           "stream_state": {"last_id": last_id}}]}}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
