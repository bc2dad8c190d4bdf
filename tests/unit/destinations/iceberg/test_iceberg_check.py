"""``IcebergDestination.check`` on an embedded SQLite catalog: no Spark, no server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.destinations import build_destination
from headwater.errors import DestinationError


def test_a_sqlite_catalog_in_a_folder_passes_and_keeps_no_table(tmp_path: Path) -> None:
    destination = build_destination("iceberg", {"warehouse": str(tmp_path / "warehouse")})
    assert destination.check_skipped() is None
    destination.check()
    assert destination.catalog().list_tables("headwater") == []  # type: ignore[attr-defined]


def test_a_catalog_in_a_folder_that_cannot_be_created_fails(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    uri = f"sqlite:///{tmp_path}/file/catalogs/catalog.db"
    destination = build_destination("iceberg", {
        "warehouse": str(tmp_path / "warehouse"), "catalog": {"type": "sql", "uri": uri}})
    with pytest.raises(DestinationError, match=r"Iceberg sql catalog at sqlite:.* is not usable"):
        destination.check()



def test_a_hadoop_catalog_in_a_folder_passes_and_keeps_no_table(tmp_path: Path) -> None:
    destination = build_destination("iceberg", {"warehouse": str(tmp_path / "lake"),
                                                "catalog": {"type": "hadoop"}})
    destination.check()
    assert destination.catalog().list_tables("headwater") == []  # type: ignore[attr-defined]
    assert os.listdir(tmp_path / "lake" / "headwater") == []


def test_a_hadoop_catalog_that_cannot_make_its_folder_names_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    destination = build_destination("iceberg", {"warehouse": str(tmp_path / "file" / "lake"),
                                                "catalog": {"type": "hadoop"}})
    with pytest.raises(DestinationError,
                       match=rf"Iceberg hadoop catalog at file://{tmp_path}/file/lake is not"):
        destination.check()
