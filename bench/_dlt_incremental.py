"""dlt's incremental ``sql_table`` -> Delta, one run; executed by the dlt venv's Python.

Not imported by Headwater: ``postgres_incremental_vs_dlt.py`` runs it as
``.bench-venvs/dlt/bin/python bench/_dlt_incremental.py ...`` (made by
``bench/setup-alternatives dlt``), a new process each time, so its wall time
includes Python start and dlt's imports, as a user's ``python pipeline.py`` would.

dlt's own advice for speed is the ``pyarrow`` backend (rows to Arrow, Parquet
straight to the destination, no per-row normalisation); the ``delta`` table
format of the ``filesystem`` destination is dlt's way to Delta Lake (delta-rs).
The incremental cursor keeps its last value in the pipeline's state (in
``--pipelines-dir`` and in the destination), as dlt documents.

Prints one JSON line: the seconds of ``pipeline.run`` (the inner time) and the
rows dlt reports loaded.
"""

from __future__ import annotations

import argparse
import json
import time

began = time.perf_counter()

import dlt  # noqa: E402
from dlt.sources.sql_database import sql_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="SQLAlchemy URL of the database")
    parser.add_argument("--table", required=True)
    parser.add_argument("--cursor", required=True)
    parser.add_argument("--primary-key", default="id")
    parser.add_argument("--lake", required=True, help="folder of the Delta tables")
    parser.add_argument("--pipelines-dir", required=True)
    parser.add_argument("--backend", default="pyarrow")
    parser.add_argument("--chunk-size", type=int, default=100_000)
    args = parser.parse_args()
    imported = time.perf_counter()
    resource = sql_table(credentials=args.url, table=args.table, backend=args.backend,
                         chunk_size=args.chunk_size, primary_key=args.primary_key,
                         incremental=dlt.sources.incremental(args.cursor))
    pipeline = dlt.pipeline(pipeline_name="bench_incremental",
                            destination=dlt.destinations.filesystem(bucket_url=args.lake),
                            dataset_name="bench", pipelines_dir=args.pipelines_dir)
    info = pipeline.run(resource, table_format="delta", write_disposition="append")
    done = time.perf_counter()
    rows = pipeline.last_trace.last_normalize_info.row_counts.get(args.table, 0) \
        if pipeline.last_trace and pipeline.last_trace.last_normalize_info else None
    print(json.dumps({"import_s": round(imported - began, 3), "run_s": round(done - imported, 3),
                      "rows": rows, "failed": info.has_failed_jobs}))


if __name__ == "__main__":
    main()
