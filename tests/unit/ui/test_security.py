"""The page's safety rules: loopback unless a token, the token on /api, no cross-site POST."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.errors import ConfigError
from headwater.ui import check_bind, create_app, is_loopback
from tests.unit.ui._client import PAGE_HEADERS, call

TOKEN = "a-long-ui-token-0123456789"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "shop.yaml").write_text(
        "name: shop\nsource: {type: sample, config: {users: 10}}\n"
        f"metadata_store: sqlite:///{tmp_path / 'meta.db'}\n")
    return tmp_path / "c"


def test_listening_beyond_loopback_needs_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(ConfigError, match="needs a token"):
        check_bind("0.0.0.0", None)


def test_with_a_token_the_api_needs_it_and_the_page_does_not(folder: Path) -> None:
    app = lambda: create_app(folder, token=TOKEN)  # noqa: E731 - a fresh app per request
    assert call(app(), "GET", "/api/connections")[0] == 401
    assert call(app(), "GET", "/api/connections",
                headers={"Authorization": "Bearer wrong"})[0] == 401
    status, body = call(app(), "GET", "/api/connections",
                        headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and [c["name"] for c in body["connections"]] == ["shop"]
    assert call(app(), "GET", "/")[0] == 200
    status, body = call(app(), "POST", "/api/connections/shop/streams/users/reset",
                        json={"confirm": "users"}, headers=PAGE_HEADERS)
    assert status == 401 and "token" in body["error"]


def test_without_a_token_the_api_answers(folder: Path) -> None:
    assert call(create_app(folder), "GET", "/api/connections")[0] == 200


def test_metrics_are_served_under_the_token_rule(folder: Path) -> None:
    status, text = call(create_app(folder), "GET", "/metrics")
    assert status == 200 and "# TYPE headwater_" in text
    assert call(create_app(folder, token=TOKEN), "GET", "/metrics")[0] == 401
    status, text = call(create_app(folder, token=TOKEN), "GET", "/metrics",
                        headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "# TYPE headwater_" in text


@pytest.mark.parametrize("headers", [
    {},                                                   # a cross-site form: no custom header
    {**PAGE_HEADERS, "Origin": "http://evil.example"},     # a cross-site fetch
    {**PAGE_HEADERS, "Sec-Fetch-Site": "cross-site"},
])
def test_a_post_from_another_site_is_refused(folder: Path, headers: dict[str, str]) -> None:
    status, body = call(create_app(folder), "POST",
                        "/api/connections/shop/streams/users/reset",
                        json={"confirm": "users"}, headers=headers)
    assert status == 403 and "refused" in body["error"]


def test_a_post_of_the_page_itself_passes(folder: Path) -> None:
    status, body = call(create_app(folder), "POST", "/api/connections/shop/streams/users/reset",
                        json={"confirm": "users"},
                        headers={**PAGE_HEADERS, "Sec-Fetch-Site": "same-origin"})
    assert status == 200 and body == {"connection": "shop", "reset": [], "before": None}


def test_an_answer_never_carries_a_registered_secret() -> None:
    from headwater.config import register_secrets
    from headwater.ui._app import answer

    secret = 'pa"ss\\word-0123456789-é'  # a quote, a backslash and non-ASCII: JSON escapes them
    register_secrets([secret])
    response = answer({"error": f"refused {secret}", secret: [{"nested": secret}]})
    assert response.text is not None
    decoded = json.dumps(json.loads(response.text), ensure_ascii=False)
    assert secret not in decoded and "word-0123456789" not in response.text
    assert response.text.count("**********") == 3


def test_without_a_token_a_request_naming_another_host_is_refused(folder: Path) -> None:
    """A DNS-rebinding page (evil.example re-pointed at 127.0.0.1) is not this server."""
    app = lambda: create_app(folder)  # noqa: E731 - a fresh app per request
    assert call(app(), "GET", "/api/connections")[0] == 200
    for host in ("localhost:8321", "127.0.0.1:8321", "[::1]:8321", "LOCALHOST"):
        assert call(app(), "GET", "/api/connections", headers={"Host": host})[0] == 200, host
    for host in ("evil.example:8321", "evil.example", "127.0.0.1.evil.example",
                 "192.168.1.4:8321"):
        status, body = call(app(), "GET", "/api/connections", headers={"Host": host})
        assert status == 403 and "Host header" in body["error"], host
        assert call(app(), "POST", "/api/connections/shop/sync",
                    headers={**PAGE_HEADERS, "Host": host,
                             "Origin": f"http://{host}"})[0] == 403, host


def test_with_a_token_the_host_name_does_not_matter(folder: Path) -> None:
    status, _ = call(create_app(folder, token=TOKEN), "GET", "/api/connections",
                     headers={"Host": "headwater.internal:8321",
                              "Authorization": f"Bearer {TOKEN}"})
    assert status == 200
