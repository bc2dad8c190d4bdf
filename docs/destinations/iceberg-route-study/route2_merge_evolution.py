"""Route 2 detail: which MERGE forms work on an Iceberg table whose schema grew (Spark 4.1.4, Iceberg 1.12.0)."""
import shutil, time
from pyspark.sql import SparkSession
J = "/tmp/hw19-research/jars"; W = "/tmp/hw19-research/tmp/r2m"; shutil.rmtree(W, ignore_errors=True)
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.jars", f"{J}/iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "hadoop").config("spark.sql.catalog.ice.warehouse", W).getOrCreate())
def run(name, q):
    try:
        spark.sql(q).collect(); print("OK  ", name, spark.table("ice.db.t").columns)
    except Exception as e:
        print("FAIL", name, str(e).splitlines()[0][:250])
spark.sql("CREATE TABLE ice.db.t (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
spark.sql("INSERT INTO ice.db.t VALUES (1,'a'),(2,'b')")
run("MERGE same columns", "MERGE INTO ice.db.t t USING (SELECT 2L AS id, 'B' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
run("MERGE WITH SCHEMA EVOLUTION, source has new col (no table prop)", "MERGE WITH SCHEMA EVOLUTION INTO ice.db.t t USING (SELECT 3L AS id, 'c' AS v, 'n' AS extra) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
spark.sql("ALTER TABLE ice.db.t SET TBLPROPERTIES ('write.spark.accept-any-schema'='true')")
run("MERGE WITH SCHEMA EVOLUTION, source has new col (accept-any-schema)", "MERGE WITH SCHEMA EVOLUTION INTO ice.db.t t USING (SELECT 4L AS id, 'd' AS v, 'n' AS extra) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
spark.sql("ALTER TABLE ice.db.t ADD COLUMN extra2 INT")
run("MERGE explicit cols, target wider than source", "MERGE INTO ice.db.t t USING (SELECT 5L AS id, 'e' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)")
run("MERGE SET * , target wider than source", "MERGE INTO ice.db.t t USING (SELECT 6L AS id, 'f' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
run("MERGE SET *, source = ALTERed target schema", "MERGE INTO ice.db.t t USING (SELECT 7L AS id, 'g' AS v, CAST(NULL AS STRING) AS extra, 1 AS extra2) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
print(sorted(r.id for r in spark.table("ice.db.t").collect()))
spark.stop()
