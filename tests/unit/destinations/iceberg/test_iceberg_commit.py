"""A snapshot commit that loses a race is refused, never re-applied behind the marker lookup."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from headwater.destinations.iceberg import _commit

SCHEMA = pa.schema([pa.field("id", pa.int64())])


def test_a_commit_on_a_stale_table_is_refused_and_lands_nothing(tmp_path: Path) -> None:
    """PyIceberg would reload and re-apply it (commit.retry.num-retries, default 4): the
    caller's loop must see the refusal, look for its marker, and only then try again."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table import TableProperties

    catalog = load_catalog("t", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                           warehouse=f"file://{tmp_path}")
    catalog.create_namespace("ns")
    catalog.create_table("ns.t", schema=SCHEMA)
    winner, stale = catalog.load_table("ns.t"), catalog.load_table("ns.t")
    _commit.commit(winner, [], overwrite=False, summary={"who": "winner"}, properties={})
    with pytest.raises(CommitFailedException):
        _commit.commit(stale, [], overwrite=False, summary={"who": "loser"},
                       properties={"x": "1"})
    table = catalog.load_table("ns.t")
    assert [s.summary.additional_properties["who"] for s in table.snapshots()
            if s.summary is not None] == ["winner"]
    # The table's own properties are untouched (other engines' writers read them).
    assert TableProperties.COMMIT_NUM_RETRIES not in table.properties
    assert "x" not in table.properties
