"""The HTTP client against a real server on 127.0.0.1: auth, pages, retries, errors, budgets."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from headwater.errors import AuthenticationError, ConnectorError
from headwater.sdk.http import (
    ApiKeyAuth,
    BearerAuth,
    CallBudget,
    HttpClient,
    HttpSettings,
    LinkHeaderPaginator,
    NextUrlPaginator,
    OAuth2Auth,
    PageNumberPaginator,
)
from headwater.sdk.http._client import _AsyncClient, _request_url, decode_json
from tests.api_server import CLIENT_ID, CLIENT_SECRET, TOKEN, ApiServer, Fault

WINDOW = {"start_modified_at": 0, "end_modified_at": 2**40, "per_page": 5}


def client(api: ApiServer, **options: Any) -> HttpClient:
    settings: dict[str, Any] = {"base_url": api.url, "auth": BearerAuth(TOKEN),
                                "backoff_s": 0.01, "max_backoff_s": 0.05, **options}
    return HttpClient(HttpSettings(**settings))


def ids(pages: Any) -> list[int]:
    return [r["id"] for page in pages for r in page.records]


def test_next_url_in_body_pages_through_everything(api: ApiServer) -> None:
    with client(api) as http:
        got = ids(http.pages("/v3/surveys", WINDOW, NextUrlPaginator("links.next"), "data"))
    assert got == sorted(api.data.surveys)
    assert len(api.calls) == 3  # 12 surveys, 5 per page


def test_link_header_pagination(api: ApiServer) -> None:
    with client(api) as http:
        pages = list(http.pages("/repos/acme/widgets/issues", {"per_page": 10},
                                LinkHeaderPaginator(), None))
    assert [r["number"] for p in pages for r in p.records] == list(range(1, 26))
    assert len(pages) == 3


def test_page_number_stops_on_a_short_page(api: ApiServer) -> None:
    with client(api) as http:
        got = ids(http.pages("/v3/surveys", {"start_modified_at": 0},
                             PageNumberPaginator(page_size=4), "data"))
    assert got == sorted(api.data.surveys)


def test_a_repeating_token_is_refused(api: ApiServer) -> None:
    # The surveys endpoint ignores `offset_page`, so the page number never changes the page;
    # a next_url pointing at itself is the same: the base class must stop it.
    paginator = NextUrlPaginator("links.self")
    original = api._enveloped

    def self_link(path: str, query: Any, rows: Any) -> Any:
        status, headers, body = original(path, query, rows)
        body["links"]["self"] = f"{api.url}{path}?per_page=5"
        return status, headers, body

    api._enveloped = self_link  # type: ignore[method-assign]
    with client(api) as http, pytest.raises(ConnectorError, match="did not advance"):
        list(http.pages("/v3/surveys", {"per_page": 5}, paginator, "data"))


def test_wrong_token_is_an_authentication_error(api: ApiServer) -> None:
    with client(api, auth=BearerAuth("wrong")) as http, \
            pytest.raises(AuthenticationError, match="HTTP 401") as caught:
        http.get("/v3/surveys")
    assert "wrong" not in str(caught.value)
    assert len(api.calls) == 1  # never retried


def test_429_waits_for_retry_after_then_succeeds(api: ApiServer) -> None:
    api.faults.append(Fault("/v3/surveys", status=429, times=1, retry_after=0.5))
    with client(api) as http:
        assert http.get("/v3/surveys", WINDOW).status_code == 200
    (first, _, status), (second, _, ok) = api.calls
    assert (status, ok) == (429, 200)
    assert second - first >= 0.5  # the server's Retry-After was honoured


def test_500s_and_timeouts_are_retried(api: ApiServer) -> None:
    api.faults += [Fault("/v3/surveys", status=500, times=2),
                   Fault("/v3/surveys", status=0, delay_s=1.5, times=1)]
    with client(api, timeout_s=0.5, max_attempts=8) as http:
        assert http.get("/v3/surveys", WINDOW).status_code == 200
    (_, _, first), (failed_at, _, second), (ok_at, _, ok) = api.calls[:3]
    assert (first, second, ok) == (500, 500, 200)
    assert ok_at - failed_at >= 0.5  # in between, an attempt waited for its timeout


def test_exhausted_retries_name_the_masked_url_and_status(api: ApiServer) -> None:
    api.faults.append(Fault("/v3/surveys", status=503, times=10))
    auth = ApiKeyAuth("api_key", TOKEN, where="query")
    with client(api, auth=auth, max_attempts=3) as http, \
            pytest.raises(ConnectorError) as caught:
        http.get("/v3/surveys", {"per_page": 1})
    message = str(caught.value)
    assert "failed after 3 attempts" in message and "HTTP 503" in message
    assert f"GET {api.url}/v3/surveys?per_page=1" in message
    assert TOKEN not in message


def test_oauth2_client_credentials_fetch_a_token_once(api: ApiServer) -> None:
    auth = OAuth2Auth(token_url=f"{api.url}/oauth/token", client_id=CLIENT_ID,
                      client_secret=CLIENT_SECRET)
    with client(api, auth=auth) as http:
        for _ in range(3):
            assert http.get("/v3/surveys", WINDOW).status_code == 200
    assert api.token_requests == 1


def test_oauth2_refused_client_secret_is_an_authentication_error(api: ApiServer) -> None:
    auth = OAuth2Auth(token_url=f"{api.url}/oauth/token", client_id=CLIENT_ID,
                      client_secret="nope")
    with client(api, auth=auth) as http, pytest.raises(AuthenticationError, match="token"):
        http.get("/v3/surveys")


def test_budget_holds_for_threads_sharing_a_process(api: ApiServer) -> None:
    budget = CallBudget(calls=8, period_s=0.5)
    with client(api, budgets=(budget,), concurrency=4) as http:
        threads = [threading.Thread(target=lambda: [http.get("/v3/surveys", WINDOW)
                                                    for _ in range(6)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(api.calls) == 24
    assert api.max_calls_in_window(0.5) <= 8


def test_budget_is_split_across_tasks(api: ApiServer) -> None:
    budget = CallBudget(calls=8, period_s=0.5)
    with HttpClient(HttpSettings(base_url=api.url, auth=BearerAuth(TOKEN), budgets=(budget,)),
                    tasks=4) as http:
        for _ in range(6):
            http.get("/v3/surveys", WINDOW)
    # One task of four gets 2 calls per window: 6 calls need three windows.
    assert api.max_calls_in_window(0.5) <= 2


def test_page_bodies_decode_as_json_does_beyond_what_orjson_takes() -> None:
    assert decode_json(b'{"data": [{"id": 1, "x": 1.5, "s": "\\u00e9"}]}') == {
        "data": [{"id": 1, "x": 1.5, "s": "\u00e9"}]}
    huge = 2**70
    assert decode_json(f'{{"id": {huge}}}'.encode()) == {"id": huge}
    # orjson read these as floats (2**70 is one exactly; these are not), unsaid:
    for past in (2**70 + 1, -(2**63) - 1, 2**64):
        decoded = decode_json(f'{{"id": {past}, "x": 1.5}}'.encode())["id"]
        assert (type(decoded), decoded) == (int, past)
    assert math.isnan(decode_json(b'{"v": NaN}')["v"])
    with pytest.raises(ValueError):
        decode_json(b"<html>not json</html>")


def test_a_blocking_call_on_the_clients_own_loop_is_refused(api: ApiServer) -> None:
    with client(api) as http:
        async def blocking() -> Any:
            return http.get("/v3/surveys", WINDOW)  # would wait on the loop it runs on

        with pytest.raises(RuntimeError, match="async methods"):
            http.submit(blocking()).result(timeout=30)
        assert http.get("/v3/surveys", WINDOW).status_code == 200  # the loop still serves


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8080", "https://api.example.com/v2/",
                                      "https://user:p%40ss@API.example.com:8443/v1",
                                      "http://[::1]:8080/a%20b", "http://h/base?key=1",
                                      "http://h/a#frag"])
@pytest.mark.parametrize(("url", "params"), [
    ("/v3/surveys/123/responses", {"per_page": 50}),
    ("v3/surveys", None),
    ("/", {}),
    ("/v3/y", {"a": []}),
    ("/v3/z", {"a": [], "b": "x y"}),
    ("/v3/x", {"q": "a b&c=d/é+%20", "t": True, "f": False, "n": None, "l": [1, "2"],
               "e": "", "r": 1.5}),
    ("/a/./b/../c", {"a": 1}),
    ("/.well-known/x", None),
    ("/a b/é", {"a": 1}),
    ("/a?x=1", {"y": 2}),
    ("https://other.example.com/next?cursor=abc", None),
    ("//other.example.com/x", {"a": 1}),
])
def test_request_urls_are_httpxs_own(base_url: str, url: str,
                                     params: dict[str, Any] | None) -> None:
    """The once-parsed request URL is, character for character, what httpx builds."""
    http = _AsyncClient(base_url=base_url)
    expected = http.build_request("GET", url, params=params)
    target = _request_url(http, url, params)
    got = http.build_request("GET", target, params=params if isinstance(target, str) else None)
    assert str(got.url) == str(expected.url)
    assert got.headers == expected.headers


def test_a_plain_path_is_parsed_once_by_headwater() -> None:
    http = _AsyncClient(base_url="http://127.0.0.1:8080/api")
    assert isinstance(_request_url(http, "/v3/surveys/7/responses", {"per_page": 50}),
                      httpx.URL)


class _CookieHandler(BaseHTTPRequestHandler):
    """Sets a session cookie on ``/login``; echoes the Cookie header it got elsewhere."""

    def do_GET(self) -> None:
        body = json.dumps({"cookie": self.headers.get("Cookie")}).encode()
        self.send_response(200)
        if self.path == "/login":
            self.send_header("Set-Cookie", "session=s3cr3t; Path=/")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_cookies_an_api_sets_are_sent_back() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CookieHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with HttpClient(HttpSettings(base_url=url)) as http:
            assert http.get("/before").json() == {"cookie": None}
            http.get("/login")
            assert http.get("/after").json() == {"cookie": "session=s3cr3t"}
    finally:
        server.shutdown()
        server.server_close()
