"""Route 3: PyIceberg commits on a SqlCatalog (SQLite, optionally PostgreSQL via PYI_PG_URI).

usage: venvpyi/bin/python scripts/route3_pyiceberg.py
Prints OK/FAIL per step, snapshot ids/operations/markers after each commit.
"""
import os, shutil, sys, time, json
import pyarrow as pa, pyarrow.parquet as pq
import pyiceberg
from pyiceberg.catalog.sql import SqlCatalog

BASE = "/tmp/hw19-research"
W = f"{BASE}/tmp/r3"
shutil.rmtree(W, ignore_errors=True); os.makedirs(W)
print("pyiceberg", pyiceberg.__version__, "pyarrow", pa.__version__)

results = []
def step(name, fn):
    t = time.time()
    try:
        out = fn(); dt = time.time() - t
        print(f"OK   {name:52s} {dt:6.2f}s {'' if out is None else str(out)[:300]}", flush=True)
        results.append((name, "OK"))
    except Exception as e:
        dt = time.time() - t
        print(f"FAIL {name:52s} {dt:6.2f}s {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}", flush=True)
        results.append((name, "FAIL"))

def snaps(t):
    t.refresh()
    return [(s.summary.operation.value, s.summary.additional_properties.get("headwater.marker")) for s in t.snapshots()]

def arrow(a, b, extra=False):
    d = {"id": pa.array(range(a, b), pa.int64()), "v": pa.array([f"v{i}" for i in range(a, b)], pa.string())}
    if extra:
        d["extra"] = pa.array(["new"] * (b - a), pa.string())
    return pa.table(d)

cats = {"sqlite": SqlCatalog("pyi", uri=f"sqlite:///{W}/catalog.db", warehouse=f"file://{W}/wh-sqlite")}
if os.environ.get("PYI_PG_URI"):  # e.g. postgresql+psycopg2://u:p@127.0.0.1:5432/db
    cats["postgres"] = SqlCatalog("pyi", uri=os.environ["PYI_PG_URI"], warehouse=f"file://{W}/wh-pg")

for cname, cat in cats.items():
    P = f"[{cname}]"
    step(f"{P} create_namespace", lambda: cat.create_namespace("hw"))
    # identifier fields = primary key (required field), used by upsert defaults
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField, LongType, StringType
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType(), required=False),
                    identifier_field_ids=[1])
    step(f"{P} create_table", lambda: cat.create_table("hw.t", schema=schema, properties={"format-version": "2"}))
    t = cat.load_table("hw.t")
    req = lambda tb: tb.cast(pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())] +
                                        ([pa.field("extra", pa.string())] if "extra" in tb.column_names else [])))
    step(f"{P} append + snapshot_properties", lambda: (t.append(req(arrow(0, 10)), snapshot_properties={"headwater.marker": "p1-append"}), snaps(t))[1])
    step(f"{P} overwrite(all) + snapshot_properties", lambda: (t.overwrite(req(arrow(100, 105)), snapshot_properties={"headwater.marker": "p2-overwrite"}), snaps(t))[1])
    step(f"{P} upsert(join_cols=[id]) + snapshot_properties", lambda: (
        t.upsert(req(arrow(103, 108)).set_column(1, "v", pa.array(["u"] * 5)), join_cols=["id"],
                 snapshot_properties={"headwater.marker": "p3-upsert"}), snaps(t))[1])
    def addf():
        p = f"{W}/external-{cname}.parquet"
        pq.write_table(req(arrow(500, 503)), p)  # written by 'someone else' (e.g. a Spark task)
        t.add_files([p], snapshot_properties={"headwater.marker": "p4-add_files"})
        return snaps(t)
    step(f"{P} add_files(external parquet) + snapshot_properties", addf)
    def evolve():
        with t.update_schema() as u:
            u.union_by_name(req(arrow(0, 1, extra=True)).schema)
        t.append(req(arrow(600, 602, extra=True)), snapshot_properties={"headwater.marker": "p5-evolved"})
        return [f.name for f in t.schema().fields], snaps(t)[-2:]
    step(f"{P} schema evolution union_by_name + append", evolve)
    def one_tx():
        with t.transaction() as tx:
            tx.delete("id >= 500", snapshot_properties={"headwater.marker": "p6-tx"})
            tx.append(req(arrow(700, 701, extra=True)), snapshot_properties={"headwater.marker": "p6-tx"})
        return snaps(t)[-2:]
    step(f"{P} delete+append in one transaction (snapshots made)", one_tx)
    step(f"{P} read back scan().to_arrow()", lambda: sorted(cat.load_table("hw.t").scan().to_arrow()["id"].to_pylist()))
    step(f"{P} inspect.snapshots() summary", lambda: [dict(s)["headwater.marker"] if "headwater.marker" in dict(s) else None
                                                       for s in cat.load_table("hw.t").inspect.snapshots()["summary"].to_pylist()])
print("SUMMARY", json.dumps({"ok": sum(r[1] == "OK" for r in results), "total": len(results)}))
