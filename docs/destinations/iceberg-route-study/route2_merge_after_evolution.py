"""Does MERGE work on an Iceberg table whose schema grew? usage: ICE_VERSION CACHE(true|false) [SPARK_CATALOG_NAME]
Fresh table; ALTER TABLE ADD COLUMN; MERGE; then a NEW session on the same table; MERGE again."""
import shutil, sys
from pyspark.sql import SparkSession
ver, cache = sys.argv[1], sys.argv[2]
J = "/tmp/hw19-research/jars"; W = f"/tmp/hw19-research/tmp/r2e-{ver}-{cache}"; shutil.rmtree(W, ignore_errors=True)
def session():
    return (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.jars", f"{J}/iceberg-spark-runtime-4.1_2.13-{ver}.jar")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.cache-enabled", cache)
         .config("spark.sql.catalog.ice.type", "hadoop").config("spark.sql.catalog.ice.warehouse", W).getOrCreate())
M = "MERGE INTO ice.db.t t USING (SELECT {i}L AS id, 'x' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
def run(spark, name, q):
    try:
        spark.sql(q).collect(); print("OK  ", name)
    except Exception as e:
        print("FAIL", name, str(e).splitlines()[0][:160])
spark = session()
spark.sql("CREATE TABLE ice.db.t (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
run(spark, "MERGE before any schema change", M.format(i=1))
spark.sql("ALTER TABLE ice.db.t ADD COLUMN extra STRING")
run(spark, "MERGE after ALTER ADD COLUMN (same session)", M.format(i=2))
run(spark, "INSERT after ALTER", "INSERT INTO ice.db.t VALUES (3, 'c', 'e')")
run(spark, "DELETE after ALTER", "DELETE FROM ice.db.t WHERE id = 3")
run(spark, "UPDATE after ALTER", "UPDATE ice.db.t SET v = 'u' WHERE id = 1")
spark.sql("ALTER TABLE ice.db.t SET TBLPROPERTIES ('write.spark.accept-any-schema'='true')")
run(spark, "MERGE with accept-any-schema=true", M.format(i=5))
run(spark, "MERGE WITH SCHEMA EVOLUTION, accept-any-schema=true", M.replace("MERGE INTO", "MERGE WITH SCHEMA EVOLUTION INTO").format(i=5))
spark.sql("ALTER TABLE ice.db.t UNSET TBLPROPERTIES ('write.spark.accept-any-schema')")
run(spark, "MERGE after UNSET accept-any-schema", M.format(i=6))
run(spark, "MERGE WITH SCHEMA EVOLUTION new col, no accept-any-schema",
    "MERGE WITH SCHEMA EVOLUTION INTO ice.db.t t USING (SELECT 7L AS id, 'x' AS v, 'e' AS extra, 9 AS extra9) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
print(spark.table("ice.db.t").columns)
run(spark, "merge-schema append w/o accept-any-schema", "SELECT 1")
try:
    spark.createDataFrame([(8, "y", "e", 1, "n")], "id bigint, v string, extra string, extra9 int, extra10 string").writeTo("ice.db.t").option("merge-schema", "true").append(); print("OK   DF append merge-schema=true without accept-any-schema")
except Exception as e:
    print("FAIL DF append merge-schema=true without accept-any-schema", str(e).splitlines()[0][:160])
spark.stop()
spark = session()
run(spark, "MERGE after ALTER (new session)", M.format(i=4))
print(sorted((r.id, r.v) for r in spark.table("ice.db.t").collect()))
spark.stop()
