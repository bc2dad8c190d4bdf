"""Time PyIceberg append of 1M x 10 (SqlCatalog on SQLite, local FS), 3 runs + upsert of 100k rows."""
import os, shutil, sys, time, glob
sys.path.insert(0, os.path.dirname(__file__))
import pyarrow as pa
from bench_data import make
from pyiceberg.catalog.sql import SqlCatalog
W = "/tmp/hw19-research/tmp/bench-pyi"; shutil.rmtree(W, ignore_errors=True); os.makedirs(W)
t0 = time.time(); data = make(); print(f"generate arrow: {time.time()-t0:.2f}s, {data.nbytes/1e6:.0f} MB in memory")
cat = SqlCatalog("b", uri=f"sqlite:///{W}/c.db", warehouse=f"file://{W}/wh"); cat.create_namespace("b")
for i in range(3):
    t = cat.create_table(f"b.t{i}", schema=data.schema)
    t0 = time.time(); t.append(data, snapshot_properties={"headwater.marker": f"r{i}"}); dt = time.time() - t0
    files = glob.glob(f"{W}/wh/b/t{i}/data/*.parquet")
    print(f"run {i}: append 1M x 10: {dt:.2f}s  files={len(files)} size={sum(map(os.path.getsize, files))/1e6:.1f} MB")
t = cat.load_table("b.t0")
t0 = time.time(); n = t.scan().to_arrow().num_rows; print(f"scan 1M back: {time.time()-t0:.2f}s rows={n}")
from pyiceberg.schema import Schema
# upsert 100k rows (50k update, 50k new) into the 1M table (join on id)
up = make(100_000, start=950_000, seed=2)
t0 = time.time()
try:
    r = t.upsert(up, join_cols=["id"], snapshot_properties={"headwater.marker": "up"})
    print(f"upsert 100k into 1M: {time.time()-t0:.2f}s updated={r.rows_updated} inserted={r.rows_inserted}")
except Exception as e:
    print(f"upsert FAIL after {time.time()-t0:.2f}s: {type(e).__name__}: {str(e)[:200]}")
print("rows after:", cat.load_table("b.t0").scan().to_arrow().num_rows)
