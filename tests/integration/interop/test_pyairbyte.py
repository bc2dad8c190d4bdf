"""PyAirbyte runs a Headwater source as a local executable connector and reads its records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from headwater.connectors.sample import SampleSource
from tests.integration.interop.pyairbyte_env import pyairbyte_environment, pyairbyte_python

READ = """
import json, sys
import airbyte as ab
source = ab.get_source("source-headwater-sample", local_executable=sys.argv[1],
                       config=json.loads(sys.argv[2]), streams=["users", "orders"])
source.check()
read = {}
for name in ("users", "orders"):
    records = list(source.get_records(name))
    read[name] = sorted(int(record["id"]) for record in records)
print(json.dumps(read))
"""


def test_pyairbyte_reads_the_sample_source_through_the_airbyte_command(tmp_path: Path) -> None:
    python = pyairbyte_python()
    connector = tmp_path / "source-headwater-sample"
    headwater = Path(sys.executable).with_name("headwater")
    connector.write_text(f'#!/bin/sh\nexec "{headwater}" airbyte sample "$@"\n')
    connector.chmod(0o755)
    config = {"users": 35, "orders": 12, "rows_per_partition": 10}
    done = subprocess.run([str(python), "-c", READ, str(connector), json.dumps(config)],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env=pyairbyte_environment())
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    source = SampleSource(config)
    for name in ("users", "orders"):
        assert read[name] == source.expected_rows(name).column("id").to_pylist()
