"""A real Spark standalone cluster on 127.0.0.1, from the pip package alone.

One master and two workers (by default), each its own JVM started with
``spark-class`` (the pip package has no ``sbin/start-*.sh``).  Executors the
workers launch are separate JVMs with their own Python workers, so a sync that
passes here has had its partitions and readers pickled, shipped and run in
processes that share nothing with the driver but the file system (or the
object store).  With two workers an application's tasks run in two executors
at once, and two applications can run side by side (``spark.cores.max=1``
each).  Each worker is small (1 core, 1 GiB): the machine running the suite has
2 cores.

Everything listens on loopback only, on free ports; logs and the workers' one
work dir (executor folders are ``<app id>/<executor id>``, unique across
workers) go into a folder the caller gives.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

HOST = "127.0.0.1"
SPARK_CLASS = str(Path(sys.executable).with_name("spark-class"))
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: Two JVMs starting on a small shared machine: give them time.
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
#: What an executor logs (at INFO, its default) when it starts a mapInArrow task's Python.
PYTHON_TASK_STARTED = re.compile(r"MapInBatchEvaluator.*Starting Python task execution")


@dataclass(frozen=True)
class StandaloneCluster:
    """A running master and its workers: where to submit, where to look afterwards."""

    master_url: str
    web_ui_url: str
    work_dir: Path
    log_dir: Path

    def status(self) -> dict[str, Any]:
        """The master's web UI JSON: workers, active and completed applications."""
        with urllib.request.urlopen(f"{self.web_ui_url}/json/", timeout=5) as response:
            document: dict[str, Any] = json.load(response)
        return document

    def executor_dirs(self, app_name: str) -> list[Path]:
        """The work-dir folder of every executor the workers launched for the applications
        named ``app_name`` (``headwater-<connection>``): the cluster is the test run's, so
        other tests' applications are in the same work dir."""
        status = self.status()
        applications = status.get("completedapps", []) + status.get("activeapps", [])
        ids = [app["id"] for app in applications if app["name"] == app_name]
        return [d for app_id in ids for d in (self.work_dir / app_id).glob("*") if d.is_dir()]

    def python_tasks_started(self, app_name: str) -> int:
        """How many mapInArrow Python tasks the executors of ``app_name`` started, from their
        logs: a sync whose partitions were all read there started at least one per partition."""
        executors = self.executor_dirs(app_name)
        assert executors, f"{app_name} did not run on {self.master_url}"
        return sum(len(PYTHON_TASK_STARTED.findall((d / "stderr").read_text(errors="replace")))
                   for d in executors if (d / "stderr").is_file())


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _start(args: list[str], log: TextIO, env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A session of its own, so the worker's executors (its children) can be stopped with it.
    return subprocess.Popen(
        [SPARK_CLASS, *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (Spark's shutdown hooks stop executors), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_TIMEOUT_S)
    # Executors may outlive a worker that was slow to stop them; they are ours to end.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _wait_for_workers(
    cluster: StandaloneCluster, processes: dict[str, subprocess.Popen[bytes]], workers: int
) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                log = (cluster.log_dir / f"{name}.log").read_text()[-4000:]
                raise RuntimeError(f"the Spark {name} exited with {process.returncode}:\n{log}")
        try:
            if cluster.status().get("aliveworkers", 0) >= workers:
                return
        except (urllib.error.URLError, OSError, ValueError):
            pass  # the master's web UI is not up yet
        time.sleep(0.5)
    raise RuntimeError(
        f"fewer than {workers} workers registered with {cluster.master_url} in "
        f"{START_TIMEOUT_S:.0f} s; see {cluster.log_dir}"
    )


@contextlib.contextmanager
def standalone_cluster(
    folder: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[StandaloneCluster]:
    """Run a master and ``workers`` workers (``cores`` and ``memory`` each) for the
    ``with`` block; all are stopped on the way out.

    Yields once every worker has registered, so an application submitted at
    once gets executors.
    """
    port, ui_port = free_port(), free_port()
    log_dir = folder / "cluster-logs"
    work_dir = folder / "cluster-work"
    log_dir.mkdir(parents=True, exist_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    cluster = StandaloneCluster(
        master_url=f"spark://{HOST}:{port}",
        web_ui_url=f"http://{HOST}:{ui_port}",
        work_dir=work_dir,
        log_dir=log_dir,
    )
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOCAL_HOSTNAME": HOST,
        "PYSPARK_PYTHON": sys.executable,
    }
    started: dict[str, subprocess.Popen[bytes]] = {}
    with contextlib.ExitStack() as logs:
        def log(name: str) -> TextIO:
            return logs.enter_context((log_dir / f"{name}.log").open("w"))

        try:
            started["master"] = _start(
                [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(ui_port)],
                log("master"),
                env,
            )
            for number in range(1, workers + 1):
                started[f"worker-{number}"] = _start(
                    [
                        WORKER_CLASS,
                        cluster.master_url,
                        "--host",
                        HOST,
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(work_dir),
                    ],
                    log(f"worker-{number}"),
                    env,
                )
            _wait_for_workers(cluster, started, workers)
            yield cluster
        finally:
            for process in reversed(started.values()):
                _stop(process)
