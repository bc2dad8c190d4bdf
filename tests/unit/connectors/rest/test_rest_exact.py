"""API pages land as their text says, whichever way a page is decoded and typed (issue 35).

A REST page goes orjson's way, or ``json``'s where orjson refuses it (``NaN``, an
integer past 64 bits), or keeps numbers' literals where the stream has a decimal
(:mod:`headwater.json_numbers`); its records are typed in bulk, or by the engine's
general path where one has a key outside the schema.  Pages with each of those
triggers, and without, are served by a loopback HTTP server and read through the
``rest`` source and the engine's task code; every value must be what the
reference of :mod:`tests.unit.connectors._exact_cases` computed from its text
(decimals beyond a float's digits, integers past 2**53 and int64's edges,
date-times and dates at the calendar's edges).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headwater.config import validate_config
from headwater.connectors.rest import RestSource
from headwater.engine._task import TaskContext, read_partition
from headwater.sdk import PlanContext
from headwater.table_schema import arrow_schema_for
from tests.unit.connectors._exact_cases import (
    WITH_DECIMALS,
    WITHOUT_DECIMALS,
    Record,
    assert_lands,
    records,
    unfit,
)
from tests.unit.connectors._json_cases import differential


class Pages:
    """A loopback API answering every GET with the page set last (as bytes, unparsed)."""

    def __init__(self) -> None:
        self.body = b"{}"
        pages = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                body = pages.body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[Pages, RestSource]]:
    """The server and one source over it (a stream with decimals, one without)."""
    pages = Pages()
    config = {"base_url": pages.url, "retries": {"max_attempts": 1}, "streams": [
        {"name": name, "path": f"/{name}", "record_selector": "data",
         "schema": {"type": "object", "properties": columns}}
        for name, columns in (("with", WITH_DECIMALS), ("without", WITHOUT_DECIMALS))]}
    try:
        yield pages, RestSource(validate_config(RestSource.spec(), config,
                                                where="source.config"))
    finally:
        pages.close()


def landed(api: tuple[Pages, RestSource], name: str, page: bytes) -> list[Any]:
    """The page's rows as the engine's task lands them, in API order."""
    pages, rest = api
    pages.body = page
    stream = rest.stream(name)
    context = TaskContext(run_id="r", checkpoint_index=0,
                          data_schema=arrow_schema_for(stream.json_schema()))
    rows = [row for part in stream.plan(None, PlanContext())
            for row in pa.Table.from_batches(list(read_partition(stream, part, context)),
                                             schema=context.output_schema).to_pylist()]
    return [(row, row["_hw_notes"]) for row in rows]


@st.composite
def trigger(draw: st.DrawFn) -> Record:
    """A record no bulk way takes whole: an integer that is text, with (now and then) a
    key outside the schema holding what orjson refuses (``NaN``, past 64 bits)."""
    record = draw(unfit(1000))
    extra = draw(st.sampled_from([None, "NaN", "123456789012345678901234567890", '"x"']))
    if extra is None:
        return record
    return Record(record.text[:-1] + f',"extra":{extra}}}', record.lands,
                  record.notes | {("extra", extra.strip('"'))})


def page_of(rows: list[Record]) -> bytes:
    return ('{"data":[' + ",".join(row.text for row in rows) + "]}").encode()


@differential(40)
@given(st.data())
def test_pages_land_their_text_whichever_way_they_are_decoded(
        api: tuple[Pages, RestSource], data: st.DataObject) -> None:
    name, columns = data.draw(st.sampled_from([("with", WITH_DECIMALS),
                                               ("without", WITHOUT_DECIMALS)]))
    # orjson (a stream without decimals) reads 9007199254740993.0 as a float already.
    rows = [data.draw(records(columns, number, float_written=name == "with"))
            for number in range(data.draw(st.integers(1, 6)))]
    broken = list(rows)
    broken.insert(data.draw(st.integers(0, len(rows))), data.draw(trigger()))
    assert_lands(columns, landed(api, name, page_of(broken)), broken)
    assert_lands(columns, landed(api, name, page_of(rows)), rows)


def test_a_page_with_decimals_lands_them_exactly(api: tuple[Pages, RestSource]) -> None:
    """orjson made floats of a page's decimals (and ``json``, where orjson refused the
    page): 12345678901234567890.123456789012345678 landed as ...567000.000...."""
    page = (b'{"data":[{"id":1,"d":12345678901234567890.123456789012345678,'
            b'"i":9007199254740993},{"id":2,"d":-99999999999999999999.999999999999999999,'
            b'"i":123456789012345678901234567890,"o":{"d":12345678.91}}]}')
    rows = [row for row, _ in landed(api, "with", page)]
    assert [(row["d"], row["o"]) for row in rows] == [
        (Decimal("12345678901234567890.123456789012345678"), None),
        (Decimal("-99999999999999999999.999999999999999999"),
         {"d": Decimal("12345678.91"), "i": None, "b": None})]
    assert rows[0]["i"] == 9007199254740993 and rows[1]["i"] is None
    assert [(n["field"], n["value"]) for n in rows[1]["_hw_notes"]] == [
        ("i", "123456789012345678901234567890")]
