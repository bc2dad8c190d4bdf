"""The first ``/metrics`` scrape of a ``headwater ui DIR`` process (issue 39: under 1 s).

Prometheus scrapes a process it has just started (a new pod, a restart) with the
same timeout as any other, so the first scrape matters as much as the rest.  Seeds a
SQLite store as ``bench/ui_pages.py`` does (``--runs`` runs over 10 connections, each
with ``--partitions`` partitions in checkpoints of 10), then ``--repeat`` times: starts
the real command (``HEADWATER ui DIR --port P``, a process of its own), waits until it
answers ``/``, and times its first ``/metrics`` and its second.  Each line ends with
the 1-minute load average: the machine is shared.

Run: ``.venv/bin/python bench/first_metrics.py [--runs 10000] [--headwater .venv/bin/headwater]``
(``--headwater`` again, another clone's command: each measured in turn on the same seed).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine_line
from bench.ui_pages import seed, write_connections


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def one_process(command: str, folder: Path) -> tuple[float, float]:
    """Start ``command ui folder``; the first and the second ``/metrics``, in ms."""
    port = _free_port()
    process = subprocess.Popen([command, "ui", str(folder), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    client.get("/")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError("headwater ui did not start") from None
                    time.sleep(0.05)
            timed = []
            for _ in range(2):
                began = time.perf_counter()
                answer = client.get("/metrics")
                timed.append((time.perf_counter() - began) * 1000)
                answer.raise_for_status()
            return timed[0], timed[1]
    finally:
        process.terminate()
        process.wait(30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--headwater", action="append",
                        help="the command to measure (again: several, taken in turn)")
    args = parser.parse_args(argv)
    commands = args.headwater or [str(Path(sys.executable).with_name("headwater"))]
    with tempfile.TemporaryDirectory(prefix="hw-first-metrics-") as tmp:
        folder = Path(tmp) / "connections"
        folder.mkdir()
        url = f"sqlite:///{Path(tmp) / 'meta.db'}"
        names = write_connections(folder, url, 10)
        seed(url, names, args.runs, args.partitions, set(), 0)
        print(machine_line())
        print(f"{args.runs:,} runs, {args.runs * args.partitions:,} partition rows")
        firsts: dict[str, list[float]] = {command: [] for command in commands}
        for _ in range(args.repeat):
            for command in commands:  # in turn: each sees the same load, more or less
                first, second = one_process(command, folder)
                firsts[command].append(first)
                print(f"{command}: first /metrics {first:,.0f} ms, second {second:,.0f} ms, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        for command, found in firsts.items():
            print(f"{command}: median first /metrics {statistics.median(found):,.0f} ms")

if __name__ == "__main__":
    main()
