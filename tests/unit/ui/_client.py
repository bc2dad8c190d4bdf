"""Call a page's app in-process with aiohttp's test client (no threads, no sockets left)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

#: What the page sends with every POST.
PAGE_HEADERS = {"X-Headwater-Request": "1"}


def call(app: web.Application, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    """``(status, JSON body or text)`` of one request to ``app``."""

    async def go() -> tuple[int, Any]:
        async with TestClient(TestServer(app)) as client:
            response = await client.request(method, path, **kwargs)
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()

    return asyncio.run(go())
