"""PyIceberg RestCatalog against the local REST server: read the table Spark wrote through it, append with a marker,
create+append+read a new table. usage: venvpyi/bin/python scripts/rest_pyiceberg.py [uri]"""
import sys, time
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
uri = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8181"
t0 = time.time(); cat = RestCatalog("rest", uri=uri); print(f"connect {time.time()-t0:.2f}s namespaces={cat.list_namespaces()}")
t = cat.load_table("hw.t")
print("Spark-written table via REST:", t.schema().column_names, sorted(t.scan().to_arrow()["id"].to_pylist()))
t.append(pa.table({"id": pa.array([999], pa.int64()), "v": ["py"], "extra": [None], "extra3": [None]},
                  schema=t.schema().as_arrow()), snapshot_properties={"headwater.marker": "py-rest-append"})
print("markers:", [s.summary.additional_properties.get("headwater.marker") for s in cat.load_table("hw.t").snapshots()])
if cat.table_exists("hw.py"): cat.purge_table("hw.py")
n = cat.create_table("hw.py", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
n.append(pa.table({"id": [1, 2], "v": ["a", "b"]}), snapshot_properties={"headwater.marker": "x"})
print("new table via REST:", n.scan().to_arrow().to_pylist(), n.current_snapshot().summary.additional_properties)
