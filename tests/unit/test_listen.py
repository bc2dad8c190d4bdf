"""Where Headwater's servers listen, and the URL each prints (``/metrics``, the web page)."""

from __future__ import annotations

import pytest

from headwater._listen import http_url, listen_address


@pytest.mark.parametrize(("text", "address"), [
    ("9108", ("127.0.0.1", 9108)), ("0.0.0.0:9108", ("0.0.0.0", 9108)),
    ("[::1]:9108", ("::1", 9108)), ("metrics.local:80", ("metrics.local", 80))])
def test_listen_address(text: str, address: tuple[str, int]) -> None:
    assert listen_address(text) == address


@pytest.mark.parametrize("text", ["", "host:", ":9108", "host:port", "70000", "0"])
def test_listen_address_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        listen_address(text)


@pytest.mark.parametrize(("host", "path", "url"), [
    ("127.0.0.1", "/metrics", "http://127.0.0.1:9108/metrics"),
    ("::1", "/metrics", "http://[::1]:9108/metrics"), ("0.0.0.0", "", "http://0.0.0.0:9108")])
def test_http_url_brackets_ipv6_hosts(host: str, path: str, url: str) -> None:
    assert http_url(host, 9108, path) == url
