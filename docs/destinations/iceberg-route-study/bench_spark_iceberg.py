"""Time Spark 4.1 + Iceberg 1.12.0 writer: append 1M x 10 (a) from a JVM-cached DataFrame, (b) from the same
Arrow table as PyIceberg (incl. Arrow->Spark transfer); 3 runs each; MERGE of 100k rows into 1M. Hadoop catalog, local[2]."""
import os, shutil, sys, time, glob
sys.path.insert(0, os.path.dirname(__file__))
from bench_data import make
from pyspark.sql import SparkSession
J = "/tmp/hw19-research/jars"; W = "/tmp/hw19-research/tmp/bench-spark"; shutil.rmtree(W, ignore_errors=True)
t0 = time.time()
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "4g").config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.jars", f"{J}/iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "hadoop").config("spark.sql.catalog.ice.warehouse", W).getOrCreate())
print(f"session start {time.time()-t0:.1f}s")
data = make()
jdf = spark.createDataFrame(data).repartition(2).cache(); jdf.count()
def files(name):
    f = glob.glob(f"{W}/b/{name}/data/*.parquet"); return f"files={len(f)} size={sum(map(os.path.getsize, f))/1e6:.1f} MB"
for i in range(3):
    jdf.limit(0).writeTo(f"ice.b.j{i}").create()
    t0 = time.time(); jdf.writeTo(f"ice.b.j{i}").option("snapshot-property.headwater.marker", "r").append()
    print(f"(a) run {i}: append 1M x 10 from cached DF: {time.time()-t0:.2f}s {files(f'j{i}')}")
for i in range(3):
    jdf.limit(0).writeTo(f"ice.b.p{i}").create()
    t0 = time.time(); spark.createDataFrame(data).writeTo(f"ice.b.p{i}").option("snapshot-property.headwater.marker", "r").append()
    print(f"(b) run {i}: append 1M x 10 from Arrow table: {time.time()-t0:.2f}s {files(f'p{i}')}")
t0 = time.time(); n = spark.table("ice.b.j0").count(); print(f"count back: {time.time()-t0:.2f}s rows={n}")
spark.createDataFrame(make(100_000, start=950_000, seed=2)).createOrReplaceTempView("up")
spark.conf.set("spark.sql.iceberg.snapshot-property.headwater.marker", "m")
t0 = time.time()
spark.sql("MERGE INTO ice.b.j0 t USING up s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect()
print(f"MERGE 100k into 1M (copy-on-write default): {time.time()-t0:.2f}s rows after={spark.table('ice.b.j0').count()}")
spark.sql("ALTER TABLE ice.b.j1 SET TBLPROPERTIES ('write.merge.mode'='merge-on-read')")
t0 = time.time()
spark.sql("MERGE INTO ice.b.j1 t USING up s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect()
print(f"MERGE 100k into 1M (merge-on-read): {time.time()-t0:.2f}s rows after={spark.table('ice.b.j1').count()}")
spark.stop()
