"""A connection's ``spark.master`` and ``spark.conf`` that the process's running Spark
session does not hold are refused where that session serves every connection (``serve``,
the web page) and warned of elsewhere; they were taken silently, the sync running with
another connection's shuffle partitions, S3 endpoint or keys.

In process, on the suite's shared session: nothing here starts a JVM.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from headwater.config import ConnectionConfig
from headwater.engine import SparkSettings, get_spark
from headwater.errors import ConfigError
from headwater.metadata_store import MetadataStore
from headwater.operations import run_sync

pytestmark = pytest.mark.spark

SECRET = "not-the-session-s-secret"


def _other_shuffle(spark: Any) -> str:
    return str(int(spark.conf.get("spark.sql.shuffle.partitions")) + 3)


def test_settings_the_session_lacks_are_refused_by_name_never_by_value(spark: Any) -> None:
    settings = SparkSettings(
        master="spark://elsewhere:7077", app_name="headwater-elsewhere",
        conf={"spark.sql.shuffle.partitions": _other_shuffle(spark),
              "spark.hadoop.fs.s3a.secret.key": SECRET,
              "spark.sql.session.timeZone": spark.conf.get("spark.sql.session.timeZone")},
        refuse_unapplied=True)
    with pytest.raises(ConfigError) as info:
        get_spark(settings)
    assert info.value.context["field"] == "spark.master"
    assert ("does not have spark.master, spark.conf.spark.sql.shuffle.partitions, "
            "spark.conf.spark.hadoop.fs.s3a.secret.key as the settings say") \
        in info.value.message
    assert "timeZone" not in info.value.message  # the session's own value: it acts
    assert SECRET not in info.value.message


def test_settings_the_session_holds_pass(spark: Any) -> None:
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    key = f"fs.s3a.bucket.b{uuid.uuid4().hex[:8]}.endpoint"
    hadoop.set(key, "http://127.0.0.1:9")  # as a test (or a notebook) sets S3A's settings
    try:
        settings = SparkSettings(
            master=spark.sparkContext.master, refuse_unapplied=True,
            conf={"spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                  f"spark.hadoop.{key}": "http://127.0.0.1:9"})
        assert get_spark(settings) is spark
    finally:
        hadoop.unset(key)


def test_elsewhere_they_are_warned_of_once(spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    # Not "headwater-...": an earlier test of this process may have registered the test
    # server's password "headwater" as a secret, and the warning's name comes out masked.
    name = f"hw-warned-{uuid.uuid4().hex[:8]}"
    settings = SparkSettings(app_name=name, conf={"spark.sql.shuffle.partitions":
                                                  _other_shuffle(spark)})
    # A handler on the logger itself: an earlier in-process command may have stopped
    # ``headwater`` loggers propagating to the root, where caplog listens.
    seen: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = seen.append  # type: ignore[method-assign]
    logger = logging.getLogger("headwater.engine._spark")
    logger.addHandler(handler)
    try:
        with caplog.at_level(logging.WARNING, logger="headwater.engine._spark"):
            assert get_spark(settings) is spark
            assert get_spark(settings) is spark  # a sync asks twice: one warning
    finally:
        logger.removeHandler(handler)
    warned = [r.getMessage() for r in seen if name in r.getMessage()]
    assert len(warned) == 1
    assert "does not have spark.conf.spark.sql.shuffle.partitions" in warned[0]
    assert warned[0].endswith("they are not applied")


def test_serve_s_and_the_page_s_sync_refuses_before_it_records_a_run(
        spark: Any, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'meta.db'}"
    config = ConnectionConfig.model_validate({
        "name": "tuned", "source": {"type": "sample", "config": {"users": 20}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "spark": {"conf": {"spark.sql.shuffle.partitions": _other_shuffle(spark)}},
        "metadata_store": store})
    with pytest.raises(ConfigError) as info:
        run_sync(config)
    assert info.value.context["field"] == "spark.conf.spark.sql.shuffle.partitions"
    assert MetadataStore(store).list_run_summaries("tuned", limit=1) == []
