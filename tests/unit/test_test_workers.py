"""The suite's own xdist scheduling (``tests/_workers.py``): the cluster's files are one unit."""

from __future__ import annotations

from tests._workers import SHARED, SharedUnits


def test_the_cluster_files_are_one_unit_and_every_other_file_its_own() -> None:
    scheduler = SharedUnits.__new__(SharedUnits)  # _split_scope reads no state
    cluster = {scheduler._split_scope(f"{path}::test_x") for path in SHARED[
        "the standalone cluster"]}
    assert cluster == {"<the standalone cluster>"}
    assert scheduler._split_scope("tests/integration/test_crash_resume.py::test_a[b]") == (
        "tests/integration/test_crash_resume.py")
