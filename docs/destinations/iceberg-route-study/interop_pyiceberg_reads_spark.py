"""PyIceberg (no JVM) reads tables Spark (route 2) wrote: the JDBC catalog on SQLite via SqlCatalog
(same catalog name => same rows in iceberg_tables), the Hadoop-catalog table via StaticTable.
usage: venvpyi/bin/python scripts/interop_pyiceberg_reads_spark.py [route2 warehouse dir]"""
import glob, sys
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable
W = sys.argv[1] if len(sys.argv) > 1 else "/tmp/hw19-research/tmp/r2-1.12.0-iceberg-first"
cat = SqlCatalog("icesql", uri=f"sqlite:///{W}/iceberg_catalog.db", warehouse=f"file://{W}/ice-sqlite")
t = cat.load_table("hw.t")
print("pyiceberg reads Spark JDBC(sqlite) table:", t.schema().column_names, sorted(t.scan().to_arrow()["id"].to_pylist()))
print("markers:", [s.summary.additional_properties.get("headwater.marker") for s in t.snapshots()])
m = sorted(glob.glob(f"{W}/ice-hadoop/hw/t/metadata/v*.metadata.json"), key=lambda p: int(p.rsplit("/v", 1)[1].split(".")[0]))[-1]
st = StaticTable.from_metadata(m)
print("StaticTable reads Spark Hadoop-catalog table:", m.rsplit("/", 1)[1], sorted(st.scan().to_arrow()["id"].to_pylist()))
