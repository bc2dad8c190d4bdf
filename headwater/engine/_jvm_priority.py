"""Spark's JVM started at a lower CPU priority than the reads that began before it.

On a local master a sync may start its reads before Spark (an Airbyte
connector's head start, a REST source's early calls: ``Source.prepare``), and
then those reads and Spark's start-up (the JVM, its class loading, the first
job) share the same cores.  The reads are the sync's critical path: Spark only
has to be ready by the time records wait for a task.  At equal priority the
two split the cores and the reads slow down; with Spark's JVM a few ``nice``
steps lower (``spark.early_reads_jvm_nice`` in the connection file), the
reads keep the cores they can use and Spark's start-up takes the rest.  The
price: for the whole sync Spark also yields to other programs on the machine,
which on a busy machine makes its share of the work (decoding, writing,
committing) slower; ``bench/RESULTS.md`` has both figures (the default, 5, not
10, for that reason).

Linux keeps a priority per thread, a child process starts with its creating
thread's, and lowering it cannot be undone without privileges.  So the JVM is
launched from a short-lived thread whose own priority is lowered: the
caller's threads (the early reads among them, where they are a thread) keep
theirs, and so does the early reads' own process, forked from the main thread
before the JVM starts.  Spark's Python
workers are the JVM's children and inherit its priority.  PySpark's builder
launches the JVM itself and offers no hook for the child's priority, but
``SparkContext`` accepts a gateway launched beforehand (``gateway=``), which
is what this module hands it; the session is then built as usual.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)


def lower_priority_possible() -> bool:
    """Whether a thread's priority can be lowered for the processes it starts (Linux)."""
    return sys.platform.startswith("linux") and hasattr(os, "setpriority")


def start_context_below(nice: int, conf: Mapping[str, str]) -> None:
    """Launch Spark's JVM ``nice`` below this thread's priority, and this process's
    ``SparkContext`` on it with ``conf`` (master and app name included), on the
    calling thread as the builder would (its SIGINT handler is the main thread's).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf()
    for key, value in conf.items():
        spark_conf.set(key, value)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hw-spark-launch") as launcher:
        gateway = launcher.submit(_launch_lowered, nice, launch_gateway, spark_conf).result()
    SparkContext(conf=spark_conf, gateway=gateway)


def _launch_lowered(nice: int, launch: Callable[[Any], Any], spark_conf: Any) -> Any:
    """``launch(spark_conf)`` from this (pool) thread, its priority lowered first."""
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + nice))
    except OSError as exc:  # a sandbox that forbids it: launch at the same priority
        log.debug("Spark's JVM keeps this process's CPU priority: %s", exc)
    return launch(spark_conf)
