"""CPU per page of HTTP client set-ups, bare (no Headwater), against the 50 ms test API.

Why the HTTP SDK sends through httpx's ``AsyncClient`` on aiohttp's transport
(``httpx-aiohttp``, headwater/sdk/http/_client.py): the same pages fetched by
httpx's threaded client, its asyncio client (httpcore on anyio), httpx over
aiohttp's transport, and aiohttp alone.  Each client keeps ``--in-flight``
requests going; each page is one call of 100 records, decoded as JSON.  The API
(tests/api_server.py) runs in a process of its own (bench/_api_process.py), so
this process's CPU is the client's.

Baseline: the ideal ``in_flight / latency`` pages/s.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import httpx
from httpx_aiohttp import HttpxAiohttpClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._api_process import ApiProcess
from bench._common import header, load_line, table
from tests.api_server import BASE_EPOCH, TOKEN

PER_PAGE = 100
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def _params(page: int) -> dict[str, int]:
    low = BASE_EPOCH + page * PER_PAGE
    return {"from": low, "to": low + PER_PAGE, "per_page": PER_PAGE}


def _limits(in_flight: int) -> httpx.Limits:
    return httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)


def httpx_threads(url: str, in_flight: int, pages: int) -> tuple[float, float]:
    with httpx.Client(base_url=url, headers=HEADERS, limits=_limits(in_flight)) as client, \
            ThreadPoolExecutor(in_flight) as pool:
        def one(page: int) -> int:
            return len(client.get("/events", params=_params(page)).json()["data"])

        list(pool.map(one, range(in_flight)))  # connections open before the clock
        cpu, wall = time.process_time(), time.perf_counter()
        list(pool.map(one, range(pages)))
        return time.process_time() - cpu, time.perf_counter() - wall


async def _timed(in_flight: int, pages: int,
                 one: Callable[[int], Awaitable[int]]) -> tuple[float, float]:
    slots = asyncio.Semaphore(in_flight)

    async def limited(page: int) -> int:
        async with slots:
            return await one(page)

    await asyncio.gather(*(limited(p) for p in range(in_flight)))
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(limited(p) for p in range(pages)))
    return time.process_time() - cpu, time.perf_counter() - wall


async def _httpx_async(client: httpx.AsyncClient, in_flight: int,
                       pages: int) -> tuple[float, float]:
    async with client:
        async def one(page: int) -> int:
            response = await client.get("/events", params=_params(page))
            return len(response.json()["data"])

        return await _timed(in_flight, pages, one)


def httpx_asyncio(url: str, in_flight: int, pages: int) -> tuple[float, float]:
    client = httpx.AsyncClient(base_url=url, headers=HEADERS, limits=_limits(in_flight))
    return asyncio.run(_httpx_async(client, in_flight, pages))


def httpx_on_aiohttp(url: str, in_flight: int, pages: int) -> tuple[float, float]:
    client = HttpxAiohttpClient(base_url=url, headers=HEADERS, limits=_limits(in_flight))
    return asyncio.run(_httpx_async(client, in_flight, pages))


def aiohttp_alone(url: str, in_flight: int, pages: int) -> tuple[float, float]:
    async def run() -> tuple[float, float]:
        async with aiohttp.ClientSession(url, headers=HEADERS, connector=aiohttp.TCPConnector(
                limit=in_flight)) as session:
            async def one(page: int) -> int:
                async with session.get("/events", params=_params(page)) as response:
                    return len((await response.json())["data"])

            return await _timed(in_flight, pages, one)

    return asyncio.run(run())


CLIENTS = {"httpx, threads": httpx_threads, "httpx, asyncio (httpcore)": httpx_asyncio,
           "httpx on aiohttp's transport (the SDK's)": httpx_on_aiohttp,
           "aiohttp alone": aiohttp_alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=800)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[16, 32])
    args = parser.parse_args()
    header("HTTP clients alone: CPU ms per page and pages/s vs the ideal in_flight/latency",
           sys.argv)
    rows = []
    with ApiProcess((args.pages + max(args.in_flight)) * PER_PAGE, args.latency) as api:
        for in_flight in args.in_flight:
            for name, fetch in CLIENTS.items():
                cpu, wall = fetch(api.url, in_flight, args.pages)
                ideal = in_flight / args.latency
                rows.append([name, in_flight, f"{1000 * cpu / args.pages:.2f}",
                             f"{args.pages / wall:.0f}", f"{args.pages / wall / ideal:.2f}"])
    print(table(["client", "in flight", "CPU ms/page", "pages/s", "pages/s / ideal"], rows))
    print(load_line())


if __name__ == "__main__":
    main()
