"""Route 1 probe: can an iceberg-spark-runtime jar do CREATE/INSERT/MERGE/INSERT OVERWRITE
on the running PySpark with a Hadoop catalog?

usage: python route1_iceberg_on_spark.py JAR [ext|noext] [SparkCatalog|SparkSessionCatalog]
Prints one line per step: OK/FAIL <step> <seconds> <first error line>.
"""
import shutil, sys, time, traceback, tempfile, json
import pyspark
from pyspark.sql import SparkSession

jar = sys.argv[1]
ext = (sys.argv[2] if len(sys.argv) > 2 else "ext") == "ext"
cat_cls = sys.argv[3] if len(sys.argv) > 3 else "SparkCatalog"
wh = tempfile.mkdtemp(prefix="r1wh-", dir="/tmp/hw19-research/tmp")
b = (SparkSession.builder.master("local[2]").appName("route1")
     .config("spark.jars", jar)
     .config("spark.ui.enabled", "false")
     .config("spark.sql.shuffle.partitions", "2"))
if ext:
    b = b.config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
if cat_cls == "SparkCatalog":
    cat = "ice"
    b = (b.config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
          .config("spark.sql.catalog.ice.type", "hadoop")
          .config("spark.sql.catalog.ice.warehouse", wh))
else:  # session catalog wrapper
    cat = "spark_catalog"
    b = (b.config("spark.sql.catalog.spark_catalog", "org.apache.iceberg.spark.SparkSessionCatalog")
          .config("spark.sql.catalog.spark_catalog.type", "hadoop")
          .config("spark.sql.catalog.spark_catalog.warehouse", wh))
t0 = time.time()
spark = b.getOrCreate()
print(f"pyspark {pyspark.__version__} jar={jar.rsplit('/',1)[-1]} ext={ext} catalog={cat_cls} start={time.time()-t0:.1f}s", flush=True)
T = f"{cat}.db.t"
steps = [
    ("CREATE NAMESPACE", f"CREATE NAMESPACE IF NOT EXISTS {cat}.db"),
    ("CREATE TABLE", f"CREATE TABLE {T} (id BIGINT, v STRING) USING iceberg"),
    ("INSERT", f"INSERT INTO {T} VALUES (1,'a'),(2,'b')"),
    ("MERGE INTO", f"MERGE INTO {T} t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 3, 'c') s ON t.id = s.id "
                   "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
    ("INSERT OVERWRITE", f"INSERT OVERWRITE {T} VALUES (9,'z')"),
    ("DF V2 append", None),
    ("SELECT", f"SELECT * FROM {T} ORDER BY id"),
    ("SNAPSHOTS", f"SELECT snapshot_id, operation, summary['headwater.marker'] AS marker FROM {T}.snapshots ORDER BY committed_at"),
]
def why(e):
    """Root Java cause (class: message) of a Py4JJavaError, else the Python message."""
    j = getattr(e, "java_exception", None)
    if j is None:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    while j.getCause() is not None and j.getCause() != j:
        j = j.getCause()
    return str(j.toString())[:400]

ok = 0
for name, sql in steps:
    t = time.time()
    try:
        if sql is None:
            spark.createDataFrame([(10, "x")], "id bigint, v string").writeTo(T) \
                .option("snapshot-property.headwater.marker", "m1").append()
            out = ""
        else:
            rows = spark.sql(sql).collect()
            out = json.dumps([r.asDict() for r in rows], default=str)[:300] if name in ("SELECT", "SNAPSHOTS") else ""
        print(f"OK   {name:17s} {time.time()-t:5.1f}s {out}", flush=True); ok += 1
    except Exception as e:
        print(f"FAIL {name:17s} {time.time()-t:5.1f}s {why(e)}", flush=True)
print(f"RESULT {ok}/{len(steps)} steps ok", flush=True)
spark.stop()
