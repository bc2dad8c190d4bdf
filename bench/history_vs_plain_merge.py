"""History mode's second sync against a plain Spark SCD2 MERGE doing the same update (issue 38).

Both sides run in one Spark session, in this process, on the same data (the
``sample`` source's ``users``: N keys, then a generation updating 10 % of them):

* **Headwater**: a ``history`` stream (cursor ``updated_at``, key ``id``) synced at
  generation 0 (not timed), then at generation 1: the timed ``SyncEngine.run()``
  plans the incremental window, reads the changed rows, and closes and opens their
  versions in one commit per checkpoint (Headwater's own, with deletion vectors, on the
  table it creates; ``--writer spark``: Spark's MERGE), with state, markers and metadata.
* **plain Spark**: the same initial versions written as a Delta table with
  ``valid_from``/``valid_to``/``is_current`` (not timed), then, timed, the changed
  rows read by the stream's own ``read(partition)`` for the same window
  (``mapInArrow``) and Databricks' documented SCD2 pattern: one ``MERGE`` whose
  source is the updates keyed for closing plus the updates joined to their current
  versions with a null key, for inserting.  No metadata columns, no state, one commit.

The ratio is plain seconds / Headwater seconds (aim >= 1.0).  Each side is checked
afterwards: N + 10 % rows, N current, none current twice.

The sample source makes its events one per second of a generation's simulated days, so the
generation spans as many days as 10 % of N needs (``days_per_generation``): the issue's
1,000,000 keys is ``--keys 1000000``.

Run: ``.venv/bin/python bench/history_vs_plain_merge.py [--keys 200000] [--rounds 1]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from _common import header, load_line, median, scratch_dir, table, timed_headwater_sync

from headwater.connectors.sample import SampleSource
from headwater.engine import SparkSettings, get_spark
from headwater.metadata_store import MetadataStore

STREAM = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "history",
          "cursor_field": "updated_at", "primary_key": ["id"]}


def source(keys: int, generation: int, per_partition: int) -> dict[str, Any]:
    return {"seed": 5, "users": keys, "orders": 0, "rows_per_partition": per_partition,
            "updates_per_generation": keys // 10, "new_per_generation": 0,
            "generation": generation, "days_per_generation": keys // 10 // 86_400 + 1}


def connection(folder: Path, keys: int, generation: int, per_partition: int,
               properties: dict[str, str], writer: str) -> Path:
    path = folder / "history.yaml"
    stream = {**STREAM, **({"table_properties": properties} if properties else {})}
    path.write_text(yaml.safe_dump({
        "name": "bench-history", "source": {"type": "sample",
                                            "config": source(keys, generation, per_partition)},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake"),
                                                    "writer": writer}},
        "streams": [stream], "metadata_store": f"sqlite:///{folder / 'meta.db'}"}))
    return path


def headwater(folder: Path, keys: int, per_partition: int,
              properties: dict[str, str], writer: str) -> tuple[float, Any]:
    """Seconds of the second sync, and the state the first left (the window the second read)."""
    first, result = timed_headwater_sync(connection(folder, keys, 0, per_partition, properties,
                                                    writer))
    print(f"Headwater's first sync (into the empty table): {first:.1f} s, by step:",
          result.to_dict().get("steps_s"), flush=True)
    state = MetadataStore(f"sqlite:///{folder / 'meta.db'}").get_state("bench-history", "users")
    assert state is not None
    seconds, result = timed_headwater_sync(
        connection(folder, keys, 1, per_partition, properties, writer))
    assert result.streams[0].records_written == keys // 10, result.to_dict()
    print("Headwater's second sync, seconds by step:", result.to_dict().get("steps_s"),
          flush=True)
    return seconds, state


def plain(spark: Any, folder: Path, keys: int, per_partition: int, state: Any) -> float:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.table_schema import arrow_schema_for

    target = str(folder / "plain")
    initial = SampleSource(source(keys, 0, per_partition)).stream("users")
    frame_of(spark, initial, None).select(
        "*", F.col("updated_at").alias("valid_from"),
        F.lit(None).cast("timestamp").alias("valid_to"), F.lit(True).alias("is_current"),
    ).write.format("delta").save(target)
    later = SampleSource(source(keys, 1, per_partition)).stream("users")
    schema = from_arrow_schema(arrow_schema_for(later.json_schema()))
    columns = list(schema.names)
    began = time.perf_counter()
    updates = frame_of(spark, later, state)
    updates.createOrReplaceTempView("updates")
    names = ", ".join(f"`{c}`" for c in columns)
    values = ", ".join(f"s.`{c}`" for c in columns)
    spark.sql(f"""
        MERGE INTO delta.`{target}` AS t USING (
            SELECT u.id AS merge_key, u.* FROM updates u
            UNION ALL
            SELECT NULL AS merge_key, u.* FROM updates u
            JOIN delta.`{target}` c ON u.id = c.id AND c.is_current
        ) AS s ON t.id = s.merge_key
        WHEN MATCHED AND t.is_current THEN
            UPDATE SET is_current = false, valid_to = s.updated_at
        WHEN NOT MATCHED THEN
            INSERT ({names}, valid_from, valid_to, is_current)
            VALUES ({values}, s.updated_at, NULL, true)""")
    seconds = time.perf_counter() - began
    check(spark.read.format("delta").load(target), keys, "is_current")
    return seconds


def frame_of(spark: Any, stream: Any, state: Any) -> Any:
    """The stream's rows for the window after ``state`` (None: all), read by its own
    ``read(partition)`` under ``mapInArrow``, one Spark partition per stream partition."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.table_schema import arrow_schema_for

    partitions = stream.partitions(state)

    def read(positions: Iterator[Any]) -> Iterator[Any]:
        for batch in positions:
            for position in batch.column(0).to_pylist():
                yield from stream.read(partitions[position])

    count = len(partitions)
    return spark.range(count, numPartitions=count).mapInArrow(
        read, from_arrow_schema(arrow_schema_for(stream.json_schema())))


def check(frame: Any, keys: int, current: str) -> None:
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)), F.sum(F.col(current).cast("int")),
                    F.countDistinct(F.when(F.col(current), F.col("id")))).first()
    assert tuple(row) == (keys + keys // 10, keys, keys), tuple(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--rows-per-partition", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-deletion-vectors", action="store_true",
                        help="create Headwater's table without them (its table_properties)")
    parser.add_argument("--writer", default="auto", choices=["auto", "spark"],
                        help="the Delta destination's writer (spark: every commit a MERGE)")
    args = parser.parse_args()
    properties = ({"delta.enableDeletionVectors": "false"} if args.no_deletion_vectors
                  else {})
    header("History mode's second sync vs a plain Spark SCD2 MERGE",
           ["bench/history_vs_plain_merge.py", f"--keys {args.keys}",
            f"--rows-per-partition {args.rows_per_partition}", f"--rounds {args.rounds}",
            *(["--no-deletion-vectors"] if args.no_deletion_vectors else []),
            f"--writer {args.writer}"])
    spark = get_spark(SparkSettings(master="local[*]"))
    ours, theirs = [], []
    for _ in range(args.rounds):
        with scratch_dir("hw-history-") as folder:
            print(load_line(), flush=True)
            seconds, state = headwater(folder, args.keys, args.rows_per_partition, properties,
                                       args.writer)
            ours.append(seconds)
            check(spark.read.format("delta").load(str(folder / "lake" / "users")), args.keys,
                  "_hw_is_current")
            print(load_line(), flush=True)
            theirs.append(plain(spark, folder, args.keys, args.rows_per_partition, state))
    print(table(["path", "seconds", "runs"], [
        ["plain Spark SCD2 MERGE (read the changes + one MERGE)", f"{median(theirs):.1f}",
         ", ".join(f"{s:.1f}" for s in theirs)],
        ["Headwater history, second sync (whole SyncEngine.run)", f"{median(ours):.1f}",
         ", ".join(f"{s:.1f}" for s in ours)]]))
    print(f"\nplain / Headwater: {median(theirs) / median(ours):.2f} (aim >= 1.0)")
    print(load_line())


if __name__ == "__main__":
    main()
