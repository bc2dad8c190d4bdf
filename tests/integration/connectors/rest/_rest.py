"""Helpers of the rest source's integration tests: connection files, tables, state."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.api_server import TOKEN, ApiServer

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
#: The API allows 25 calls per moving second; the connection's budget is the same.
LIMIT, PERIOD_S = 25, 1.0
#: The default margin: a call delayed on its way still counts (it is stamped when answered).
BUDGET = {"calls": LIMIT, "period_seconds": PERIOD_S}
END_1 = "2024-01-12T00:00:00Z"
END_2 = "2024-01-20T00:00:00Z"


def connection(tmp_path: Path, api: ApiServer, example: str, *, end: str,
               token: str = TOKEN, store: bool = True, **source: Any) -> Path:
    """The example connection file, pointed at the loopback API and a temporary lakehouse."""
    document = yaml.safe_load((EXAMPLES / example).read_text())
    config = copy.deepcopy(document["source"]["config"])
    config.update(base_url=api.url, auth={"type": "bearer", "token": token},
                  timeout_seconds=2.0,
                  retries={"max_attempts": 4, "backoff_seconds": 0.05,
                           "max_backoff_seconds": 0.2},
                  rate_limit={"budgets": [BUDGET]})
    config.update(source)
    for stream in config["streams"]:
        if stream.get("cursor_field"):
            stream.update(end_date=end, window_size_seconds=86_400, windows_per_partition=3)
        stream["params"]["per_page"] = 4
    document["source"]["config"] = config
    document["destination"]["config"]["path"] = str(tmp_path / "lake")
    if store:
        document["metadata_store"] = f"sqlite:///{tmp_path / 'meta.db'}"
    document["checkpoint"] = {"partitions_per_checkpoint": 4, "concurrent_checkpoints": 2}
    path = tmp_path / example
    path.write_text(yaml.safe_dump(document))
    return path


def sync(path: Path) -> SyncResult:
    conn = load_connection(path)
    return SyncEngine(conn, MetadataStore(conn.metadata_store or "")).run()


def table_ids(spark: Any, tmp_path: Path, stream: str) -> Counter[int]:
    rows = spark.read.format("delta").load(str(tmp_path / "lake" / stream)).toArrow()
    return Counter(rows.column("id").to_pylist())


def state(path: Path, stream: str) -> Any:
    conn = load_connection(path)
    return MetadataStore(conn.metadata_store or "").get_state(conn.name, stream)


def assert_budget_held(api: ApiServer) -> None:
    assert api.rate_limited == 0, "the API had to refuse calls over its limit"
    assert api.max_calls_in_window() <= LIMIT


def surveys_until(api: ApiServer, end_epoch: int) -> Counter[int]:
    return Counter(i for i, s in api.data.surveys.items() if s["date_modified"] < end_epoch)
