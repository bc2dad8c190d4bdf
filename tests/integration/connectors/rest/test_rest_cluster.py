"""A call budget shared through Redis holds for a sync on two executors of a real cluster.

``headwater sync --master spark://...`` runs in its own process; the standalone
worker launches two executors (one core each), whose Python workers read the
surveys' windows, the parent keys for the substream's plan, and the responses,
all against one budget kept in a real redis-server.  The API counts every call.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.api_server import ApiData, ApiServer, running
from tests.integration._cli import sync as cli_sync
from tests.integration._cluster import StandaloneCluster
from tests.integration.connectors.rest._rest import END_2, connection, surveys_until, table_ids
from tests.redis_server import redis_server

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

#: The whole sync's budget (and the API's own limit): 8 calls per moving second.
CALLS, PERIOD_S = 8, 1.0


def test_redis_budget_holds_across_two_executors(spark: Any, tmp_path: Path,
                                                 cluster: StandaloneCluster) -> None:
    with running(ApiData.sample(surveys=24), limit=CALLS, period_s=PERIOD_S) as api, \
            redis_server(tmp_path) as redis_url:
        path = connection(tmp_path, api, "surveys.yaml", end=END_2,
                          rate_limit={"budgets": [{"calls": CALLS, "period_seconds": PERIOD_S}],
                                      "redis_url": redis_url})
        result = cli_sync(tmp_path, path, "--master", cluster.master_url,
                          "--conf", "spark.executor.cores=1", "--conf", "spark.cores.max=2",
                          env={"SPARK_LOCAL_IP": "127.0.0.1"})
        assert result.exit_code == 0, result.describe()
        assert_budget_held(api)
        assert redis_url not in result.stdout  # a secret of the spec
        end_2 = 1_704_067_200 + 19 * 86_400
        assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, end_2)
        responses = Counter(r["id"] for rows in api.data.responses.values() for r in rows)
        assert table_ids(spark, tmp_path, "survey_responses") == responses
    # Two executors of the application did the reading.
    executors = cluster.executor_dirs(f"headwater-{yaml.safe_load(path.read_text())['name']}")
    assert len(executors) >= 2, executors


def assert_budget_held(api: ApiServer) -> None:
    assert api.rate_limited == 0, "the API refused calls over its limit"
    assert api.max_calls_in_window(PERIOD_S) <= CALLS
    assert len(api.calls) > 3 * CALLS  # long enough for the budget to matter
