"""Where a server of Headwater's listens: ``/metrics`` (``serve --metrics``) and the web page
(``headwater ui``).

Both read a listen address and print the URL they answer at; the rules are
one, here: a bare port is on loopback (what either server shows names every
connection and stream, so it is not put on the network unless asked), and an
IPv6 address is written in brackets in a URL (RFC 3986), else its colons would
read as a port.
"""

from __future__ import annotations

#: The address a server listens on unless told otherwise.
LOOPBACK = "127.0.0.1"


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``[v6]:PORT``) as ``(host, port)``; a bare ``PORT`` is on loopback.

    >>> listen_address("9108"), listen_address("[::1]:9108")
    (('127.0.0.1', 9108), ('::1', 9108))
    """
    host, colon, port = text.rpartition(":")
    host = host.strip("[]") if colon else LOOPBACK
    if not port.isdigit() or not 0 < int(port) < 65536 or (colon and not host):
        raise ValueError(f"expected HOST:PORT or PORT, got {text!r}")
    return host, int(port)


def http_url(host: str, port: int, path: str = "") -> str:
    """The URL of a server listening on ``host``:``port``, with ``path`` (``""`` or ``/...``).

    >>> http_url("::1", 9108, "/metrics")
    'http://[::1]:9108/metrics'
    """
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


__all__ = ["LOOPBACK", "http_url", "listen_address"]
