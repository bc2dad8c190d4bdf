"""GCS and Azure end to end: a GCS emulator and Azurite on 127.0.0.1 into Delta.

The same sync runs against both stores: a gzip-compressed and a plain JSON Lines
object and a Parquet object land with their types, a second sync reads only the
object added since, and the store's credential (the GCS token, the Azure account
key inside the connection string) appears in no result, run record, state or log.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.errors import ConnectorError
from headwater.metadata_store import MetadataStore
from tests.integration._cli import LAKEHOUSE
from tests.integration.connectors.object_storage.conftest import (
    AZURE_KEY,
    GCS_TOKEN,
    AzureServer,
    GcsServer,
)
from tests.integration.connectors.object_storage.test_object_storage_sync import (
    connection,
    rows,
    run,
)
from tests.unit.connectors.object_storage.conftest import ROWS, encode

pytestmark = pytest.mark.spark

STREAMS = [{"name": "events", "globs": ["events/*"], "format": {"type": "jsonl"}},
           {"name": "table", "globs": ["table/*"], "format": {"type": "parquet"}}]
SECRETS = {"gcs": GCS_TOKEN, "azure": AZURE_KEY}


@pytest.mark.parametrize("store", ["gcs", "azure"])
def test_two_formats_land_typed_then_only_the_new_object_and_the_credential_stays_hidden(
        spark: Any, tmp_path: Path, request: pytest.FixtureRequest,
        caplog: pytest.LogCaptureFixture, store: str) -> None:
    server: GcsServer | AzureServer = request.getfixturevalue(f"{store}_server")
    fs = server.filesystem()
    bucket = f"landing-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    fs.pipe({f"{bucket}/events/day1.jsonl.gz": gzip.compress(encode(ROWS[:10], "jsonl")),
             f"{bucket}/events/day1b.jsonl": encode(ROWS[10:15], "jsonl"),
             f"{bucket}/table/day1.parquet": encode(ROWS, "parquet")})
    path = connection(tmp_path, server.source_config(bucket, streams=STREAMS),
                      ["events", "table"])
    caplog.set_level(logging.DEBUG)

    first = run(path)
    assert first.status == "succeeded", first.to_dict()
    read = {s.name: (s.records_read, s.records_rejected) for s in first.streams}
    assert read == {"events": (15, 0), "table": (len(ROWS), 0)}
    want = {"events": [("events/day1.jsonl.gz", i, r["id"], r["name"])
                       for i, r in enumerate(ROWS[:10])]
                      + [("events/day1b.jsonl", i, r["id"], r["name"])
                         for i, r in enumerate(ROWS[10:15])],
            "table": [("table/day1.parquet", i, r["id"], r["name"]) for i, r in enumerate(ROWS)]}
    for stream, expected in want.items():
        frame = spark.read.format("delta").load(str(tmp_path / LAKEHOUSE / stream))
        types = dict(frame.dtypes)
        assert (types["id"], types["name"], types["amount"], types["active"], types["at"]) == \
            ("bigint", "string", "double", "boolean", "timestamp"), (stream, types)
        got = sorted((r["_source_key"], r["_source_record"], r["id"], r["name"])
                     for r in frame.collect())
        assert got == sorted(expected), stream

    fs.pipe(f"{bucket}/events/day2.jsonl", encode(ROWS[15:20], "jsonl"))
    second = run(path)
    assert second.status == "succeeded", second.to_dict()
    assert {s.name: s.records_read for s in second.streams} == {"events": 5, "table": 0}
    landed = rows(spark, tmp_path, "events")
    assert sorted(r["id"] for r in landed) == [r["id"] for r in ROWS[:20]]
    assert sorted((r["_source_record"], r["id"]) for r in landed
                  if r["_source_key"] == "events/day2.jsonl") == \
        [(i, r["id"]) for i, r in enumerate(ROWS[15:20])]

    store_ = MetadataStore(load_connection(path).metadata_store or "")
    seen = json.dumps([first.to_dict(), second.to_dict(),
                       [r.__dict__ for r in store_.list_runs()],
                       store_.get_states(load_connection(path).name)], default=str)
    assert SECRETS[store] not in seen
    assert caplog.records, "the sync logged"
    assert SECRETS[store] not in caplog.text


def test_azure_refuses_a_wrong_key_with_an_error_that_does_not_show_it(
        spark: Any, tmp_path: Path, azure_server: AzureServer,
        caplog: pytest.LogCaptureFixture) -> None:
    container = f"landing-{uuid.uuid4().hex[:12]}"
    fs = azure_server.filesystem()
    fs.mkdir(container)
    fs.pipe(f"{container}/events/day1.jsonl", encode(ROWS[:3], "jsonl"))
    wrong = base64.b64encode(b"hw-test-wrong-azure-key-do-not-print").decode()
    source = azure_server.source_config(container, streams=STREAMS[:1])
    source["azure_connection_string"] = source["azure_connection_string"].replace(AZURE_KEY, wrong)
    path = connection(tmp_path, source, ["events"])
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConnectorError) as raised:
        run(path)
    assert "cannot list abfs://" in str(raised.value)
    assert "AuthorizationFailure" in str(raised.value)
    assert wrong not in str(raised.value)
    assert wrong not in caplog.text
