"""A stream of the files destination read from outside Headwater: plain pyarrow following
the manifests, exactly as ``docs/destinations/files.md`` shows it (nothing of Headwater is
imported here, so a test that reads through this proves what any reader sees)."""

from __future__ import annotations

import base64
import json
import pathlib

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq


def read_stream(folder: str) -> pa.Table:
    # --- the documented reader (docs/destinations/files.md), verbatim ---
    logged = sorted(pathlib.Path(folder, "_manifests").glob("*.json"))
    manifests = [json.loads(p.read_text()) for p in logged]
    start = max((i for i, m in enumerate(manifests) if m["replace"]), default=0)
    tables = []
    for m in manifests[start:]:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(m["arrow_schema"])))
        for f in m["files"]:
            path = f"{folder}/{f['path']}"
            if m["format"] == "parquet":
                tables.append(pq.read_table(path, schema=schema))
            elif m["format"] == "jsonl":
                options = pjson.ParseOptions(explicit_schema=schema)
                tables.append(pjson.read_json(path, parse_options=options))
            else:  # csv: nested values are JSON text
                types = {c.name: pa.string() if pa.types.is_nested(c.type) else c.type
                         for c in schema}
                tables.append(pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
                    column_types=types, null_values=[""], strings_can_be_null=True,
                    quoted_strings_can_be_null=False)))
    return pa.concat_tables(tables, promote_options="permissive")
    # --- end of the documented reader ---
