"""A JVM started below early reads runs, with its Python workers, at the lower priority;
the driver's own threads keep theirs, and the session is the one the builder makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from headwater.config import SparkConfig

EARLY_READS_NICE = SparkConfig().early_reads_jvm_nice

# A new JVM needs a process of its own: the test run's session already has one.
SCRIPT = """
import json, os, signal, sys
from headwater.engine import SparkSettings, get_spark

spark = get_spark(SparkSettings(jvm_nice=int(sys.argv[1]), jvm_log_path=None))
import pyarrow as pa

def priority(batches):
    import os
    for _ in batches:
        yield pa.RecordBatch.from_pydict({"nice": [os.getpriority(os.PRIO_PROCESS, 0)]})

workers = [row.nice for row in spark.range(0, 2, 1, 2).mapInArrow(priority, "nice long").collect()]
jvm = spark.sparkContext._gateway.proc.pid
print(json.dumps({
    "driver": os.getpriority(os.PRIO_PROCESS, 0),
    "jvm": os.getpriority(os.PRIO_PROCESS, jvm),
    "workers": workers,
    "sigint_is_pysparks": signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    "active_on_main_thread": spark.getActiveSession() is spark,
    "master": spark.sparkContext.master,
    "delta": spark.conf.get("spark.sql.extensions"),
}))
spark.stop()
"""


def test_a_jvm_started_below_early_reads_runs_lower_with_its_workers(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[3]), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(EARLY_READS_NICE)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    base = os.getpriority(os.PRIO_PROCESS, 0)
    lowered = min(19, base + EARLY_READS_NICE)
    assert seen["driver"] == base  # the caller's threads keep their priority
    assert seen["jvm"] == lowered
    assert seen["workers"] == [lowered, lowered]
    # The session is the builder's own: made on the main thread, with the usual settings.
    assert seen["sigint_is_pysparks"] and seen["active_on_main_thread"]
    assert seen["master"] == "local[*]"
    assert "DeltaSparkSessionExtension" in seen["delta"]


def test_the_shared_session_keeps_the_test_run_s_priority(spark: Any) -> None:
    """Without early reads (``jvm_nice`` 0) nothing changes priority."""
    def priority(batches: Any) -> Any:
        import os

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"nice": [os.getpriority(os.PRIO_PROCESS, 0)]})

    base = os.getpriority(os.PRIO_PROCESS, 0)
    rows = spark.range(0, 2, 1, 2).mapInArrow(priority, "nice long").collect()
    assert [row.nice for row in rows] == [base, base]
    jvm = spark.sparkContext._gateway.proc.pid
    assert os.getpriority(os.PRIO_PROCESS, jvm) == base
