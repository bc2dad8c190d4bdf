"""A real Spark Connect server on 127.0.0.1, started from the pip package with Delta Lake.

The server is ``spark-submit --class ...SparkConnectServer`` (the pip package
carries the Connect jar but no ``sbin/start-connect-server.sh``), configured
the way Headwater configures a local session: the same Delta jars and session
extension, the same Python for its workers.  A client then talks to it over
gRPC only, so a sync that passes here has run every DataFrame, MERGE and
history query through Spark Connect.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from headwater.engine._spark import SparkSettings, _base_conf
from tests.integration._cluster import HOST, _stop, free_port

SPARK_SUBMIT = str(Path(sys.executable).with_name("spark-submit"))
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: A JVM that may resolve jars through Ivy, on a small shared machine.
START_TIMEOUT_S = 300.0


def spark_submit_args(master: str) -> list[str]:
    """``--master``, ``--packages``/``--jars`` and ``--conf`` flags for Delta on ``master``."""
    conf = _base_conf(SparkSettings(master=master))
    args = ["--master", master]
    if "spark.jars.packages" in conf:
        args += ["--packages", conf.pop("spark.jars.packages")]
    if "spark.jars" in conf:
        args += ["--jars", conf.pop("spark.jars")]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((HOST, port)) == 0


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """Run a Spark Connect server for the ``with`` block; yield its ``sc://`` URL."""
    port = free_port()
    log_path = folder / "connect-server.log"
    command = [
        SPARK_SUBMIT,
        "--class", CONNECT_SERVER_CLASS,
        *spark_submit_args("local[2]"),
        "--conf", f"spark.connect.grpc.binding.address={HOST}",
        "--conf", f"spark.connect.grpc.binding.port={port}",
    ]
    with log_path.open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not _listening(port):
                if server.poll() is not None:
                    raise RuntimeError(f"the Spark Connect server exited with "
                                       f"{server.returncode}:\n{log_path.read_text()[-4000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no Spark Connect server on {HOST}:{port} after "
                                       f"{START_TIMEOUT_S:.0f} s; see {log_path}")
                time.sleep(0.5)
            yield f"sc://{HOST}:{port}"
        finally:
            _stop(server)
