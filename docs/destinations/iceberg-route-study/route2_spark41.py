"""Route 2: PySpark 4.1.x + Delta 4.4.0 (delta-spark_4.1_2.13) + iceberg-spark-runtime-4.1_2.13
in ONE SparkSession (both extensions; spark_catalog = DeltaCatalog; named Iceberg catalogs).

usage: PG_JDBC=jdbc:postgresql://127.0.0.1:PORT/db PG_USER=.. PG_PASSWORD=.. \
       venv41/bin/python scripts/route2_spark41.py [ICEBERG_VERSION] [ext-order: delta-first|iceberg-first]
Prints OK/FAIL per step with timings, then snapshot summaries per table.
"""
import json, os, shutil, sys, time
import pyspark
from pyspark.sql import SparkSession, functions as F

BASE = "/tmp/hw19-research"
ICE = sys.argv[1] if len(sys.argv) > 1 else "1.12.0"
ORDER = sys.argv[2] if len(sys.argv) > 2 else "delta-first"
J = f"{BASE}/jars"
jars = [f"{J}/delta-spark_4.1_2.13-4.4.0.jar", f"{J}/delta-storage-4.4.0.jar",
        f"{J}/iceberg-spark-runtime-4.1_2.13-{ICE}.jar", f"{J}/sqlite-jdbc-3.54.1.0.jar",
        f"{J}/postgresql-42.7.14.jar"]
W = f"{BASE}/tmp/r2-{ICE}-{ORDER}"
shutil.rmtree(W, ignore_errors=True); os.makedirs(W)
DE, IE = "io.delta.sql.DeltaSparkSessionExtension", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
exts = f"{DE},{IE}" if ORDER == "delta-first" else f"{IE},{DE}"
b = (SparkSession.builder.master("local[2]").appName("route2")
     .config("spark.jars", ",".join(jars))
     .config("spark.ui.enabled", "false")
     .config("spark.sql.shuffle.partitions", "2")
     .config("spark.sql.warehouse.dir", f"{W}/spark-warehouse")
     .config("spark.sql.extensions", exts)
     .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
     # Hadoop (path) catalog
     .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
     .config("spark.sql.catalog.ice.type", "hadoop")
     .config("spark.sql.catalog.ice.warehouse", f"{W}/ice-hadoop")
     # JDBC catalog on SQLite
     .config("spark.sql.catalog.icesql", "org.apache.iceberg.spark.SparkCatalog")
     .config("spark.sql.catalog.icesql.catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog")
     .config("spark.sql.catalog.icesql.uri", f"jdbc:sqlite:{W}/iceberg_catalog.db")
     .config("spark.sql.catalog.icesql.jdbc.schema-version", "V1")
     .config("spark.sql.catalog.icesql.warehouse", f"file:{W}/ice-sqlite"))
if os.environ.get("PG_JDBC"):
    b = (b.config("spark.sql.catalog.icepg", "org.apache.iceberg.spark.SparkCatalog")
          .config("spark.sql.catalog.icepg.type", "jdbc")   # shorthand for catalog-impl JdbcCatalog
          .config("spark.sql.catalog.icepg.uri", os.environ["PG_JDBC"])
          .config("spark.sql.catalog.icepg.jdbc.user", os.environ["PG_USER"])
          .config("spark.sql.catalog.icepg.jdbc.password", os.environ["PG_PASSWORD"])
          .config("spark.sql.catalog.icepg.jdbc.schema-version", "V1")
          .config("spark.sql.catalog.icepg.warehouse", f"file:{W}/ice-pg"))
if os.environ.get("REST_URI"):
    b = (b.config("spark.sql.catalog.icerest", "org.apache.iceberg.spark.SparkCatalog")
          .config("spark.sql.catalog.icerest.type", "rest")
          .config("spark.sql.catalog.icerest.uri", os.environ["REST_URI"]))
    if os.environ.get("REST_WAREHOUSE"):
        b = b.config("spark.sql.catalog.icerest.warehouse", os.environ["REST_WAREHOUSE"])
t0 = time.time()
spark = b.getOrCreate()
print(f"pyspark {pyspark.__version__} iceberg {ICE} ext-order={ORDER} session start {time.time()-t0:.1f}s", flush=True)

def why(e):
    j = getattr(e, "java_exception", None)
    if j is None:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    while j.getCause() is not None and j.getCause() != j:
        j = j.getCause()
    return str(j.toString())[:400]

results = []
def step(name, fn):
    t = time.time()
    try:
        out = fn()
        dt = time.time() - t
        print(f"OK   {name:48s} {dt:6.2f}s {'' if out is None else str(out)[:250 if 'snapshots' not in name else 2000]}", flush=True)
        results.append((name, "OK", round(dt, 2)))
    except Exception as e:
        dt = time.time() - t
        print(f"FAIL {name:48s} {dt:6.2f}s {why(e)}", flush=True)
        results.append((name, "FAIL", round(dt, 2)))

def sql(s):
    return lambda: [r.asDict() for r in spark.sql(s).collect()] or None

def rows(n, start=0, extra=False):
    df = spark.range(start, start + n).select(F.col("id"), F.concat(F.lit("v"), F.col("id").cast("string")).alias("v"))
    return df.withColumn("extra", F.lit("new")) if extra else df

# ---- Delta in the same session ----
step("delta: saveAsTable", lambda: rows(100).write.format("delta").saveAsTable("default.d"))
step("delta: MERGE INTO", sql("MERGE INTO default.d t USING (SELECT id, 'upd' AS v FROM range(50,150)) s ON t.id=s.id "
                              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"))
step("delta: count (expect 150)", lambda: spark.table("default.d").count())
step("delta: userMetadata via commitInfo", lambda: (rows(1, 1000).write.format("delta").mode("append")
      .option("userMetadata", "hw-marker").saveAsTable("default.d"),
      spark.sql("DESCRIBE HISTORY default.d").select("version", "operation", "userMetadata").collect()[0])[1])

MERGE = ("MERGE INTO {t} t USING (SELECT id, concat('m', id) AS v FROM range({a},{b})) s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
catalogs = ["ice", "icesql"] + (["icepg"] if os.environ.get("PG_JDBC") else []) + (["icerest"] if os.environ.get("REST_URI") else [])
jvm = spark._jvm
for c in catalogs:
    T = f"{c}.hw.t"
    step(f"{c}: CREATE NAMESPACE", sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.hw"))
    spark.sql(f"DROP TABLE IF EXISTS {T} PURGE")
    step(f"{c}: DF v2 create + snapshot-property", lambda: rows(10).writeTo(T).using("iceberg")
         .tableProperty("format-version", "2").option("snapshot-property.headwater.marker", "c1-create").create())
    step(f"{c}: DF v2 append + snapshot-property", lambda: rows(10, 10).writeTo(T)
         .option("snapshot-property.headwater.marker", "c2-append").option("snapshot-property.headwater.stream", "s").append())
    def merge_conf():
        spark.conf.set("spark.sql.iceberg.snapshot-property.headwater.marker", "c3-merge-sessionconf")
        try:
            spark.sql(MERGE.format(t=T, a=15, b=25)).collect()
        finally:
            spark.conf.unset("spark.sql.iceberg.snapshot-property.headwater.marker")
    step(f"{c}: SQL MERGE + session conf property", merge_conf)
    def merge_commitmetadata():
        from pyspark.java_gateway import ensure_callback_server_started
        ensure_callback_server_started(spark.sparkContext._gateway)
        class Call:
            def call(self):
                spark.sql(MERGE.format(t=T, a=20, b=30)).collect(); return None
            class Java:
                implements = ["java.util.concurrent.Callable"]
        props = jvm.java.util.HashMap(); props.put("headwater.marker", "c4-merge-CommitMetadata")
        jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
            props, Call(), jvm.java.lang.Class.forName("java.lang.RuntimeException"))
    step(f"{c}: SQL MERGE + CommitMetadata (py4j callback)", merge_commitmetadata)
    step(f"{c}: DF v2 overwrite(true) + snapshot-property", lambda: rows(5, 100).writeTo(T)
         .option("snapshot-property.headwater.marker", "c5-overwrite").overwrite(F.lit(True)))
    def insov():
        spark.conf.set("spark.sql.iceberg.snapshot-property.headwater.marker", "c6-insert-overwrite")
        try:
            rows(3, 200).createOrReplaceTempView("src")
            spark.sql(f"INSERT OVERWRITE {T} SELECT * FROM src").collect()
        finally:
            spark.conf.unset("spark.sql.iceberg.snapshot-property.headwater.marker")
    step(f"{c}: SQL INSERT OVERWRITE + session conf", insov)
    # NB: table property write.spark.accept-any-schema=true (needed for DataFrame merge-schema appends)
    # breaks every later MERGE on the table (scripts/route2_merge_after_evolution.py), so evolve with ALTER.
    step(f"{c}: schema evolution: ALTER ADD COLUMN + append", lambda: (
        spark.sql(f"ALTER TABLE {T} ADD COLUMN extra STRING"),
        rows(2, 300, extra=True).writeTo(T).option("snapshot-property.headwater.marker", "c7-evolve").append(),
        spark.table(T).columns)[2])
    step(f"{c}: MERGE WITH SCHEMA EVOLUTION (new col)", lambda: (
        spark.conf.set("spark.sql.iceberg.snapshot-property.headwater.marker", "c8-merge-evolve"),
        spark.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {T} t USING (SELECT 300L AS id, 'x' AS v, 'n' AS extra, 'z' AS extra3) s "
                  "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect(),
        spark.conf.unset("spark.sql.iceberg.snapshot-property.headwater.marker"),
        spark.table(T).columns)[3])
    spark.conf.unset("spark.sql.iceberg.snapshot-property.headwater.marker")
    step(f"{c}: rows", lambda: sorted(r.id for r in spark.table(T).collect()))
    step(f"{c}: snapshots", lambda: [
        (r.operation, r.marker, r.stream) for r in spark.sql(
            f"SELECT operation, summary['headwater.marker'] AS marker, summary['headwater.stream'] AS stream "
            f"FROM {T}.snapshots ORDER BY committed_at").collect()])

print("SUMMARY", json.dumps({"ok": sum(r[1] == "OK" for r in results), "total": len(results)}))
spark.stop()
